/* main.c — the fusecal program (the commands are in the cli library). */
#include "cmd.h"

int main(int argc, char **argv) { return fc_main(argc, argv); }
