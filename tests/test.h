/* test.h — a minimal harness: each test file lists its cases in a table; the
 * binary runs them all (or the one named on the command line) and prints
 * "N passed, M failed". A failed CHECK reports file:line and the expression. */
#ifndef FC_TEST_H
#define FC_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            t_failures++;                                                            \
        }                                                                            \
    } while (0)

#define CHECK_MSG(cond, ...)                                                         \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                            \
            fputc('\n', stderr);                                                     \
            t_failures++;                                                            \
        }                                                                            \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                                        \
    do {                                                                                                             \
        double a_ = (a), b_ = (b);                                                                                   \
        if (!(fabs(a_ - b_) <= (tol))) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %.9g, %s = %.9g (tol %g)\n", __FILE__, __LINE__, #a, a_, \
                    #b, b_, (double)(tol));                                                                          \
            t_failures++;                                                                                            \
        }                                                                                                            \
    } while (0)

#define CHECK_STR_CONTAINS(s, sub) CHECK_MSG(strstr((s), (sub)) != NULL, "'%s' does not contain '%s'", (s), (sub))

typedef struct t_case {
    const char *name;
    void (*fn)(void);
} t_case;

/* Runs the cases; argv[1] may name one. Exit 0 when all passed. */
static inline int t_run(const t_case *cases, size_t n, int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        if (argc > 1 && strcmp(argv[1], cases[i].name) != 0) continue;
        int before = t_failures;
        cases[i].fn();
        if (t_failures == before) {
            passed++;
            printf("ok   %s\n", cases[i].name);
        } else {
            failed++;
            printf("FAIL %s\n", cases[i].name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed || (passed == 0) ? 1 : 0;
}

#define T(name)     \
    {               \
#name, name \
    }

#endif
