/* signals.c — see signals.h. */
#include "signals.h"
#include "util.h"

#include <string.h>
#include <unistd.h>

volatile sig_atomic_t fc_interrupted;
static char temp_path[4300];
static volatile sig_atomic_t temp_set;

void fc_signals_tempfile(const char *path)
{
    temp_set = 0;
    if (path) {
        fc_strlcpy(temp_path, path, sizeof temp_path);
        temp_set = 1;
    }
}

static void on_signal(int sig)
{
    (void)sig;
    if (fc_interrupted) {
        if (temp_set) unlink(temp_path);
        static const char msg[] = "\nfusecal: interrupted again: exiting now\n";
        ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)w;
        _exit(130);
    }
    fc_interrupted = 1;
    static const char msg[] =
        "\nfusecal: interrupted: finishing the current sample and saving what was measured "
        "(interrupt again to exit now)\n";
    ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)w;
}

void fc_signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a closed terminal, the same, unless the run was started to outlive it (nohup) */
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN) sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}
