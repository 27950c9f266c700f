/* util.c — see util.h. */
#include "util.h"
#include "signals.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <fcntl.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------ vocabulary */

size_t fc_dtype_size(fc_dtype d) { return (d == FC_BF16 || d == FC_FP16) ? 2 : 4; }


int fc_errf(fc_err *e, const char *fmt, ...)
{
    if (e) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ------------------------------------------------------------------ strings */

void fc_str_addf(fc_str *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        va_end(ap2);
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        b->s = fc_xrealloc(b->s, cap);
        b->cap = cap;
    }
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    b->len += (size_t)n;
}

void fc_str_add(fc_str *b, const char *s) { fc_str_addf(b, "%s", s); }

void fc_str_free(fc_str *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

const char *fc_str_cstr(const fc_str *b) { return b->s ? b->s : ""; }

/* ------------------------------------------------------------------ memory */

static void out_of_memory(size_t n)
{
    fprintf(stderr, "fusecal: error: out of host memory allocating %zu bytes\n", n);
    exit(FC_EXIT_FAIL);
}

void *fc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) out_of_memory(n);
    return p;
}

void *fc_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) out_of_memory(n * size);
    return p;
}

void *fc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) out_of_memory(n);
    return q;
}

char *fc_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fc_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

char *fc_add_newline(char *s)
{
    size_t l = strlen(s);
    s = fc_xrealloc(s, l + 2);
    s[l] = '\n';
    s[l + 1] = 0;
    return s;
}

void *fc_aligned_alloc(size_t n)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, n ? n : 64) != 0) out_of_memory(n);
    return p;
}

bool fc_mul_size(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
bool fc_add_size(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }

/* ------------------------------------------------------------------ parsing */

bool fc_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || end == s) return false;
    *out = v;
    return true;
}

bool fc_parse_double(const char *s, double *out)
{
    if (!s || !*s) return false;
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v)) return false;
    *out = v;
    return true;
}

void fc_strlcpy(char *dst, const char *src, size_t n)
{
    if (!n) return;
    size_t l = strlen(src);
    if (l >= n) l = n - 1;
    memcpy(dst, src, l);
    dst[l] = 0;
}

bool fc_streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

bool fc_glob_match(const char *p, const char *s)
{
    const char *star = NULL, *ss = NULL;
    while (*s) {
        if (*p == '?' || *p == *s) {
            p++;
            s++;
        } else if (*p == '*') {
            star = p++;
            ss = s;
        } else if (star) {
            p = star + 1;
            s = ++ss;
        } else {
            return false;
        }
    }
    while (*p == '*') p++;
    return *p == 0;
}

/* ------------------------------------------------------------------ random */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void fc_rng_seed(fc_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fc_rng_next(fc_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double fc_rng_uniform(fc_rng *r) { return (double)(fc_rng_next(r) >> 11) * 0x1.0p-53; }

float fc_rng_range(fc_rng *r, float lo, float hi)
{
    for (;;) {
        float v = lo + (hi - lo) * (float)fc_rng_uniform(r);
        if (v != 0.0f) return v;
    }
}

uint64_t fc_rng_below(fc_rng *r, uint64_t n) { return n ? fc_rng_next(r) % n : 0; }

uint64_t fc_seed_mix(uint64_t a, uint64_t b)
{
    uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ULL);
    return splitmix64(&x);
}

/* ------------------------------------------------------------------ clocks */

double fc_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

bool fc_test_fast(void)
{
    const char *v = getenv("FUSECAL_TEST_FAST");
    return v && !strcmp(v, "1");
}

void fc_utc_timestamp(char buf[32])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ------------------------------------------------------------------ system */

size_t fc_host_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return (size_t)-1;
    char line[256];
    size_t kb = 0;
    bool found = false;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %zu kB", &kb) == 1) {
            found = true;
            break;
        }
    fclose(f);
    if (!found) return (size_t)-1;
    return kb * 1024;
}

/* ------------------------------------------------------------------ files */

int fc_read_file(const char *path, size_t max_bytes, char **out, size_t *len, fc_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fc_errf(e, "cannot open '%s': %s", path, strerror(errno));
    size_t cap = 65536, n = 0;
    char *buf = fc_xmalloc(cap);
    for (;;) {
        if (n + 1 >= cap) {
            cap *= 2;
            buf = fc_xrealloc(buf, cap);
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (n > max_bytes) {
            fclose(f);
            free(buf);
            return fc_errf(e, "'%s' is larger than %zu bytes", path, max_bytes);
        }
        if (got == 0) break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return fc_errf(e, "cannot read '%s'", path);
    }
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return 0;
}

static void dir_of(const char *path, char *dir, size_t n)
{
    char tmp[4096];
    fc_strlcpy(tmp, path, sizeof tmp);
    fc_strlcpy(dir, dirname(tmp), n);
}

/* path, or where it leads when it is a symbolic link to a file that exists (the
 * file is replaced, the link kept) */
static const char *through_link(const char *path, char *buf)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && realpath(path, buf) ? buf : path;
}

