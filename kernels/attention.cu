/* attention.cu — fusecal's fused attention kernels: flash attention (O = softmax(Q·Kᵀ/√d)·V
 * with an online softmax) and a fused QKᵀ + softmax that writes only P.
 *
 * Shapes: Q, O [bh, s, d], K, V [bh/group, skv, d], P [bh, s, skv], row-major, d = 64 or
 * 128; query head n reads key/value head n / group (grouped-query attention). A block of
 * 4 warps takes 64 queries of one head; each warp owns 16 query rows; the keys come
 * in tiles of 64 through shared memory (cp.async, zero-filled past skv).
 *
 * Tensor cores, mma.sync (fp32 accumulation in every case):
 *   bf16, fp16  m16n8k16; fragments with ldmatrix (.trans for V); P goes from the
 *               QKᵀ accumulators straight into the A operand of P·V (the C layout
 *               of two n-tiles is the A layout of one k-step).
 *   tf32        m16n8k8 on operands rounded to tf32 (cvt.rna); P is moved into the
 *               A layout with warp shuffles.
 *   fp32        the tf32 path with each operand split into big + small tf32 parts and
 *               three products (small·big + big·small + big·big): about fp32 accuracy
 *               at a third of the tf32 rate, well above plain fp32 FMA.
 *
 * Grid: 1-D, bh·ceil(s/64) blocks; fck_attn_block (kernel_logic.h) gives a block its
 * head and query tile, the query tile varying fastest, so the blocks in flight share a
 * few heads and read those heads' K and V from L2 (head-fastest order re-streamed every
 * head's K/V from HBM in every wave: ~2.1 GB instead of 0.13 GB at the shape below);
 * within a head the last query tile (the most key tiles when causal) starts first.
 *
 * Napkin math (bf16, b=4, h=16, s=4096, d=128, non-causal): 4·b·h·s²·d = 549.8 GFLOP;
 * HBM: Q, K, V read once and O written once, 268 MB; L2 -> SM: every 64-query block
 * reads its head's K and V, 2·4096·128·2 B = 2 MiB, 8.6 GB in all. Compute-bound: at
 * ~250 TFLOP/s (64x64 tiles, one m16 tile per warp, single-buffered K/V) about 2.2 ms;
 * the flash2 kernels (flash2.cu) are the faster design.
 *
 * Softmax: scores scaled by log2(e)/√d and exponentiated with exp2f; each row's max
 * and sum are held by the 4 lanes that share the row and merged with shuffles.
 * Causal: query i sees keys j <= i + skv − s (fck_attn_last_key: the queries aligned with
 * the end of the keys), later keys are masked; key tiles wholly past the block's last
 * query's last key are skipped (qk_softmax writes their zeros without computing them).
 */
#include "attention_common.cuh"

#include <stdio.h>
#include <string.h>

