/* omp_env.c — see omp_env.h. */
#include "omp_env.h"

#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const owned[] = {"OMP_PROC_BIND",  "OMP_PLACES",       "GOMP_CPU_AFFINITY", "OMP_WAIT_POLICY",
                                    "GOMP_SPINCOUNT", "OMP_THREAD_LIMIT", "OMP_DYNAMIC"};
enum { N_OWNED = sizeof owned / sizeof owned[0] };

#define DROPPED "FUSECAL_OMP_ENV_DROPPED"

/* With binding asked for, libgomp pinned this thread to its first place as it loaded,
 * and a new image keeps that mask: this thread is given back the CPUs of all the
 * places (the mask the program started with, or the CPUs OMP_PLACES or
 * GOMP_CPU_AFFINITY named). Without binding there are no places and nothing was
 * pinned. */
static void unbind_main_thread(void)
{
    const int np = omp_get_num_places();
    if (np <= 0) return;
    cpu_set_t all;
    CPU_ZERO(&all);
    for (int p = 0; p < np; p++) {
        int ids[CPU_SETSIZE];
        const int n = omp_get_place_num_procs(p);
        if (n <= 0 || n > CPU_SETSIZE) continue;
        omp_get_place_proc_ids(p, ids);
        for (int i = 0; i < n; i++)
            if (ids[i] >= 0 && ids[i] < CPU_SETSIZE) CPU_SET(ids[i], &all);
    }
    if (CPU_COUNT(&all) > 0) (void)sched_setaffinity(0, sizeof all, &all);
}

void fc_omp_env_check(char **argv)
{
    char list[1024] = "", *kept[N_OWNED] = {0};
    size_t n = 0;
    for (size_t i = 0; i < N_OWNED; i++) {
        const char *v = getenv(owned[i]);
        if (!v) continue;
        kept[i] = strdup(v);
        if (n < sizeof list) n += (size_t)snprintf(list + n, sizeof list - n, "%s%s=%.64s", n ? " " : "", owned[i], v);
    }
    if (!list[0]) return;
    fprintf(stderr, "fusecal: %s removed: fusecal sets its OpenMP threads itself (--threads, one pinned to each CPU)\n",
            list);
    setenv(DROPPED, list, 1);
    for (size_t i = 0; i < N_OWNED; i++) unsetenv(owned[i]);
    unbind_main_thread();
    execv("/proc/self/exe", argv);
    fprintf(stderr, "fusecal: could not run again without them; measuring with them\n");
    unsetenv(DROPPED);
    for (size_t i = 0; i < N_OWNED; i++)
        if (kept[i]) setenv(owned[i], kept[i], 1);
    for (size_t i = 0; i < N_OWNED; i++) free(kept[i]);
}

const char *fc_omp_env_dropped(void)
{
    const char *d = getenv(DROPPED);
    return d && d[0] ? d : NULL;
}
