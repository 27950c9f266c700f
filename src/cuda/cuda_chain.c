/* cuda_chain.c — the buffers of a chain on the device, shared by the CUDA
 * backends (cuda_common.h). */
#include "cuda_common.h"

#include <string.h>

double fc_cuda_chain_bytes(const fc_problem *p)
{
    fc_workload w = {.prob = p};
    fc_family_of(p->pat)->shapes(p, &w);
    double n = 2.0 * (double)w.out_n + fc_pattern_live_intermediates(p->pat) * (double)w.inter_n;
    return n * (double)fc_dtype_size(p->dtype);
}

int fc_cuda_chain_alloc(fc_cuda_chain *ch, fc_cuda_ctx *c, const fc_problem *p, const fc_workload *w, fc_err *e)
{
    memset(ch, 0, sizeof *ch);
    ch->c = c;
    ch->dt = p->dtype;
    ch->pat = p->pat;
    ch->out_n = w->out_n;
    ch->inter_n = w->inter_n;
    size_t E = fc_dtype_size(p->dtype);
    for (int v = 0; v < FC_NVARIANTS; v++)
        if (fc_cuda_alloc(&ch->out[v], ch->out_n * E, "the output", e) != 0) return -1;
    for (int i = 0; i < fc_pattern_live_intermediates(p->pat); i++)
        if (fc_cuda_alloc(&ch->tmp[i], ch->inter_n * E, "an intermediate of the unfused chain", e) != 0) return -1;
    FC_CU(cudaMallocHost(&ch->stage, ch->out_n * E));
    return 0;
}

int fc_cuda_chain_add_control(fc_cuda_chain *ch, fc_err *e)
{
    return fc_cuda_alloc(&ch->out[FC_CONTROL], ch->out_n * fc_dtype_size(ch->dt), "the control's output", e);
}

void *fc_cuda_chain_dst(const fc_cuda_chain *ch, int i) { return fc_cuda_chain_dst_v(ch, FC_UNFUSED, i); }

void *fc_cuda_chain_dst_v(const fc_cuda_chain *ch, fc_variant v, int i)
{
    int slot = fc_pattern_chain_slot(ch->pat, i);
    return slot < 0 ? ch->out[v] : ch->tmp[slot];
}

int fc_cuda_chain_output(fc_cuda_chain *ch, fc_variant v, float *dst, fc_err *e)
{
    return fc_cuda_download(ch->c, ch->out[v], ch->out_n, ch->dt, ch->stage, dst, e);
}

int fc_cuda_chain_poison(fc_cuda_chain *ch, fc_variant v, fc_err *e)
{
    return fc_cuda_poison(ch->c, ch->out[v], ch->out_n, ch->dt, e);
}

void fc_cuda_chain_free(fc_cuda_chain *ch)
{
    for (int v = 0; v < FC_MAX_VARIANTS; v++) fc_cuda_free(ch->out[v]);
    fc_cuda_free(ch->tmp[0]);
    fc_cuda_free(ch->tmp[1]);
    if (ch->stage) cudaFreeHost(ch->stage);
    memset(ch, 0, sizeof *ch);
}