namespace {

using namespace fck;

constexpr int BR = FCK_REF_BR; /* queries per block */
constexpr int BC = FCK_REF_BC; /* keys per tile */
constexpr int NT = 128;        /* threads per block: 4 warps x 16 query rows */

/* Shared-memory row strides (elements), padded so that fragment loads are free of
 * bank conflicts: 16 bytes for ldmatrix rows; 4 words for the fp32 Q/K loads (rows
 * g of a warp land 4 banks apart), 8 words for V (rows t of a warp, 8 apart). The P
 * staging of qk_softmax: SC columns (fp32: half a tile, written in two passes), rows
 * 8 elements apart. Sizes in kernel_logic.h (fck_ref_*), checked by the host tests. */
template <int KIND, int D>
struct Geo {
    typedef typename Kind<KIND>::T T;
    static constexpr int E = (int)sizeof(T);
    static constexpr int QS = fck_ref_qk_stride(E, D);
    static constexpr int KS = QS;
    static constexpr int VS = fck_ref_v_stride(D);
    static constexpr int SC = fck_ref_stage_cols(E);
    static constexpr int OS = fck_ref_stage_stride(E);
    static constexpr size_t flash_smem = fck_ref_smem(E, D, 0);
    static constexpr size_t qks_smem = fck_ref_smem(E, D, 1);
    static_assert(flash_smem == (size_t)BR * (QS + KS + VS) * sizeof(T), "flash layout");
    static_assert(qks_smem == ((size_t)BR * QS + 2 * (size_t)BC * KS + 4 * 16 * (size_t)OS) * sizeof(T), "qks layout");
};

/* c += a·b with tf32 operands (SPLIT: three products of the big/small parts) */
template <bool SPLIT>
__device__ __forceinline__ void mma_f32(float *c, const float *a, float b0, float b1)
{
    if (SPLIT) {
        uint32_t ab[4], as[4], bb0, bs0, bb1, bs1;
#pragma unroll
        for (int i = 0; i < 4; i++) tf32_split(a[i], ab[i], as[i]);
        tf32_split(b0, bb0, bs0);
        tf32_split(b1, bb1, bs1);
        mma_tf32(c, as, bb0, bb1);
        mma_tf32(c, ab, bs0, bs1);
        mma_tf32(c, ab, bb0, bb1);
    } else {
        uint32_t ar[4];
#pragma unroll
        for (int i = 0; i < 4; i++) ar[i] = tf32_rna(a[i]);
        mma_tf32(c, ar, tf32_rna(b0), tf32_rna(b1));
    }
}

/* ---------------------------------------------------------------- tiles */

/* rows [row0, row0 + 64) of a head's [s, D] matrix into shared memory (row stride
 * STRIDE); rows at or past s are zero-filled. One cp.async group is left open. */
template <typename T, int D, int STRIDE>
__device__ __forceinline__ void load_tile(T *sm, const T *g, int row0, int s)
{
    constexpr int EPC = 16 / sizeof(T); /* elements per 16-byte chunk */
    constexpr int CPR = D / EPC;        /* chunks per row */
    static_assert((64 * CPR) % NT == 0, "tile chunks");
#pragma unroll
    for (int i = 0; i < 64 * CPR / NT; i++) {
        int c = (int)threadIdx.x + i * NT;
        int r = c / CPR, ch = c - r * CPR;
        int gr = row0 + r;
        bool valid = gr < s;
        cp_async16(sm + r * STRIDE + ch * EPC, g + (size_t)(valid ? gr : 0) * D + ch * EPC, valid);
    }
}

/* Q fragments of a warp's 16 rows, kept in registers (16-bit kinds). */
template <int KIND, int D>
__device__ __forceinline__ void load_q_frags(uint32_t (&qf)[D / 16][4], const typename Kind<KIND>::T *Qs, int r0,
                                             int lane)
{
    typedef Geo<KIND, D> G;
#pragma unroll
    for (int ks = 0; ks < D / 16; ks++) {
        const auto *p = Qs + (r0 + (lane & 7) + (((lane >> 3) & 1) << 3)) * G::QS + ks * 16 + ((lane >> 4) << 3);
        ldsm_x4(qf[ks][0], qf[ks][1], qf[ks][2], qf[ks][3], p);
    }
}

/* s[nt][.] = Q[r0..r0+16)·K[8nt..8nt+8)ᵀ for the tile's 64 keys, in the C layout:
 * s[nt][0..1] row g, cols 8nt + 2t + {0,1}; s[nt][2..3] the same for row g + 8. */
template <int KIND, int D, int QF>
__device__ __forceinline__ void qk_tile(float (&s)[8][4], const uint32_t (&qf)[QF][4], const typename Kind<KIND>::T *Qs,
                                        const typename Kind<KIND>::T *Ks, int r0, int lane)
{
    typedef Geo<KIND, D> G;
#pragma unroll
    for (int nt = 0; nt < 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
    if constexpr (Kind<KIND>::HALF) {
#pragma unroll
        for (int ks = 0; ks < D / 16; ks++) {
#pragma unroll
            for (int np = 0; np < 4; np++) {
                uint32_t b0, b1, b2, b3;
                const auto *p = Ks + (np * 16 + (lane & 7) + ((lane >> 4) << 3)) * G::KS + ks * 16 +
                                (((lane >> 3) & 1) << 3);
                ldsm_x4(b0, b1, b2, b3, p);
                mma16<KIND>(s[2 * np], qf[ks], b0, b1);
                mma16<KIND>(s[2 * np + 1], qf[ks], b2, b3);
            }
        }
    } else {
        const int g = lane >> 2, t = lane & 3;
#pragma unroll 4
        for (int kk = 0; kk < D / 8; kk++) {
            const float *q0 = Qs + (r0 + g) * G::QS + kk * 8 + t, *q1 = q0 + 8 * G::QS;
            float a[4] = {q0[0], q1[0], q0[4], q1[4]};
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                const float *kp = Ks + (nt * 8 + g) * G::KS + kk * 8 + t;
                mma_f32<(bool)Kind<KIND>::SPLIT>(s[nt], a, kp[0], kp[4]);
            }
        }
    }
}

/* o[dt][.] += P·V[64 keys, D] with P in s (C layout, fp32 probabilities). */
template <int KIND, int D>
__device__ __forceinline__ void pv_tile(float (&o)[D / 8][4], const float (&s)[8][4], const typename Kind<KIND>::T *Vs,
                                        int lane)
{
    typedef Geo<KIND, D> G;
    if constexpr (Kind<KIND>::HALF) {
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint32_t a[4];
            if (KIND == FCK_BF16) {
                a[0] = fck::pack2_bf16(s[2 * j][0], s[2 * j][1]);
                a[1] = fck::pack2_bf16(s[2 * j][2], s[2 * j][3]);
                a[2] = fck::pack2_bf16(s[2 * j + 1][0], s[2 * j + 1][1]);
                a[3] = fck::pack2_bf16(s[2 * j + 1][2], s[2 * j + 1][3]);
            } else {
                a[0] = fck::pack2_f16(s[2 * j][0], s[2 * j][1]);
                a[1] = fck::pack2_f16(s[2 * j][2], s[2 * j][3]);
                a[2] = fck::pack2_f16(s[2 * j + 1][0], s[2 * j + 1][1]);
                a[3] = fck::pack2_f16(s[2 * j + 1][2], s[2 * j + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t b0, b1, b2, b3;
                const auto *p = Vs + (j * 16 + (lane & 7) + (((lane >> 3) & 1) << 3)) * G::VS + dp * 16 +
                                ((lane >> 4) << 3);
                ldsm_x4_trans(b0, b1, b2, b3, p);
                mma16<KIND>(o[2 * dp], a, b0, b1);
                mma16<KIND>(o[2 * dp + 1], a, b2, b3);
            }
        }
    } else {
        const int g = lane >> 2, t = lane & 3;
        const int src1 = (lane & ~3) | (t >> 1), src2 = src1 + 2;
        const bool odd = t & 1;
#pragma unroll
        for (int kk = 0; kk < 8; kk++) {
            /* A fragment (rows g, g+8; cols t, t+4 of keys 8kk..8kk+8) from the C layout
             * (cols 2t', 2t'+1 held by lane t'): col c sits in lane c/2, element c%2. */
            float x0 = __shfl_sync(0xffffffffu, s[kk][0], src1), x1 = __shfl_sync(0xffffffffu, s[kk][1], src1);
            float y0 = __shfl_sync(0xffffffffu, s[kk][2], src1), y1 = __shfl_sync(0xffffffffu, s[kk][3], src1);
            float z0 = __shfl_sync(0xffffffffu, s[kk][0], src2), z1 = __shfl_sync(0xffffffffu, s[kk][1], src2);
            float w0 = __shfl_sync(0xffffffffu, s[kk][2], src2), w1 = __shfl_sync(0xffffffffu, s[kk][3], src2);
            float a[4] = {odd ? x1 : x0, odd ? y1 : y0, odd ? z1 : z0, odd ? w1 : w0};
#pragma unroll
            for (int nt = 0; nt < D / 8; nt++) {
                const float *vp = Vs + (kk * 8 + t) * G::VS + nt * 8 + g;
                mma_f32<(bool)Kind<KIND>::SPLIT>(o[nt], a, vp[0], vp[4 * G::VS]);
            }
        }
    }
}

/* Scales a tile's scores by sl2 (log2(e)/√d) and masks keys past skv and, when causal,
 * keys after the query's last key (kl0, kl1 for rows g and g+8); returns the max of rows
 * g and g+8 over the 4 lanes of a row. */
__device__ __forceinline__ void scale_mask(float (&s)[8][4], float sl2, bool need_mask, int k0, int SKV, int causal,
                                           int kl0, int kl1, int t, float &mx0, float &mx1)
{
    mx0 = -INFINITY;
    mx1 = -INFINITY;
#pragma unroll
    for (int nt = 0; nt < 8; nt++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float v0 = s[nt][e] * sl2, v1 = s[nt][2 + e] * sl2;
            if (need_mask) {
                int kj = k0 + nt * 8 + 2 * t + e;
                if (fck_attn_masked(kj, kl0, SKV, causal)) v0 = -INFINITY;
                if (fck_attn_masked(kj, kl1, SKV, causal)) v1 = -INFINITY;
            }
            s[nt][e] = v0;
            s[nt][2 + e] = v1;
            mx0 = fmaxf(mx0, v0);
            mx1 = fmaxf(mx1, v1);
        }
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
}

/* Online softmax step: new running max m, rescale factors of the old sums, and s
 * turned into exp2(s - m); lane-partial row sums added to l. */
__device__ __forceinline__ void online_softmax(float (&s)[8][4], float mx0, float mx1, float &m0, float &m1, float &l0,
                                               float &l1, float &al0, float &al1)
{
    float mn0 = fmaxf(m0, mx0), mn1 = fmaxf(m1, mx1);
    float b0 = mn0 == -INFINITY ? 0.0f : mn0, b1 = mn1 == -INFINITY ? 0.0f : mn1;
    al0 = exp2f(m0 - b0); /* m = -inf: 0 */
    al1 = exp2f(m1 - b1);
    m0 = mn0;
    m1 = mn1;
    float r0 = 0.0f, r1 = 0.0f;
#pragma unroll
    for (int nt = 0; nt < 8; nt++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            s[nt][e] = exp2f(s[nt][e] - b0);
            s[nt][2 + e] = exp2f(s[nt][2 + e] - b1);
            r0 += s[nt][e];
            r1 += s[nt][2 + e];
        }
    }
    l0 = l0 * al0 + r0;
    l1 = l1 * al1 + r1;
}

/* ---------------------------------------------------------------- flash attention
 * 1-D grid of bh·ntiles blocks (fck_attn_block), 128 threads. Per key tile: V's load
 * overlaps QKᵀ, the next K's load overlaps P·V. */
template <int KIND, int D>
__global__ void __launch_bounds__(NT)
    flash_kernel(const typename Kind<KIND>::T *__restrict__ Q, const typename Kind<KIND>::T *__restrict__ K,
                 const typename Kind<KIND>::T *__restrict__ V, typename Kind<KIND>::T *__restrict__ O, int S, int SKV,
                 int group, int ntiles, float sl2, int causal)
{
    typedef typename Kind<KIND>::T T;
    typedef Geo<KIND, D> G;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *Qs = reinterpret_cast<T *>(smem_raw);
    T *Ks = Qs + BR * G::QS;
    T *Vs = Ks + BC * G::KS;

    uint32_t head, qt;
    fck_attn_block(blockIdx.x, (uint32_t)ntiles, &head, &qt);
    const int q0 = (int)qt * BR;
    const size_t hoff = (size_t)head * (size_t)S * D;
    const size_t kvoff = (size_t)fck_attn_kv_head(head, (uint32_t)group) * (size_t)SKV * D;
    const T *Qh = Q + hoff, *Kh = K + kvoff, *Vh = V + kvoff;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    /* rows g and g + 8 of the warp by their queries' last keys (the loop needs no more;
     * the queries come back for the output) */
    const int r0 = warp * 16, klo = fck_attn_last_key(q0, S, SKV), kl0 = klo + r0 + g;
    const int nkt = fck_attn_key_tiles(q0, BR, BC, S, SKV, causal);

    load_tile<T, D, G::QS>(Qs, Qh, q0, S);
    cp_async_commit();
    load_tile<T, D, G::KS>(Ks, Kh, 0, SKV);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    constexpr int QF = Kind<KIND>::HALF ? D / 16 : 1;
    uint32_t qf[QF][4];
    if constexpr (Kind<KIND>::HALF) load_q_frags<KIND, D>(qf, Qs, r0, lane);

    float o[D / 8][4];
#pragma unroll
    for (int i = 0; i < D / 8; i++) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;

    for (int kt = 0; kt < nkt; kt++) {
        const int k0 = kt * BC;
        load_tile<T, D, G::VS>(Vs, Vh, k0, SKV);
        cp_async_commit();
        if (kt > 0) {
            cp_async_wait<1>(); /* this tile's K */
            __syncthreads();
        }
        float s[8][4];
        qk_tile<KIND, D, QF>(s, qf, Qs, Ks, r0, lane);
        const bool need_mask = fck_attn_tile_needs_mask(k0, BC, SKV, causal, klo);
        float mx0, mx1, al0, al1;
        scale_mask(s, sl2, need_mask, k0, SKV, causal, kl0, kl0 + 8, t, mx0, mx1);
        online_softmax(s, mx0, mx1, m0, m1, l0, l1, al0, al1);
#pragma unroll
        for (int i = 0; i < D / 8; i++) {
            o[i][0] *= al0;
            o[i][1] *= al0;
            o[i][2] *= al1;
            o[i][3] *= al1;
        }
        cp_async_wait<0>(); /* this tile's V */
        __syncthreads();    /* ... and every warp is done with K */
        if (kt + 1 < nkt) {
            load_tile<T, D, G::KS>(Ks, Kh, k0 + BC, SKV);
            cp_async_commit();
        }
        pv_tile<KIND, D>(o, s, Vs, lane);
        __syncthreads(); /* every warp is done with V */
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    const int qi0 = kl0 - (SKV - S), qi1 = qi0 + 8;
    T *Oh = O + hoff;
#pragma unroll
    for (int i = 0; i < D / 8; i++) {
        const int col = i * 8 + 2 * t;
        if constexpr (Kind<KIND>::HALF) {
            uint32_t w0, w1;
            if (KIND == FCK_BF16) {
                w0 = fck::pack2_bf16(o[i][0] * inv0, o[i][1] * inv0);
                w1 = fck::pack2_bf16(o[i][2] * inv1, o[i][3] * inv1);
            } else {
                w0 = fck::pack2_f16(o[i][0] * inv0, o[i][1] * inv0);
                w1 = fck::pack2_f16(o[i][2] * inv1, o[i][3] * inv1);
            }
            if (qi0 < S) *reinterpret_cast<uint32_t *>(Oh + (size_t)qi0 * D + col) = w0;
            if (qi1 < S) *reinterpret_cast<uint32_t *>(Oh + (size_t)qi1 * D + col) = w1;
        } else {
            if (qi0 < S)
                *reinterpret_cast<float2 *>(Oh + (size_t)qi0 * D + col) = make_float2(o[i][0] * inv0, o[i][1] * inv0);
            if (qi1 < S)
                *reinterpret_cast<float2 *>(Oh + (size_t)qi1 * D + col) = make_float2(o[i][2] * inv1, o[i][3] * inv1);
        }
    }
}

/* ---------------------------------------------------------------- QKᵀ + softmax
 * 1-D grid of bh·ntiles blocks (fck_attn_block), 128 threads. Sweep 1 over the key
 * tiles (K double-buffered)
 * finds each row's max and sum; sweep 2 recomputes each tile and writes
 * exp2(x - max)/sum through a per-warp staging tile, 16 bytes per store where the
 * row length allows. */
template <int KIND, int D>
__global__ void __launch_bounds__(NT, 1)
    qk_softmax_kernel(const typename Kind<KIND>::T *__restrict__ Q, const typename Kind<KIND>::T *__restrict__ K,
                      typename Kind<KIND>::T *__restrict__ P, int S, int SKV, int group, int ntiles, float sl2,
                      int causal)
{
    typedef typename Kind<KIND>::T T;
    typedef Geo<KIND, D> G;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *Qs = reinterpret_cast<T *>(smem_raw);
    T *Kb0 = Qs + BR * G::QS; /* two K buffers, BC * KS apart */
    T *Stage = Qs + BR * G::QS + 2 * BC * G::KS;

    uint32_t head, qt;
    fck_attn_block(blockIdx.x, (uint32_t)ntiles, &head, &qt);
    const int q0 = (int)qt * BR;
    const size_t hoff = (size_t)head * (size_t)S * D;
    const T *Qh = Q + hoff, *Kh = K + (size_t)fck_attn_kv_head(head, (uint32_t)group) * (size_t)SKV * D;
    T *Ph = P + (size_t)head * (size_t)S * (size_t)SKV;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int r0 = warp * 16, klo = fck_attn_last_key(q0, S, SKV), kl0 = klo + r0 + g;
    const int nkt_all = fck_attn_key_tiles(0, 1, BC, 1, SKV, 0);
    const int nkt = fck_attn_key_tiles(q0, BR, BC, S, SKV, causal);
    T *st = Stage + warp * 16 * G::OS;

    load_tile<T, D, G::QS>(Qs, Qh, q0, S);
    cp_async_commit();
    load_tile<T, D, G::KS>(Kb0, Kh, 0, SKV);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();

    constexpr int QF = Kind<KIND>::HALF ? D / 16 : 1;
    uint32_t qf[QF][4];
    if constexpr (Kind<KIND>::HALF) load_q_frags<KIND, D>(qf, Qs, r0, lane);

    /* sweep 1: row max and sum */
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    for (int kt = 0; kt < nkt; kt++) {
        const int k0 = kt * BC;
        if (kt + 1 < nkt) {
            load_tile<T, D, G::KS>(Kb0 + ((kt + 1) & 1) * (BC * G::KS), Kh, k0 + BC, SKV);
            cp_async_commit();
        }
        float s[8][4];
        qk_tile<KIND, D, QF>(s, qf, Qs, Kb0 + (kt & 1) * (BC * G::KS), r0, lane);
        const bool need_mask = fck_attn_tile_needs_mask(k0, BC, SKV, causal, klo);
        float mx0, mx1, al0, al1;
        scale_mask(s, sl2, need_mask, k0, SKV, causal, kl0, kl0 + 8, t, mx0, mx1);
        online_softmax(s, mx0, mx1, m0, m1, l0, l1, al0, al1);
        cp_async_wait<0>();
        __syncthreads();
    }
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    const float b0 = m0 == -INFINITY ? 0.0f : m0, b1 = m1 == -INFINITY ? 0.0f : m1;

    /* sweep 2: P, tile by tile */
    load_tile<T, D, G::KS>(Kb0, Kh, 0, SKV);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    constexpr int EPC = 16 / sizeof(T);
    const bool vec = ((size_t)SKV * sizeof(T)) % 16 == 0;
    for (int kt = 0; kt < nkt_all; kt++) {
        const int k0 = kt * BC;
        float s[8][4];
        if (kt < nkt) {
            if (kt + 1 < nkt) {
                load_tile<T, D, G::KS>(Kb0 + ((kt + 1) & 1) * (BC * G::KS), Kh, k0 + BC, SKV);
                cp_async_commit();
            }
            qk_tile<KIND, D, QF>(s, qf, Qs, Kb0 + (kt & 1) * (BC * G::KS), r0, lane);
            const bool need_mask = fck_attn_tile_needs_mask(k0, BC, SKV, causal, klo);
            float mx0, mx1;
            scale_mask(s, sl2, need_mask, k0, SKV, causal, kl0, kl0 + 8, t, mx0, mx1);
#pragma unroll
            for (int nt = 0; nt < 8; nt++) {
                s[nt][0] = exp2f(s[nt][0] - b0) * inv0;
                s[nt][1] = exp2f(s[nt][1] - b0) * inv0;
                s[nt][2] = exp2f(s[nt][2] - b1) * inv1;
                s[nt][3] = exp2f(s[nt][3] - b1) * inv1;
            }
        } else { /* wholly past the rows' last keys */
#pragma unroll
            for (int nt = 0; nt < 8; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
        }
        /* the warp's 16 x 64 tile through shared memory, SC columns at a time (fp32: two
         * passes of 32, so that two blocks fit on an SM at d = 128), then out in rows */
        constexpr int PASSES = BC / G::SC, NTP = G::SC / 8, CPR = G::SC / EPC;
#pragma unroll
        for (int pass = 0; pass < PASSES; pass++) {
#pragma unroll
            for (int j = 0; j < NTP; j++) {
                const int nt = pass * NTP + j, c = j * 8 + 2 * t;
                if constexpr (Kind<KIND>::HALF) {
                    const bool bf = KIND == FCK_BF16;
                    uint32_t w0 = bf ? fck::pack2_bf16(s[nt][0], s[nt][1]) : fck::pack2_f16(s[nt][0], s[nt][1]);
                    uint32_t w1 = bf ? fck::pack2_bf16(s[nt][2], s[nt][3]) : fck::pack2_f16(s[nt][2], s[nt][3]);
                    *reinterpret_cast<uint32_t *>(st + g * G::OS + c) = w0;
                    *reinterpret_cast<uint32_t *>(st + (g + 8) * G::OS + c) = w1;
                } else {
                    *reinterpret_cast<float2 *>(st + g * G::OS + c) = make_float2(s[nt][0], s[nt][1]);
                    *reinterpret_cast<float2 *>(st + (g + 8) * G::OS + c) = make_float2(s[nt][2], s[nt][3]);
                }
            }
            __syncwarp();
            const int kc = k0 + pass * G::SC; /* the pass's first key */
            if (vec) {
#pragma unroll
                for (int i = 0; i < 16 * CPR / 32; i++) {
                    const int c = lane + i * 32, rr = c / CPR, ch = c - rr * CPR;
                    const int gi = q0 + r0 + rr, gj = kc + ch * EPC;
                    if (gi < S && gj < SKV)
                        fck::st16(Ph + (size_t)gi * SKV + gj, fck::ld16(st + rr * G::OS + ch * EPC));
                }
            } else {
                for (int c = lane; c < 16 * G::SC; c += 32) {
                    const int rr = c / G::SC, cc = c - rr * G::SC;
                    const int gi = q0 + r0 + rr, gj = kc + cc;
                    if (gi < S && gj < SKV) Ph[(size_t)gi * SKV + gj] = st[rr * G::OS + cc];
                }
            }
            __syncwarp();
        }
        if (kt < nkt) {
            cp_async_wait<0>();
            __syncthreads();
        }
    }
}

/* ---------------------------------------------------------------- launchers */

/* Raises a kernel's dynamic shared memory limit to what it uses, once per kernel: the
 * launchers and the occupancy query in resources() both need it (above 48 KiB a launch
 * fails and the occupancy calculator answers 0 blocks without it). */
template <int KIND, int D>
cudaError_t configure(int qks)
{
    typedef Geo<KIND, D> G;
    static bool done[2] = {false, false};
    if (done[qks]) return cudaSuccess;
    cudaError_t e = qks ? cudaFuncSetAttribute(qk_softmax_kernel<KIND, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)G::qks_smem)
                        : cudaFuncSetAttribute(flash_kernel<KIND, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)G::flash_smem);
    done[qks] = e == cudaSuccess;
    return e;
}

template <int KIND, int D>
cudaError_t launch_flash(const void *q, const void *k, const void *v, void *o, const fck_attn_shape &sh,
                         cudaStream_t stream)
{
    typedef typename Kind<KIND>::T T;
    typedef Geo<KIND, D> G;
    cudaError_t e = configure<KIND, D>(0);
    if (e != cudaSuccess) return e;
    const long long blocks = fck_attn_grid_blocks(sh.bh, sh.s, BR);
    if (blocks < 0) return cudaErrorInvalidValue;
    const float sl2 = LOG2E / sqrtf((float)D);
    flash_kernel<KIND, D>
        <<<(unsigned)blocks, NT, G::flash_smem, stream>>>(static_cast<const T *>(q), static_cast<const T *>(k),
                                                          static_cast<const T *>(v), static_cast<T *>(o), sh.s, sh.skv,
                                                          sh.group, (sh.s + BR - 1) / BR, sl2, sh.causal);
    return cudaGetLastError();
}

template <int KIND, int D>
cudaError_t launch_qks(const void *q, const void *k, void *p, const fck_attn_shape &sh, cudaStream_t stream)
{
    typedef typename Kind<KIND>::T T;
    typedef Geo<KIND, D> G;
    cudaError_t e = configure<KIND, D>(1);
    if (e != cudaSuccess) return e;
    const long long blocks = fck_attn_grid_blocks(sh.bh, sh.s, BR);
    if (blocks < 0) return cudaErrorInvalidValue;
    const float sl2 = LOG2E / sqrtf((float)D);
    qk_softmax_kernel<KIND, D>
        <<<(unsigned)blocks, NT, G::qks_smem, stream>>>(static_cast<const T *>(q), static_cast<const T *>(k),
                                                        static_cast<T *>(p), sh.s, sh.skv, sh.group,
                                                        (sh.s + BR - 1) / BR, sl2, sh.causal);
    return cudaGetLastError();
}

template <int KIND, int D>
int resources(int qks, char *buf, size_t n)
{
    cudaFuncAttributes a;
    const char *name = qks ? "qk_softmax" : "flash";
    const size_t smem = qks ? Geo<KIND, D>::qks_smem : Geo<KIND, D>::flash_smem;
    cudaError_t e = qks ? cudaFuncGetAttributes(&a, qk_softmax_kernel<KIND, D>)
                        : cudaFuncGetAttributes(&a, flash_kernel<KIND, D>);
    if (e != cudaSuccess)
        return snprintf(buf, n, "%s<%s,d=%d>: attributes unavailable (%s)", name, kind_name(KIND), D,
                        cudaGetErrorString(e));
    int per_sm = 0;
    e = configure<KIND, D>(qks);
    if (e == cudaSuccess)
        e = qks ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, qk_softmax_kernel<KIND, D>, NT, smem)
                : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flash_kernel<KIND, D>, NT, smem);
    if (e != cudaSuccess)
        return snprintf(buf, n, "%s<%s,d=%d>: occupancy unavailable (%s)", name, kind_name(KIND), D,
                        cudaGetErrorString(e));
    return snprintf(buf, n,
                    "%s<%s,d=%d>: 64x64 tiles, 4 warps x 16 rows, %d regs, %zu B dynamic smem, %zu B local, "
                    "%d blocks/SM",
                    name, kind_name(KIND), D, a.numRegs, smem, (size_t)a.localSizeBytes, per_sm);
}

} // namespace

