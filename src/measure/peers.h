/* peers.h — other fusecal runs measuring on this host at the same time.
 *
 * Two runs at once share the cores, the caches and the memory bus (or the GPU), and
 * each one's timings then measure the other as much as fusion. A run that measures leaves a file named by its process id in a directory every run
 * reads, ${TMPDIR:-/tmp}/fusecal-runs (sticky and world-writable, as /tmp is, so
 * that other users' runs count too), holding its id and start time; it removes the
 * file when it ends. A record counts the other files whose process is alive before
 * and after it is measured (environment.before/after.fusecal_runs) and says it was
 * contended when either is not zero. A file whose process is gone, or whose id now
 * belongs to a process that started at another time, is left by a run that died:
 * it is removed and not counted. */
#ifndef FC_PEERS_H
#define FC_PEERS_H

#include <stdbool.h>
#include <stddef.h>

/* The directory the files go in (${TMPDIR:-/tmp}/fusecal-runs) into buf[n]; false
 * when it does not fit. */
bool fc_peers_dir(char *buf, size_t n);
/* This process's file: made once (later calls do nothing), removed at exit. Returns
 * 0, or -1 with why in why[n] (the directory cannot be made or written: the run
 * goes on uncounted by others). */
int fc_peers_join(char *why, size_t n);
/* The file of this process removed (also at exit). */
void fc_peers_leave(void);
/* Other runs alive now; their process ids into pids[0..max) (the first max). */
int fc_peers_count(int *pids, int max);

#endif