int fc_check_writable(const char *path, fc_err *e)
{
    if (!*path) return fc_errf(e, "cannot write '': the file name is empty");
    char target[PATH_MAX];
    path = through_link(path, target);
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    struct stat st;
    if (stat(dir, &st) != 0) return fc_errf(e, "cannot write '%s': directory '%s' does not exist", path, dir);
    if (!S_ISDIR(st.st_mode)) return fc_errf(e, "cannot write '%s': '%s' is not a directory", path, dir);
    if (access(dir, W_OK) != 0) return fc_errf(e, "cannot write '%s': directory '%s' is not writable", path, dir);
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return fc_errf(e, "cannot write '%s': it is a directory", path);
        if (access(path, W_OK) != 0 && access(dir, W_OK) != 0)
            return fc_errf(e, "cannot write '%s': permission denied", path);
    }
    /* and the save's first step tried: its temporary file made and removed (access()
     * lets root through wherever the mode bits say no, and a file system such as
     * /proc's refuses every new file to anyone) */
    char tmp[4200];
    const char *base = strrchr(path, '/');
    snprintf(tmp, sizeof tmp, "%s/.%s.tmpXXXXXX", dir, base ? base + 1 : path);
    int fd = mkstemp(tmp);
    if (fd < 0) return fc_errf(e, "cannot write '%s': %s", path, strerror(errno));
    close(fd);
    unlink(tmp);
    return 0;
}

int fc_write_file_atomic(const char *path, const char *data, size_t len, fc_err *e)
{
    char target[PATH_MAX];
    path = through_link(path, target);
    char dir[4096], tmp[4200];
    dir_of(path, dir, sizeof dir);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(tmp, sizeof tmp, "%s/.%s.tmpXXXXXX", dir, base);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        const int err = errno;
        fc_errf(e, "cannot write '%s': %s", path, strerror(err));
        errno = err;
        return -1;
    }
    fc_signals_tempfile(tmp);
    size_t off = 0;
    int err = 0;
    if (fc_fault("write")) err = ENOSPC;
    while (!err && off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        off += (size_t)w;
    }
    if (!err && fsync(fd) != 0) err = errno;
    /* Keep the permissions a plain fopen would have given (mkstemp makes 0600). */
    if (!err) {
        mode_t mask = umask(0);
        umask(mask);
        struct stat st;
        fchmod(fd, stat(path, &st) == 0 ? (st.st_mode & 07777) : (0666 & ~mask));
    }
    if (close(fd) != 0 && !err) err = errno;
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        fc_signals_tempfile(NULL);
        fc_errf(e, "cannot write '%s': %s (previous contents kept)", path, strerror(err));
        errno = err;
        return -1;
    }
    fc_signals_tempfile(NULL);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

bool fc_fault(const char *site)
{
    static const char *spec;
    static bool loaded;
    if (!loaded) {
        spec = getenv("FUSECAL_FAULT");
        loaded = true;
    }
    if (!spec || !*spec) return false;
    size_t n = strlen(site);
    for (const char *p = spec; *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && strncmp(p, site, n) == 0) return true;
        if (!c) break;
        p = c + 1;
    }
    return false;
}

int fc_fault_armed;

bool fc_fault_backend(const char *site) { return fc_fault_armed && fc_fault(site); }

/* ------------------------------------------------------------------ CPUs */

static cpu_set_t process_cpus;
static bool process_cpus_noted;

void fc_note_process_cpus(void)
{
    if (!process_cpus_noted && sched_getaffinity(0, sizeof process_cpus, &process_cpus) == 0) process_cpus_noted = true;
}

int fc_allowed_cpus(void)
{
    fc_note_process_cpus();
    const int k = process_cpus_noted ? CPU_COUNT(&process_cpus) : 0;
    if (k > 0) return k;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int fc_with_process_cpus(int (*fn)(void *), void *arg)
{
    cpu_set_t mine;
    bool swap = process_cpus_noted && pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0 &&
                pthread_setaffinity_np(pthread_self(), sizeof process_cpus, &process_cpus) == 0;
    int rc = fn(arg);
    if (swap) pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
    return rc;
}
