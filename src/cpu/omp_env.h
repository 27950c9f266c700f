/* omp_env.h — the OpenMP settings fusecal owns.
 *
 * fusecal runs --threads OpenMP threads, pins thread i to the i-th CPU it may use
 * (device_cpu.c), and measures in worker processes while the parent waits. libgomp
 * reads its environment once, as the program loads, before main, so a user's OpenMP
 * placement and waiting settings would stand beside fusecal's own:
 *   OMP_PROC_BIND, OMP_PLACES, GOMP_CPU_AFFINITY  bind the first thread to one CPU as
 *       libgomp loads; the team then ran on that CPU alone while the record said two
 *       threads (the Zen 4 VM, two CPUs, OMP_PROC_BIND=close: conv_bn_relu
 *       1×64×56×56 → 64 fused in 2.04-2.12 ms against 1.06-1.08, one thread seen in
 *       the process);
 *   OMP_WAIT_POLICY, GOMP_SPINCOUNT  keep idle threads spinning: the waiting
 *       parent's threads spun on the CPUs its workers measured on (active: 3.02-3.04
 *       ms, the samples spread over 1.0-3.1);
 *   OMP_THREAD_LIMIT, OMP_DYNAMIC  may give a team fewer threads than --threads.
 * So at the start of main these are removed and the program runs again, once, with
 * a line on stderr; the host inventory names them (omp_env_dropped). */
#ifndef FC_OMP_ENV_H
#define FC_OMP_ENV_H

#include <stddef.h>

/* At the start of main: when any of them is set, say so on stderr, remove them, set
 * FUSECAL_OMP_ENV_DROPPED to "NAME=value ..." and exec this program again with argv;
 * when the exec fails, put them back (the run goes on with them, as libgomp already
 * read them) and say so. Returns when none is set. */
void fc_omp_env_check(char **argv);

/* "NAME=value ..." of the variables removed before this process ran, else NULL. */
const char *fc_omp_env_dropped(void);

#endif
