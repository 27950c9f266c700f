/* vocab.c — the vocabulary tables; see vocab.h. */
#include "vocab.h"

#include <stdio.h>
#include <string.h>

#define WORDS(var, what, first, LIST)                               \
    static const char *const var##_names[] = {LIST(FC_VOCAB_NAME)}; \
    const fc_words var = {what, var##_names, (int)(sizeof var##_names / sizeof var##_names[0]), first};

WORDS(fc_dtype_words, "dtype", 0, FC_DTYPE_LIST)
WORDS(fc_layout_words, "layout", FC_NCHW, FC_LAYOUT_LIST)
WORDS(fc_variant_words, "variant", 0, FC_VARIANT_LIST)
WORDS(fc_device_words, "device", 0, FC_DEVICE_LIST)
WORDS(fc_backend_words, "backend", 0, FC_BACKEND_LIST)
WORDS(fc_format_words, "format", 0, FC_FORMAT_LIST)
WORDS(fc_status_words, "status", 0, FC_STATUS_LIST)
WORDS(fc_decision_words, "decision", 0, FC_DECISION_LIST)
WORDS(fc_stop_rule_words, "stop rule", 0, FC_STOP_RULE_LIST)
WORDS(fc_timing_words, "timing", 0, FC_TIMING_LIST)
WORDS(fc_decider_words, "decided by", 0, FC_DECIDER_LIST)
WORDS(fc_cache_words, "cache mode", 0, FC_CACHE_LIST)
WORDS(fc_attn_kernel_words, "attention kernel", 0, FC_ATTN_KERNEL_LIST)
WORDS(fc_bound_words, "bound", 0, FC_BOUND_LIST)
WORDS(fc_verdict_words, "verdict", 0, FC_VERDICT_LIST)

_Static_assert(sizeof fc_dtype_words_names / sizeof(char *) == FC_NDTYPES, "dtype names");
_Static_assert(sizeof fc_backend_words_names / sizeof(char *) == FC_NBACKENDS, "backend names");
_Static_assert(sizeof fc_verdict_words_names / sizeof(char *) == FC_NVERDICTS, "verdict names");

int fc_word_index(const fc_words *w, const char *s)
{
    for (int i = w->first; s && i < w->n; i++)
        if (!strcmp(s, w->names[i])) return i;
    return -1;
}

const char *fc_word_name(const fc_words *w, int i) { return i >= 0 && i < w->n ? w->names[i] : "?"; }

const char *fc_words_valid(const fc_words *w)
{
    /* one cache line per table; the tables are few and fixed */
    static struct {
        const fc_words *w;
        char s[256];
    } cache[16];
    for (size_t k = 0; k < sizeof cache / sizeof cache[0]; k++) {
        if (cache[k].w == w) return cache[k].s;
        if (cache[k].w) continue;
        size_t off = 0;
        for (int i = w->first; i < w->n && off < sizeof cache[k].s; i++)
            off += (size_t)snprintf(cache[k].s + off, sizeof cache[k].s - off, "%s%s", off ? ", " : "", w->names[i]);
        cache[k].w = w;
        return cache[k].s;
    }
    return "?";
}

fc_device_id fc_backend_device(fc_backend_id b)
{
    const char *name = fc_word_name(&fc_backend_words, (int)b);
    for (int d = 0; d < FC_NDEVICES; d++) {
        size_t l = strlen(fc_device_words.names[d]);
        if (!strncmp(name, fc_device_words.names[d], l) && name[l] == '.') return (fc_device_id)d;
    }
    return FC_DEV_cpu; /* not reached: every backend name starts with its device's */
}

#define PARSER(fn, type, words)           \
    int fn(const char *s, type *out)      \
    {                                     \
        int i = fc_word_index(&words, s); \
        if (i < 0) return -1;             \
        *out = (type)i;                   \
        return 0;                         \
    }
PARSER(fc_dtype_parse, fc_dtype, fc_dtype_words)
PARSER(fc_format_parse, fc_format, fc_format_words)
PARSER(fc_layout_parse, fc_layout, fc_layout_words)
PARSER(fc_device_id_parse, fc_device_id, fc_device_words)
PARSER(fc_backend_id_parse, fc_backend_id, fc_backend_words)

const char *fc_dtype_name(fc_dtype d) { return fc_word_name(&fc_dtype_words, (int)d); }
const char *fc_layout_name(fc_layout l) { return fc_word_name(&fc_layout_words, (int)l); }
const char *fc_variant_name(fc_variant v) { return fc_word_name(&fc_variant_words, (int)v); }
const char *fc_status_name(fc_status s) { return fc_word_name(&fc_status_words, (int)s); }
const char *fc_decision_name(fc_decision d) { return fc_word_name(&fc_decision_words, (int)d); }
const char *fc_stop_rule_name(fc_stop_rule r) { return fc_word_name(&fc_stop_rule_words, (int)r); }
const char *fc_verdict_name(fc_verdict v) { return fc_word_name(&fc_verdict_words, (int)v); }
