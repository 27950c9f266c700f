/* cpu_chain.c — see cpu_chain.h. */
#include "cpu_chain.h"
#include "cpu_bf16.h"
#include "cpu_ops.h"

#include <stdlib.h>
#include <string.h>

void fc_cpu_chain_alloc(fc_cpu_chain *c, const fc_pattern *pat, const fc_workload *w)
{
    memset(c, 0, sizeof *c);
    c->pat = pat;
    c->out_n = w->out_n;
    c->inter_n = w->inter_n;
    for (int v = 0; v < FC_NVARIANTS; v++) c->out[v] = fc_cpu_buffer(w->out_n);
    for (int i = 0; i < fc_pattern_live_intermediates(pat); i++) c->tmp[i] = fc_cpu_buffer(w->inter_n);
}

void fc_cpu_chain_use_bf16(fc_cpu_chain *c) { c->bf16 = true; }

void fc_cpu_chain_add_control(fc_cpu_chain *c)
{
    if (!c->out[FC_CONTROL]) c->out[FC_CONTROL] = fc_cpu_buffer(c->out_n);
}

float *fc_cpu_chain_dst(const fc_cpu_chain *c, int i)
{
    int slot = fc_pattern_chain_slot(c->pat, i);
    return slot < 0 ? c->out[FC_UNFUSED] : c->tmp[slot];
}

void fc_cpu_chain_poison(fc_cpu_chain *c, fc_variant v)
{
    if (c->bf16) fc_cpu_bf16_fill_nan((fc_bf16 *)c->out[v], c->out_n);
    else
        fc_cpu_fill_nan(c->out[v], c->out_n);
}

void fc_cpu_chain_output(const fc_cpu_chain *c, fc_variant v, float *dst)
{
    if (c->bf16) fc_cpu_bf16_to_float((const fc_bf16 *)c->out[v], dst, c->out_n);
    else
        memcpy(dst, c->out[v], c->out_n * sizeof(float));
}

void fc_cpu_chain_free(fc_cpu_chain *c)
{
    for (int v = 0; v < FC_MAX_VARIANTS; v++) free(c->out[v]);
    free(c->tmp[0]);
    free(c->tmp[1]);
    memset(c, 0, sizeof *c);
}
