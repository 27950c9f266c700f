/* cpu_peak.h — the CPU's arithmetic peak, measured: vector multiply-adds on
 * registers alone (no loads, no stores), enough independent chains to keep every
 * FMA pipe busy, on every thread of the pool. No kernel does more arithmetic a
 * second, so a percentage of it cannot pass 100 unless the count of work is off;
 * a GEMM reaches it only nearly, and a blocked convolution can pass a GEMM's rate
 * (cpu.onednn's 1x1 and 3x3 convolutions at 101-103 % of the best GEMM rate on the
 * AMD EPYC VM). */
#ifndef FC_CPU_PEAK_H
#define FC_CPU_PEAK_H

#include "vocab.h"
#include <stddef.h>

/* The loops: 256-bit FMA (AVX2 + FMA), 512-bit FMA (AVX-512F), 512-bit bf16 dot
 * products into fp32 (AVX-512 BF16's vdpbf16ps). */
typedef enum { FC_PEAK_AVX2, FC_PEAK_AVX512, FC_PEAK_AVX512_BF16, FC_NPEAK_ISAS } fc_peak_isa;

/* The widest loop a CPU with these /proc/cpuinfo flags runs for dtype's arithmetic
 * (fp32: AVX-512F, else AVX2 with FMA; bf16: AVX-512 BF16); -1 when it has none or
 * when its fastest path is one no loop here measures (AMX tiles for bf16), `why`
 * saying which. */
int fc_peak_isa_for(const char *flags, fc_dtype dt, char *why, size_t n);
/* The ISA's name as the ceilings' method gives it. */
const char *fc_peak_isa_name(fc_peak_isa isa);
/* FLOPs of one iteration of the loop on one thread. */
double fc_peak_flops_per_iter(fc_peak_isa isa);
/* One thread's loop: `iters` iterations, each a multiply-add into every
 * accumulator of FC_PEAK_CHAINS(isa) vectors started at 0, 1, 2, ... (fp32:
 * acc = acc * x + y; bf16: acc += x*y + x*y over each lane's pair, x and y rounded to
 * bf16); returns the sum of every lane of every accumulator in double, chain by
 * chain, lane by lane. The caller must run it only where the host has the ISA. */
double fc_peak_loop(fc_peak_isa isa, long iters, float x, float y);
int fc_peak_chains(fc_peak_isa isa);
/* The best rate of the loop on every thread of the pool, GFLOP/s, over runs of
 * about 20 ms after a warm-up; 0 when the host has no loop for dtype. `how`
 * names the loop or why none ran. */
double fc_cpu_peak_gflops(fc_dtype dt, char *how, size_t n);
/* The same loop's best rate over `runs` runs of about run_s seconds, now: the peak
 * beside a round (fc_device.peak_at); 0 when the host has no loop for dtype. */
double fc_cpu_peak_now(fc_dtype dt, int runs, double run_s);

#endif
