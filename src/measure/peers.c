/* peers.c — see peers.h. */
#include "peers.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char own[512]; /* this process's file, once made */

/* out's absolute path (its real path when it exists, links resolved as a save
 * follows them; else its directory's and its name) into buf[n]; false when the
 * directory cannot be resolved or the path does not fit. */
static bool abs_out(const char *out, char *buf, size_t n)
{
    char dir[PATH_MAX], real[PATH_MAX];
    if (realpath(out, real)) return snprintf(buf, n, "%s", real) < (int)n;
    const char *slash = strrchr(out, '/');
    const char *base = slash ? slash + 1 : out;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == out)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - out), out);
    if (!realpath(dir, real)) return false;
    int len = snprintf(buf, n, "%s/%s", strcmp(real, "/") ? real : "", base);
    return len > 0 && (size_t)len < n;
}

bool fc_peers_dir(char *buf, size_t n)
{
    const char *t = getenv("TMPDIR");
    int len = snprintf(buf, n, "%s/fusecal-runs", t && t[0] == '/' ? t : "/tmp");
    return len > 0 && (size_t)len < n;
}

/* The start time of process pid (clock ticks after boot, /proc/PID/stat's 22nd
 * field), 0 when unknown. The command name (field 2) is in parentheses and may hold
 * spaces: the fields after it are counted from its closing one. */
static unsigned long long start_time(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    unsigned long long t = 0;
    for (int field = 2; p && *p; p++) /* field 3 starts after ") " */
        if (*p == ' ' && ++field == 22) {
            t = strtoull(p + 1, NULL, 10);
            break;
        }
    return t;
}

static void leave_at_exit(void) { fc_peers_leave(); }

int fc_peers_join(const char *out, char *why, size_t n)
{
    if (own[0]) return 0;
    char dir[448];
    if (!fc_peers_dir(dir, sizeof dir)) return snprintf(why, n, "TMPDIR is too long"), -1;
    if (mkdir(dir, 01777) == 0) chmod(dir, 01777); /* past the umask, as /tmp */
    else if (errno != EEXIST)
        return snprintf(why, n, "cannot make %s: %s", dir, strerror(errno)), -1;
    char path[sizeof own];
    snprintf(path, sizeof path, "%s/%ld", dir, (long)getpid());
    FILE *f = fopen(path, "w");
    if (!f) return snprintf(why, n, "cannot write %s: %s", path, strerror(errno)), -1;
    char o[PATH_MAX + 256];
    fprintf(f, "%ld %llu", (long)getpid(), start_time((long)getpid()));
    if (out && abs_out(out, o, sizeof o)) fprintf(f, " %s", o);
    fputc('\n', f);
    if (fclose(f) != 0) return remove(path), snprintf(why, n, "cannot write %s", path), -1;
    memcpy(own, path, sizeof own);
    atexit(leave_at_exit);
    return 0;
}

void fc_peers_leave(void)
{
    if (own[0]) remove(own);
    own[0] = 0;
}

/* Whether the run that left file name in dir is alive; removes the file when not.
 * Its start time and the output it writes ("" when it names none) into *t_out and
 * out[n] when they are not NULL. */
static bool alive_as(const char *dir, const char *name, long *pid_out, unsigned long long *t_out, char *out, size_t n)
{
    char *end;
    long pid = strtol(name, &end, 10);
    if (*end || pid <= 0) return false; /* not a run's file */
    char path[768];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    unsigned long long t = 0; /* its start time, as the run wrote it */
    if (out && n) out[0] = 0;
    FILE *f = fopen(path, "r");
    if (f) {
        char line[PATH_MAX + 320];
        int at = 0;
        if (!fgets(line, sizeof line, f) || sscanf(line, "%*s %llu %n", &t, &at) < 1) t = 0;
        else if (out && n && at > 0) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, n, "%s", line + at);
        }
        fclose(f);
    }
    bool gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
    unsigned long long now = gone ? 0 : start_time(pid);
    if (gone || (t && now && now != t)) { /* died, or its id reused */
        remove(path);
        return false;
    }
    *pid_out = pid;
    if (t_out) *t_out = t;
    return true;
}

static bool alive(const char *dir, const char *name, long *pid_out)
{
    return alive_as(dir, name, pid_out, NULL, NULL, 0);
}

int fc_peers_writing(const char *out)
{
    char dir[448], me[PATH_MAX + 256], other[PATH_MAX + 256];
    if (!out || !fc_peers_dir(dir, sizeof dir) || !abs_out(out, me, sizeof me)) return 0;
    const unsigned long long t0 = start_time((long)getpid());
    DIR *d = opendir(dir);
    if (!d) return 0;
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        long pid;
        unsigned long long t;
        if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) == (long)getpid()) continue;
        if (!alive_as(dir, e->d_name, &pid, &t, other, sizeof other) || strcmp(other, me)) continue;
        if (t < t0 || (t == t0 && pid < (long)getpid())) found = (int)pid; /* the one that came first keeps it */
    }
    closedir(d);
    return found;
}

int fc_peers_count(int *pids, int max)
{
    char dir[448];
    if (!fc_peers_dir(dir, sizeof dir)) return 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    int k = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long pid;
        if (e->d_name[0] == '.' || strtol(e->d_name, NULL, 10) == (long)getpid()) continue;
        if (!alive(dir, e->d_name, &pid)) continue;
        if (pids && k < max) pids[k] = (int)pid;
        k++;
    }
    closedir(d);
    return k;
}