extern "C" int fck_attention_supports(int d) { return d == 64 || d == 128; }

static const char *const fck_attn_kernel_names[FCK_ATTN_NKERNELS] = {"reference", "flash2"};

extern "C" const char *fck_attention_kernel_name(fck_attn_kernel kernel)
{
    return (unsigned)kernel < FCK_ATTN_NKERNELS ? fck_attn_kernel_names[kernel] : NULL;
}

extern "C" int fck_attention_kernel_parse(const char *name)
{
    for (int i = 0; name && i < FCK_ATTN_NKERNELS; i++)
        if (strcmp(name, fck_attn_kernel_names[i]) == 0) return i;
    return -1;
}

#define FCK_DISPATCH(FN, ...)                                                                       \
    switch (dt) {                                                                                   \
    case FCK_FP32: return d == 64 ? FN<FCK_FP32, 64>(__VA_ARGS__) : FN<FCK_FP32, 128>(__VA_ARGS__); \
    case FCK_TF32: return d == 64 ? FN<FCK_TF32, 64>(__VA_ARGS__) : FN<FCK_TF32, 128>(__VA_ARGS__); \
    case FCK_BF16: return d == 64 ? FN<FCK_BF16, 64>(__VA_ARGS__) : FN<FCK_BF16, 128>(__VA_ARGS__); \
    case FCK_FP16: return d == 64 ? FN<FCK_FP16, 64>(__VA_ARGS__) : FN<FCK_FP16, 128>(__VA_ARGS__); \
    }

