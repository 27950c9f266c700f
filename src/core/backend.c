/* backend.c — looking things up in a registry; the launch adapter; op tables and
 * the descriptions built from them. */
#include "registry.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const fc_backend *fc_backend_find(const fc_registry *r, const char *name)
{
    fc_backend_id id;
    return fc_backend_id_parse(name, &id) == 0 ? r->backend[id] : NULL;
}

const fc_device *fc_device_find(const fc_registry *r, const char *name)
{
    fc_device_id id;
    return fc_device_id_parse(name, &id) == 0 ? r->device[id] : NULL;
}

const char *fc_backend_names(const fc_registry *r, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < FC_NBACKENDS && off < n; i++)
        if (r->backend[i])
            off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", fc_backend_words.names[i]);
    return buf;
}

const char *fc_device_names(const fc_registry *r, char *buf, size_t n)
{
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < FC_NDEVICES && off < n; i++)
        if (r->device[i])
            off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? ", " : "", fc_device_words.names[i]);
    return buf;
}

int fc_backend_launch(void *call, fc_variant v, fc_err *e)
{
    fc_backend_call *c = call;
    return c->b->run(c->state, v, e);
}

/* ------------------------------------------------------------------ op tables */

static bool is_activation(fc_op op) { return op == FC_OP_RELU || op == FC_OP_GELU; }

int fc_op_table_call(const fc_op_impl *table, const fc_pattern *pat)
{
    int call = 0;
    while (call < pat->nops - 1 && table[pat->ops[call]].part == FC_FUSE_PROLOGUE) call++;
    return call;
}

/* Why op i cannot take its place in the fused form after ops 0..i-1, or NULL. The
 * fused form is one call; a prologue changes its input as it is loaded, so it comes
 * before it; folds change its operands, so they come before anything applied to its
 * output; an epilogue adds its operands, then applies at most one activation, last;
 * a kernel of its own runs the chain up to its op, so only kernels may follow it; a
 * pass of its own runs over the call's stored output, so only that pass may follow. */
static const char *misplaced(const fc_op_impl *table, const fc_pattern *pat, int i)
{
    fc_fuse_part part = table[pat->ops[i]].part;
    int call = fc_op_table_call(table, pat);
    if (part == FC_FUSE_PROLOGUE)
        return i < call ? NULL : i == call ? "is a prologue of no call" : "is a prologue after the call";
    if ((part == FC_FUSE_CALL) != (i == call)) return i != call ? "is a call after the first op" : "is not a call";
    for (int j = call + 1; j < i; j++) {
        fc_fuse_part before = table[pat->ops[j]].part;
        if (before == FC_FUSE_KERNEL && part != FC_FUSE_KERNEL) return "follows a kernel of its own";
        if (before == FC_FUSE_PASS && part != FC_FUSE_PASS) return "follows a pass of its own";
        if (before == FC_FUSE_EPILOGUE && part == FC_FUSE_FOLD) return "is folded into the call after an epilogue step";
        if (before == FC_FUSE_EPILOGUE && is_activation(pat->ops[j]) && part == FC_FUSE_EPILOGUE)
            return "follows the epilogue's activation";
    }
    return NULL;
}

bool fc_op_table_fits(const fc_op_impl *table, const fc_pattern *pat, const char *backend, char *why, size_t n)
{
    for (int i = 0; i < pat->nops; i++) {
        if (!table[pat->ops[i]].unfused) {
            snprintf(why, n, "%s has no implementation of op '%s' (pattern '%s')", backend, fc_op_name(pat->ops[i]),
                     pat->name);
            return false;
        }
        const char *wrong = misplaced(table, pat, i);
        if (wrong) {
            snprintf(why, n, "%s cannot fuse pattern '%s': op '%s' %s", backend, pat->name, fc_op_name(pat->ops[i]),
                     wrong);
            return false;
        }
    }
    return true;
}

int fc_op_table_kernel(const fc_op_impl *table, const fc_pattern *pat)
{
    int k = -1;
    for (int i = 0; i < pat->nops; i++)
        if (table[pat->ops[i]].part == FC_FUSE_KERNEL) k = i;
    return k;
}

int fc_op_table_fused_kernels(const fc_op_impl *table, const fc_pattern *pat)
{
    for (int i = 0; i < pat->nops; i++)
        if (table[pat->ops[i]].part == FC_FUSE_PASS) return 2;
    return 1;
}

int fc_op_table_count(const fc_op_impl *table, const fc_pattern *pat, fc_fuse_part part)
{
    int n = 0;
    for (int i = 0; i < pat->nops; i++) {
        const fc_op_impl *row = &table[pat->ops[i]];
        n += (row->part == part && row->fused) + (row->also && row->also_part == part);
    }
    return n;
}

const char *fc_op_table_last(const fc_op_impl *table, const fc_pattern *pat, fc_fuse_part part)
{
    const char *last = NULL;
    for (int i = 0; i < pat->nops; i++) {
        const fc_op_impl *row = &table[pat->ops[i]];
        if (row->part == part && row->fused) last = row->fused;
        if (row->also && row->also_part == part) last = row->also;
    }
    return last;
}

void fc_impl_addf(fc_impl *impl, const char *fmt, ...)
{
    size_t off = strlen(impl->name);
    if (off + 1 >= sizeof impl->name) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(impl->name + off, sizeof impl->name - off, fmt, ap);
    va_end(ap);
}

void fc_impl_add_op(fc_impl *impl, const fc_op_impl *table, fc_op op, fc_variant v, fc_op_detail_fn detail,
                    const void *ctx)
{
    const char *text = v == FC_UNFUSED ? table[op].unfused : table[op].fused;
    if (!text) text = fc_op_name(op);
    const char *slot = strstr(text, "%s");
    if (!slot) {
        fc_impl_addf(impl, "%s", text);
        return;
    }
    char buf[512] = "";
    const char *d = detail ? detail(ctx, v, op, buf, sizeof buf) : "";
    fc_impl_addf(impl, "%.*s%s%s", (int)(slot - text), text, d ? d : "", slot + 2);
}

void fc_impl_add_chain(fc_impl *impl, const fc_op_impl *table, const fc_pattern *pat, fc_op_detail_fn detail,
                       const void *ctx)
{
    for (int i = 0; i < pat->nops; i++) {
        if (i) fc_impl_addf(impl, " -> ");
        fc_impl_add_op(impl, table, pat->ops[i], FC_UNFUSED, detail, ctx);
    }
}

int fc_impl_add_part(fc_impl *impl, const fc_op_impl *table, const fc_pattern *pat, fc_fuse_part part, const char *open,
                     const char *sep, const char *close)
{
    int n = 0;
    for (int i = 0; i < pat->nops; i++) {
        const fc_op_impl *row = &table[pat->ops[i]];
        const char *piece[2] = {row->part == part ? row->fused : NULL, row->also_part == part ? row->also : NULL};
        for (int k = 0; k < 2; k++)
            if (piece[k]) fc_impl_addf(impl, "%s%s", n++ ? sep : open, piece[k]);
    }
    if (n) fc_impl_addf(impl, "%s", close);
    return n;
}
