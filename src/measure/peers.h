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
 * it is removed and not counted.
 *
 * The file also names the output the run writes (its absolute path), so that a
 * second run given the same output is refused before it measures: each rewrites
 * the whole document after every record, and the later save would drop the other
 * run's records. */
#ifndef FC_PEERS_H
#define FC_PEERS_H

#include <stdbool.h>
#include <stddef.h>

/* The directory the files go in (${TMPDIR:-/tmp}/fusecal-runs) into buf[n]; false
 * when it does not fit. */
bool fc_peers_dir(char *buf, size_t n);
/* This process's file: made once (later calls do nothing), removed at exit; out:
 * the output it writes (NULL: none). Returns 0, or -1 with why in why[n] (the
 * directory cannot be made or written: the run goes on uncounted by others). */
int fc_peers_join(const char *out, char *why, size_t n);
/* The process id of another live run that writes the output out and joined before
 * this one (its start first, then its id), else 0. */
int fc_peers_writing(const char *out);
/* The file of this process removed (also at exit). */
void fc_peers_leave(void);
/* Other runs alive now; their process ids into pids[0..max) (the first max). */
int fc_peers_count(int *pids, int max);

#endif
