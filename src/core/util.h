/* util.h — small helpers: strings, numbers, random numbers, clocks, files. */
#ifndef FC_UTIL_H
#define FC_UTIL_H

#include "fusecal.h"
#include <stdio.h>

#define FC_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- growable string */
typedef struct fc_str {
    char *s;
    size_t len, cap;
} fc_str;
void fc_str_addf(fc_str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fc_str_add(fc_str *b, const char *s);
void fc_str_free(fc_str *b);
const char *fc_str_cstr(const fc_str *b); /* "" when empty */

/* ---- allocation that reports failure instead of returning NULL to a caller that
 * cannot cope: exits with a one-line message (out of host memory is not recoverable
 * for a tool that checked sizes first). */
void *fc_xmalloc(size_t n);
void *fc_xcalloc(size_t n, size_t size);
void *fc_xrealloc(void *p, size_t n);
char *fc_xstrdup(const char *s);
/* s (malloc'd) with a newline appended: a printed document as a file's text. */
char *fc_add_newline(char *s);
/* 64-byte aligned buffer of n bytes (n may be 0). Free with free(). */
void *fc_aligned_alloc(size_t n);

/* ---- checked arithmetic: return false on overflow */
bool fc_mul_size(size_t a, size_t b, size_t *out);
bool fc_add_size(size_t a, size_t b, size_t *out);

/* ---- parsing */
/* Parses a decimal integer that fills the whole string; false on junk or overflow. */
bool fc_parse_i64(const char *s, int64_t *out);
/* Parses a finite double that fills the whole string. */
bool fc_parse_double(const char *s, double *out);
/* Copies at most n-1 chars and terminates. */
void fc_strlcpy(char *dst, const char *src, size_t n);
bool fc_streq(const char *a, const char *b);
/* shell-style glob with * and ? */
bool fc_glob_match(const char *pattern, const char *s);

/* ---- random numbers: xoshiro256** seeded through splitmix64 */
typedef struct fc_rng {
    uint64_t s[4];
} fc_rng;
void fc_rng_seed(fc_rng *r, uint64_t seed);
uint64_t fc_rng_next(fc_rng *r);
double fc_rng_uniform(fc_rng *r);                  /* [0, 1) */
float fc_rng_range(fc_rng *r, float lo, float hi); /* [lo, hi), never exactly 0 */
uint64_t fc_rng_below(fc_rng *r, uint64_t n);      /* [0, n) */
uint64_t fc_seed_mix(uint64_t a, uint64_t b);

/* ---- clocks */
double fc_now(void); /* monotonic seconds */
/* The test hook FUSECAL_TEST_FAST=1 is set: the shortest measurements, for tests. */
bool fc_test_fast(void);
void fc_utc_timestamp(char buf[32]); /* 2026-11-22T11:38:13Z */

/* ---- system */
/* Bytes the kernel says could be allocated without swapping (MemAvailable). */
size_t fc_host_mem_available(void);

/* ---- files */
/* Reads a whole file (NUL-terminated). Fails over max_bytes. */
int fc_read_file(const char *path, size_t max_bytes, char **out, size_t *len, fc_err *e);
/* Writes data to path atomically: a temp file in the same directory, fsync, rename
 * (a symbolic link to a file: that file is replaced, the link kept). On any failure
 * the previous file is intact, the temp file removed, and errno says why. */
int fc_write_file_atomic(const char *path, const char *data, size_t len, fc_err *e);
/* Checks that path can be created or replaced (directory exists and is writable,
 * and a temporary file can be made there, as fc_write_file_atomic makes one),
 * without creating path. */
int fc_check_writable(const char *path, fc_err *e);

/* Fault injection for tests: FUSECAL_FAULT=name[,name...] makes the call site named
 * `name` fail. Returns true when the site should fail. */
bool fc_fault(const char *site);
/* The same for library call sites inside backends: they fire only while a backend
 * works on a problem (fc_fault_armed), so a device's own start-up is spared and
 * the failure lands in one record while later problems still run. */
extern int fc_fault_armed;
bool fc_fault_backend(const char *site);

/* ---- the CPUs this process may run on, as it started
 * A device that pins its threads notes the process's CPUs first; a worker process
 * started later (calibrate.c) gets them back instead of the one CPU its parent's
 * main thread was pinned to. */
void fc_note_process_cpus(void);
/* Runs fn(arg) with the calling thread allowed on the noted CPUs, then restores
 * its own; returns fn's result. */
int fc_with_process_cpus(int (*fn)(void *), void *arg);
/* The CPUs this process may run on as it started (the noted mask; taskset or a
 * cpuset may leave fewer than are online): the default thread count. sysconf's
 * online count where the mask cannot be read. */
int fc_allowed_cpus(void);

#endif