static bool fck_attn_args_ok(fck_attn_kernel kernel, fck_dtype dt, int d)
{
    return (unsigned)kernel < FCK_ATTN_NKERNELS && (unsigned)dt <= FCK_FP16 && fck_attention_supports(d);
}

/* bh a multiple of group; causal needs skv >= s (else the first queries see no key) */
static bool fck_attn_shape_ok(const fck_attn_shape &sh)
{
    return sh.bh >= 1 && sh.s >= 1 && sh.skv >= 1 && sh.group >= 1 && sh.bh % sh.group == 0 &&
           (!sh.causal || sh.skv >= sh.s);
}

extern "C" cudaError_t fck_flash_attention_v(fck_attn_kernel kernel, fck_dtype dt, const void *q, const void *k,
                                             const void *v, void *o, fck_attn_shape sh, cudaStream_t stream)
{
    const int d = sh.d;
    if (!fck_attn_args_ok(kernel, dt, d) || !fck_attn_shape_ok(sh)) return cudaErrorInvalidValue;
    if (kernel == FCK_ATTN_FLASH2) return fck::flash2_attention(dt, q, k, v, o, sh, stream);
    FCK_DISPATCH(launch_flash, q, k, v, o, sh, stream)
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t fck_qk_softmax_v(fck_attn_kernel kernel, fck_dtype dt, const void *q, const void *k, void *p,
                                        fck_attn_shape sh, cudaStream_t stream)
{
    const int d = sh.d;
    if (!fck_attn_args_ok(kernel, dt, d) || !fck_attn_shape_ok(sh)) return cudaErrorInvalidValue;
    if (kernel == FCK_ATTN_FLASH2) return fck::flash2_qk_softmax(dt, q, k, p, sh, stream);
    FCK_DISPATCH(launch_qks, q, k, p, sh, stream)
    return cudaErrorInvalidValue;
}

extern "C" int fck_attention_resources_v(fck_attn_kernel kernel, fck_dtype dt, int d, int qk_softmax, char *buf,
                                         size_t n)
{
    if (!fck_attn_args_ok(kernel, dt, d))
        return snprintf(buf, n, "kernel %d, dtype %d, d=%d unsupported", (int)kernel, (int)dt, d);
    if (kernel == FCK_ATTN_FLASH2) return fck::flash2_resources(dt, d, qk_softmax, buf, n);
    FCK_DISPATCH(resources, qk_softmax, buf, n)
    return snprintf(buf, n, "unknown dtype");
}

extern "C" cudaError_t fck_flash_attention(fck_dtype dt, const void *q, const void *k, const void *v, void *o,
                                           fck_attn_shape sh, cudaStream_t stream)
{
    return fck_flash_attention_v(FCK_ATTN_REFERENCE, dt, q, k, v, o, sh, stream);
}

extern "C" cudaError_t fck_qk_softmax(fck_dtype dt, const void *q, const void *k, void *p, fck_attn_shape sh,
                                      cudaStream_t stream)
{
    return fck_qk_softmax_v(FCK_ATTN_REFERENCE, dt, q, k, p, sh, stream);
}

extern "C" int fck_attention_resources(fck_dtype dt, int d, int qk_softmax, char *buf, size_t n)
{
    return fck_attention_resources_v(FCK_ATTN_REFERENCE, dt, d, qk_softmax, buf, n);
}
