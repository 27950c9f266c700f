/* rounds_wire.c — see rounds_wire.h. */
#include "rounds_wire.h"
#include "signals.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

bool fc_wire_put(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }

bool fc_wire_get(FILE *f, void *p, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t k = fread((char *)p + got, 1, n - got, f);
        got += k;
        if (got < n) {
            if (ferror(f) && errno == EINTR && !fc_interrupted) {
                clearerr(f);
                continue;
            }
            return false;
        }
    }
    return true;
}

bool fc_wire_put_samples(FILE *f, const fc_samples *smp, int nvar)
{
    for (int v = 0; v < nvar; v++) {
        wire_samples ws = {smp[v].n, smp[v].batch, smp[v].sampled_s};
        if (!fc_wire_put(f, &ws, sizeof ws) || !fc_wire_put(f, smp[v].ms, (size_t)smp[v].n * sizeof(double)))
            return false;
    }
    return true;
}

bool fc_wire_get_samples(FILE *f, fc_samples *smp, int nvar)
{
    memset(smp, 0, FC_MAX_VARIANTS * sizeof *smp);
    for (int v = 0; v < nvar; v++) {
        wire_samples ws;
        if (!fc_wire_get(f, &ws, sizeof ws) || ws.n < 0 || ws.n > (1 << 26)) return false;
        smp[v].n = smp[v].cap = ws.n;
        smp[v].batch = ws.batch;
        smp[v].sampled_s = ws.sampled_s;
        smp[v].ms = fc_xmalloc((size_t)(ws.n ? ws.n : 1) * sizeof(double));
        if (!fc_wire_get(f, smp[v].ms, (size_t)ws.n * sizeof(double))) return false;
    }
    return true;
}

void fc_wire_cache_open(wire_cache *c)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !tmp[0]) tmp = "/tmp";
    if (snprintf(c->dir, sizeof c->dir, "%s/fusecal-ref-XXXXXX", tmp) >= (int)sizeof c->dir || !mkdtemp(c->dir))
        c->dir[0] = 0;
}

void fc_wire_cache_close(wire_cache *c)
{
    if (!c->dir[0]) return;
    DIR *d = opendir(c->dir);
    if (d) {
        struct dirent *de;
        char path[4096];
        while ((de = readdir(d)) != NULL) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
            if (snprintf(path, sizeof path, "%s/%s", c->dir, de->d_name) < (int)sizeof path) remove(path);
        }
        closedir(d);
    }
    rmdir(c->dir);
    c->dir[0] = 0;
}

typedef struct spawn_call {
    posix_spawn_file_actions_t *fa;
    pid_t pid;
} spawn_call;

static int do_spawn(void *arg)
{
    spawn_call *c = arg;
    char *argv[] = {"fusecal", "__rounds", NULL};
    return posix_spawn(&c->pid, "/proc/self/exe", c->fa, NULL, argv, environ);
}

pid_t fc_wire_spawn_worker(FILE **to, FILE **from, fc_err *e)
{
    int in[2], out[2];
    if (pipe(in) != 0) return (pid_t)fc_errf(e, "cannot start a worker process: pipe: %s", strerror(errno));
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return (pid_t)fc_errf(e, "cannot start a worker process: pipe: %s", strerror(errno));
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    spawn_call sc = {.fa = &fa};
    int err = fc_with_process_cpus(do_spawn, &sc); /* not only the CPU this thread is pinned to */
    pid_t pid = sc.pid;
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (err != 0) {
        close(in[1]);
        close(out[0]);
        return (pid_t)fc_errf(e, "cannot start a worker process: %s", strerror(err));
    }
    *to = fdopen(in[1], "wb");
    *from = fdopen(out[0], "rb");
    return pid;
}
