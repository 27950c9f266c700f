/* cpu_vec.h — 16-float vectors (GCC vector extensions) for the host kernels: the
 * compiler maps one to a zmm register with AVX-512, two ymm with AVX2, and so on. */
#ifndef FC_CPU_VEC_H
#define FC_CPU_VEC_H

#include <stdint.h>

typedef float v16f __attribute__((vector_size(64)));
typedef int32_t v16i __attribute__((vector_size(64)));
typedef float v16fu __attribute__((vector_size(64), aligned(4), may_alias)); /* unaligned access */

static inline v16f vload(const float *p) { return *(const v16fu *)p; }
static inline void vstore(float *p, v16f v) { *(v16fu *)p = v; }
static inline v16f vsplat(float x) { return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }
static inline v16f vsel(v16i mask, v16f a, v16f b) { return (v16f)((mask & (v16i)a) | (~mask & (v16i)b)); }
static inline v16f vmax(v16f a, v16f b) { return vsel(a > b, a, b); }

#endif
