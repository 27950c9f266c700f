/* main.c — the fusecal program (the commands are in the cli library). */
#include "cmd.h"
#include "omp_env.h"
#include "openblas_core.h"

int main(int argc, char **argv)
{
    fc_omp_env_check(argv);       /* may exec this program again, without OpenMP placement settings */
    fc_openblas_core_check(argv); /* may exec this program again, OpenBLAS on the right kernels */
    return fc_main(argc, argv);
}
