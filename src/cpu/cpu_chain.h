/* cpu_chain.h — the buffers of a chain on the host, shared by the CPU backends:
 * both variants' outputs and the unfused chain's live intermediates
 * (fc_pattern_live_intermediates), allocated at setup with every page mapped,
 * poisoned with NaN and copied out on request. A bf16 chain keeps bf16 elements in
 * the same buffers (their first half) and converts its output to fp32 when copied
 * out. */
#ifndef FC_CPU_CHAIN_H
#define FC_CPU_CHAIN_H

#include "pattern.h"

typedef struct fc_cpu_chain {
    const fc_pattern *pat;
    size_t out_n, inter_n;
    float *out[FC_MAX_VARIANTS]; /* the control's only when asked for */
    float *tmp[2];               /* NULL past the live intermediates */
    bool bf16;                   /* elements are bf16 (fc_cpu_chain_use_bf16) */
} fc_cpu_chain;

void fc_cpu_chain_alloc(fc_cpu_chain *c, const fc_pattern *pat, const fc_workload *w);
/* Makes the buffers hold bf16 elements (the pointers are then fc_bf16 *). */
void fc_cpu_chain_use_bf16(fc_cpu_chain *c);
/* Adds the control variant's output (its intermediates are the unfused chain's). */
void fc_cpu_chain_add_control(fc_cpu_chain *c);
/* Where op i of the unfused chain writes (fc_pattern_chain_slot): the unfused output
 * for the last op, else an intermediate. */
float *fc_cpu_chain_dst(const fc_cpu_chain *c, int i);
/* Fills variant v's output with NaN, so that an element left unwritten shows. */
void fc_cpu_chain_poison(fc_cpu_chain *c, fc_variant v);
void fc_cpu_chain_output(const fc_cpu_chain *c, fc_variant v, float *dst);
void fc_cpu_chain_free(fc_cpu_chain *c);

#endif
