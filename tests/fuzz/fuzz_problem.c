/* libFuzzer harness: problem strings (the parser behind --shape, sweep files and
 * records). Whatever parses must print a canonical string that parses back to
 * the same problem. */
#include "pattern.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (size > 2048) return 0;
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = 0;
    fc_problem p, q;
    fc_err e;
    if (fc_problem_parse(s, NULL, &p, &e) == 0) {
        char a[256], b[256];
        fc_problem_string(&p, a, sizeof a);
        if (fc_problem_parse(a, NULL, &q, &e) != 0) abort();
        fc_problem_string(&q, b, sizeof b);
        if (strcmp(a, b) != 0) abort();
        size_t bytes;
        fc_problem_host_bytes(&p, &bytes, &e);
        fc_cost c = {0};
        fc_family_of(p.pat)->cost(&p, &c);
    }
    /* the same text as dims of each pattern (the --shape k=v form) */
    for (int i = 0; i < FC_NPATTERNS; i++) fc_problem_parse(s, &fc_patterns[i], &p, &e);
    free(s);
    return 0;
}
