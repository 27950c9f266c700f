/* openblas_core.h — OpenBLAS's kernel choice on CPUs newer than its table.
 *
 * A DYNAMIC_ARCH OpenBLAS picks its kernels from the CPU model when it loads. A model
 * its table predates gets an old generic core: Debian 12's OpenBLAS 0.3.21 runs its
 * Prescott (SSE3) kernels on an Emerald Rapids Xeon, sgemm at a fifth of the AVX-512
 * rate. fusecal measures fusion, not that fallback: when OpenBLAS chose a core
 * without AVX2 on a CPU with AVX2, fusecal runs itself again with OPENBLAS_CORETYPE
 * naming the core the CPU's flags support, and the host inventory says so. A
 * user's own OPENBLAS_CORETYPE is always kept. */
#ifndef FC_OPENBLAS_CORE_H
#define FC_OPENBLAS_CORE_H

/* The OpenBLAS core to force for a CPU with these /proc/cpuinfo flags and vendor
 * when OpenBLAS chose `chosen`: "Cooperlake" (AVX-512 with BF16), "SkylakeX"
 * (AVX-512), "Zen" or "Haswell" (AVX2 and FMA, by vendor); NULL when `chosen` is
 * not a pre-AVX2 core or the CPU has no AVX2, i.e. OpenBLAS's choice stands. */
const char *fc_openblas_core_for(const char *chosen, const char *flags, const char *vendor);

/* At the start of main: when OPENBLAS_CORETYPE is unset and fc_openblas_core_for
 * names a core, set it (and FUSECAL_OPENBLAS_DETECTED to OpenBLAS's own choice) and
 * exec this program again with argv; otherwise, or when the exec fails, return. */
void fc_openblas_core_check(char **argv);

/* OpenBLAS's own choice when fusecal overrode it (FUSECAL_OPENBLAS_DETECTED), else NULL. */
const char *fc_openblas_core_detected(void);

#endif
