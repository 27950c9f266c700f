/* flash2.cu — FlashAttention-2-class kernels: flash attention (O = softmax(Q·Kᵀ/√d)·V) and
 * the fused QKᵀ + softmax that writes P, on 128-query blocks.
 *
 * Shapes: Q, O [bh, s, d], K, V [bh/group, skv, d], P [bh, s, skv], row-major, d = 64 or
 * 128; query head n reads key/value head n / group (grouped-query attention).
 *
 * Grid: 1-D, bh·ceil(s/128) blocks of 128 threads; fck_attn_block maps a block to its
 * head and query tile, query tile fastest (the blocks in flight share a few heads' K/V
 * in L2), heaviest causal tile first within a head.
 *
 * Block: 4 warps, warp w owns query rows [32w, 32w + 32) of the block as two m16 tiles, so
 * every K/V fragment read from shared memory feeds two MMAs. Key tiles of bc keys stream
 * through two buffers with cp.async: at the top of iteration kt one wait and one barrier
 * make tile kt visible and retire every warp's reads of tile kt - 1, whose buffer then
 * takes tile kt + 1 while tile kt is computed — one barrier per key tile, each load
 * hidden behind a whole tile of compute. Rows are stored swizzled (kernel_logic.h: chunk c
 * of row r at c ^ x(r)), not padded: every ldmatrix phase and fragment load is free of
 * bank conflicts (checked on the host by tests/test_kernel_logic.c).
 *
 * Registers bound the key tile (fck_f2_bc): O's accumulators take D regs per thread
 * (2 m-tiles x D/8 n-tiles x 4) and the scores bc/2, so bc is 64 at d = 64 and 32 at
 * d = 128 (fp32's split operands: 32 and 16); Q·Kᵀ walks the k-steps two at a time so
 * that ptxas does not hoist every fragment of the tile. No instance spills (ptxas -v,
 * and the build fails on a spill). Rescaling O is skipped by a warp whose rows' maxima
 * did not grow (alpha exactly 1), most tiles after the first few.
 *
 * Tensor cores, fp32 accumulation:
 *   bf16, fp16  mma.sync m16n8k16; Q and K fragments by ldmatrix, V by ldmatrix.trans; P
 *               goes from the Q·Kᵀ accumulators into the A operand of P·V as it stands
 *               (the C layout of two n-tiles is the A layout of one k-step).
 *   tf32        m16n8k8 on operands rounded to tf32 (cvt.rna); Q is rounded in place once
 *               per block. The keys of each n-tile are permuted (fck_perm_key) so that the
 *               C layout of Q·Kᵀ is the A layout of P·V: no shuffles.
 *   fp32        the tf32 path with each operand split into big + small tf32 parts and three
 *               products; flash splits Q once per block into two shared buffers; K, V and
 *               P are split as their fragments are read, once per k-step (not per n-tile).
 *
 * Output: each warp stages its 32 rows of O (or its 32 x bc tile of P) in shared memory
 * over its own, no longer needed, rows of Q (fp32 qk_softmax, which reads Q to the end:
 * a staging area of its own), then writes them with 16-byte stores, whole rows per warp.
 *
 * Causal: query i sees keys j <= i + skv − s (its last key, fck_attn_last_key); only the
 * key tiles up to the block's last query's last key are visited (fck_attn_key_tiles), a
 * warp whose rows' last keys all precede a tile skips it, and only tiles that cross the
 * diagonal or the end of the keys are masked.
 *
 * Napkin math (bf16, b=4, h=16, s=4096, d=128, non-causal): 4·b·h·s²·d = 549.8 GFLOP.
 * HBM: Q, K, V read once (K and V of a head stay in L2 while its 32 query tiles run)
 * and O written once: 4·64·4096·128·2 B = 268 MB, 0.09 ms at 3 TB/s. L2 -> SM: every
 * block reads its head's whole K and V, 2·4096·128·2 B = 2 MiB, 4.3 GB in all. Compute-
 * bound: mma.sync FlashAttention-2 runs at ~350 TFLOP/s on an H100 (~1.6 ms here); the
 * wgmma kernels behind PyTorch's SDPA reach ~600. Shared memory and blocks per SM:
 * fck_f2_smem, fck_attention_resources_v (bf16 d=128: 64 KiB and 242 registers, 2 blocks
 * of 4 warps per SM, bounded by registers).
 */
#include "attention_common.cuh"

#include <stdio.h>

namespace fck {

/* The compile-time shape of one kernel instance. */
template <int KIND, int D, bool QKS>
struct F2 {
    typedef typename Kind<KIND>::T T;
    static constexpr bool HALF = Kind<KIND>::HALF, SPLIT = Kind<KIND>::SPLIT;
    static constexpr int E = (int)sizeof(T), EPC = 16 / E; /* elements per 16-byte chunk */
    static constexpr int BR = FCK_F2_BR, NT = 32 * FCK_F2_WARPS;
    static constexpr int BC = fck_f2_bc(E, SPLIT, D, QKS), NTS = BC / 8; /* keys, n-tiles per key tile */
    static constexpr bool QSPLIT = fck_f2_q_split(SPLIT, QKS);
    static constexpr bool PERM = !HALF; /* tf32 key order within an n-tile */
    /* Q rounded (tf32) or split (fp32 flash) in place once per block; fp32 qk_softmax
     * keeps Q as it is and splits its fragments as they are read */
    static constexpr bool PREP_Q = !HALF && (QSPLIT || !SPLIT);
    /* swizzles: Q, K; V (fp32 reads 4 rows x 2 chunks); O staging (fp32 writes float2 pairs) */
    static constexpr int MQ = FCK_SWZ_ROW8, MV = HALF ? FCK_SWZ_ROW8 : FCK_SWZ_ROW4X2, MO = MV, MP = FCK_SWZ_ROW8;
    /* element offsets in shared memory: Q (and its small parts), K x2, V x2 (flash) or the
     * P staging (fp32 qk_softmax) */
    static constexpr int Q_ELEMS = BR * D, KV_ELEMS = BC * D;
    static constexpr int OFF_K = Q_ELEMS * (QSPLIT ? 2 : 1);
    static constexpr int OFF_V = OFF_K + 2 * KV_ELEMS;
    static constexpr int OFF_END = QKS ? OFF_V + (HALF ? 0 : BR * BC) : OFF_V + 2 * KV_ELEMS;
    static constexpr size_t SMEM = fck_f2_smem(E, SPLIT, D, QKS);
    static_assert((size_t)OFF_END * E == SMEM, "shared-memory layout and fck_f2_smem agree");
    static_assert(!QKS || !HALF || BC <= D, "the P staging fits in a warp's rows of Q");
    static_assert(D % 64 == 0 && (D * E) % 128 == 0 && (!QKS || (BC * E) % 128 == 0), "rows of whole 128-byte lines");
};

namespace {

/* ---------------------------------------------------------------- tiles */

/* rows [row0, row0 + ROWS) of a head's [s, D] matrix into a swizzled tile; rows at or
 * past s are zero-filled. The chunks of each thread: fck_copy_row/fck_copy_chunk. */
template <typename T, int D, int ROWS, int MODE, int NT>
__device__ __forceinline__ void load_tile(T *sm, const T *g, int row0, int s, int tid)
{
    constexpr int EPC = 16 / sizeof(T), CPR = D / EPC;
    static_assert((ROWS * CPR) % NT == 0 && NT % CPR == 0, "whole chunks per thread");
    const int ch = fck_copy_chunk(tid, CPR);
#pragma unroll
    for (int i = 0; i < ROWS * CPR / NT; i++) {
        const int r = fck_copy_row(tid, i, NT, CPR), gr = row0 + r;
        const bool valid = gr < s;
        cp_async16(sm + fck_tile_off(r, ch * EPC, D, EPC, MODE), g + (size_t)(valid ? gr : 0) * D + ch * EPC, valid);
    }
}

/* tf32 kinds: Q's chunks that this thread copied (after its cp.async wait), rounded in
 * place (tf32) or split into big (in place) and small (Qsm) parts (fp32 flash). Other
 * warps read them after the next barrier. */
template <int KIND, int D, bool QKS>
__device__ __forceinline__ void prepare_q(float *Qs, float *Qsm, int tid)
{
    typedef F2<KIND, D, QKS> C;
    constexpr int CPR = D / 4;
#pragma unroll 4
    for (int i = 0; i < C::BR * CPR / C::NT; i++) {
        const int off = fck_tile_off(fck_copy_row(tid, i, C::NT, CPR), fck_copy_chunk(tid, CPR) * 4, D, 4, C::MQ);
        float x[4], big[4], small[4];
        fck::unpack<float>(fck::ld16(Qs + off), x);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            uint32_t b, sm;
            if (C::QSPLIT) tf32_split(x[j], b, sm);
            else
                b = tf32_rna(x[j]), sm = 0;
            big[j] = __uint_as_float(b);
            small[j] = __uint_as_float(sm);
        }
        fck::st16(Qs + off, fck::pack<float>(big));
        if (C::QSPLIT) fck::st16(Qsm + off, fck::pack<float>(small));
    }
}

/* A fragments (m16n8k16) of the warp's two m-tiles for k-step ks, from Q in shared memory. */
template <int KIND, int D, bool QKS>
__device__ __forceinline__ void q_frags_half(uint32_t (&a)[2][4], const typename Kind<KIND>::T *Qs, int r0, int ks,
                                             int lane)
{
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
        ldsm_x4(a[mi][0], a[mi][1], a[mi][2], a[mi][3],
                Qs + fck_tile_off(r0 + 16 * mi + fck_ldsm_a_row(lane), (2 * ks + fck_ldsm_a_chunk(lane)) * 8, D, 8,
                                  F2<KIND, D, QKS>::MQ));
}

/* ---------------------------------------------------------------- Q·Kᵀ
 * s[mi][nt][i] = Q[r0 + 16mi + ..]·K[8nt + ..] for the tile's BC keys, C layout; the key
 * of element i is 8nt + fck_c_key(lane, i, PERM). 16-bit kinds take Q's fragments from
 * qf (QREG) or from shared memory. */
template <int KIND, int D, bool QKS, bool QREG>
__device__ __forceinline__ void qk_tile(float (&s)[2][F2<KIND, D, QKS>::NTS][4], const uint32_t (*qf)[D / 16][4],
                                        const typename Kind<KIND>::T *Qs, const typename Kind<KIND>::T *Qsm,
                                        const typename Kind<KIND>::T *Kb, int r0, int lane)
{
    typedef F2<KIND, D, QKS> C;
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int nt = 0; nt < C::NTS; nt++) s[mi][nt][0] = s[mi][nt][1] = s[mi][nt][2] = s[mi][nt][3] = 0.0f;
    if constexpr (C::HALF) {
        /* two k-steps at a time from shared memory: ptxas would otherwise load every
         * fragment of the tile up front, which beside O's accumulators does not fit in
         * 255 registers (from registers, qf's index must be a constant) */
#pragma unroll(QREG ? D / 16 : 2)
        for (int ks = 0; ks < D / 16; ks++) {
            uint32_t a[2][4];
            if constexpr (QREG) {
#pragma unroll
                for (int mi = 0; mi < 2; mi++)
#pragma unroll
                    for (int i = 0; i < 4; i++) a[mi][i] = qf[mi][ks][i];
            } else {
                q_frags_half<KIND, D, QKS>(a, Qs, r0, ks, lane);
            }
#pragma unroll
            for (int np = 0; np < C::NTS / 2; np++) {
                uint32_t b[4];
                ldsm_x4(b[0], b[1], b[2], b[3],
                        Kb + fck_tile_off(16 * np + fck_ldsm_b_row(lane), (2 * ks + fck_ldsm_b_chunk(lane)) * 8, D, 8,
                                          C::MQ));
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    mma16<KIND>(s[mi][2 * np], a[mi], b[0], b[1]);
                    mma16<KIND>(s[mi][2 * np + 1], a[mi], b[2], b[3]);
                }
            }
        }
    } else {
        const int g = fck_lane_g(lane), t = fck_lane_t(lane), kr = fck_perm_key(g);
#pragma unroll 1
        for (int kk = 0; kk < D / 8; kk++) {
            const int ca = 8 * kk + t, cb = ca + 4;
            uint32_t ab[2][4], as[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const int ra = r0 + 16 * mi + g, rb = ra + 8;
                const int o[4] = {fck_tile_off(ra, ca, D, 4, C::MQ), fck_tile_off(rb, ca, D, 4, C::MQ),
                                  fck_tile_off(ra, cb, D, 4, C::MQ), fck_tile_off(rb, cb, D, 4, C::MQ)};
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    if (C::SPLIT && !C::QSPLIT) {
                        tf32_split(Qs[o[i]], ab[mi][i], as[mi][i]);
                    } else { /* already tf32 (prepare_q) */
                        ab[mi][i] = __float_as_uint(Qs[o[i]]);
                        as[mi][i] = C::QSPLIT ? __float_as_uint(Qsm[o[i]]) : 0u;
                    }
                }
            }
#pragma unroll
            for (int nt = 0; nt < C::NTS; nt++) {
                const float y[2] = {Kb[fck_tile_off(8 * nt + kr, ca, D, 4, C::MQ)],
                                    Kb[fck_tile_off(8 * nt + kr, cb, D, 4, C::MQ)]};
                uint32_t bb[2], bs[2];
                to_tf32<C::SPLIT, 2>(y, bb, bs);
#pragma unroll
                for (int mi = 0; mi < 2; mi++) mma3<C::SPLIT>(s[mi][nt], ab[mi], as[mi], bb, bs);
            }
        }
    }
}

/* ---------------------------------------------------------------- softmax
 * Masks the tile (when need_mask) and takes each row's max over the row's four lanes:
 * mx[mi][h] for rows 16mi + g + 8h of the warp (query q = qw + that row, whose last key
 * is klw + that row: klw is the last key of the warp's first row). */
template <int NTS, bool PERM>
__device__ __forceinline__ void mask_max(float (&s)[2][NTS][4], float (&mx)[2][2], bool need_mask, int k0, int klw,
                                         int SKV, int causal, int lane)
{
    const int g = fck_lane_g(lane);
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int kl = klw + 16 * mi + g + 8 * h;
            float m = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < NTS; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    float v = s[mi][nt][2 * h + e];
                    if (need_mask && fck_attn_masked(k0 + 8 * nt + fck_c_key(lane, 2 * h + e, PERM), kl, SKV, causal))
                        v = -INFINITY;
                    s[mi][nt][2 * h + e] = v;
                    m = fmaxf(m, v);
                }
            mx[mi][h] = quad_max(m);
        }
}

/* Online softmax step over a masked tile: running max m, lane-partial sums l; s becomes
 * p = exp2(s·sl2 − m·sl2); alpha the factor for what was accumulated before. */
template <int NTS>
__device__ __forceinline__ void online_softmax(float (&s)[2][NTS][4], const float (&mx)[2][2], float (&m)[2][2],
                                               float (&l)[2][2], float (&alpha)[2][2], float sl2)
{
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float nb;
            alpha[mi][h] = fck_osm_step(&m[mi][h], mx[mi][h], sl2, &nb);
            float r = 0.0f;
#pragma unroll
            for (int nt = 0; nt < NTS; nt++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const float p = fck_osm_p(s[mi][nt][2 * h + e], sl2, nb);
                    s[mi][nt][2 * h + e] = p;
                    r += p;
                }
            l[mi][h] = l[mi][h] * alpha[mi][h] + r;
        }
}

/* ---------------------------------------------------------------- P·V
 * o[mi][nt] += P[rows of m-tile mi, the tile's BC keys]·V[keys, 8nt..8nt+8), P in s. */
template <int KIND, int D>
__device__ __forceinline__ void pv_tile(float (&o)[2][D / 8][4], const float (&s)[2][F2<KIND, D, false>::NTS][4],
                                        const typename Kind<KIND>::T *Vb, int lane)
{
    typedef F2<KIND, D, false> C;
    if constexpr (C::HALF) {
        /* P in 16-bit A fragments first (half the registers of the fp32 tile): pa[mi][j][i]
         * is n-tile 2j + i/2, elements 2(i%2), 2(i%2) + 1 */
        uint32_t pa[2][C::BC / 16][4];
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int j = 0; j < C::BC / 16; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const float *c = s[mi][2 * j + (i >> 1)] + 2 * (i & 1);
                    pa[mi][j][i] = KIND == FCK_BF16 ? fck::pack2_bf16(c[0], c[1]) : fck::pack2_f16(c[0], c[1]);
                }
#pragma unroll
        for (int j = 0; j < C::BC / 16; j++) {
#pragma unroll
            for (int dp = 0; dp < D / 16; dp++) {
                uint32_t b[4];
                ldsm_x4_trans(b[0], b[1], b[2], b[3],
                              Vb + fck_tile_off(16 * j + fck_ldsm_a_row(lane), (2 * dp + fck_ldsm_a_chunk(lane)) * 8, D,
                                                8, C::MV));
#pragma unroll
                for (int mi = 0; mi < 2; mi++) {
                    mma16<KIND>(o[mi][2 * dp], pa[mi][j], b[0], b[1]);
                    mma16<KIND>(o[mi][2 * dp + 1], pa[mi][j], b[2], b[3]);
                }
            }
        }
    } else {
        const int g = fck_lane_g(lane), t = fck_lane_t(lane);
#pragma unroll
        for (int kk = 0; kk < C::NTS; kk++) {
            /* with the permuted keys, lane t holds P[., 8kk + t] in c[0], c[2] and
             * P[., 8kk + t + 4] in c[1], c[3]: the A fragment is {c0, c2, c1, c3} */
            uint32_t ab[2][4], as[2][4];
#pragma unroll
            for (int mi = 0; mi < 2; mi++) {
                const float x[4] = {s[mi][kk][0], s[mi][kk][2], s[mi][kk][1], s[mi][kk][3]};
                to_tf32<C::SPLIT, 4>(x, ab[mi], as[mi]);
            }
            const int ra = 8 * kk + t, rb = ra + 4;
#pragma unroll
            for (int nt = 0; nt < D / 8; nt++) {
                const float y[2] = {Vb[fck_tile_off(ra, 8 * nt + g, D, 4, C::MV)],
                                    Vb[fck_tile_off(rb, 8 * nt + g, D, 4, C::MV)]};
                uint32_t bb[2], bs[2];
                to_tf32<C::SPLIT, 2>(y, bb, bs);
#pragma unroll
                for (int mi = 0; mi < 2; mi++) mma3<C::SPLIT>(o[mi][nt], ab[mi], as[mi], bb, bs);
            }
        }
    }
}

/* ---------------------------------------------------------------- flash attention */
template <int KIND, int D>
__global__ void __launch_bounds__(F2<KIND, D, false>::NT)
    flash2_kernel(const typename Kind<KIND>::T *__restrict__ Q, const typename Kind<KIND>::T *__restrict__ K,
                  const typename Kind<KIND>::T *__restrict__ V, typename Kind<KIND>::T *__restrict__ O, int S, int SKV,
                  int group, int ntiles, float sl2, int causal)
{
    typedef F2<KIND, D, false> C;
    typedef typename C::T T;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *Qs = reinterpret_cast<T *>(smem_raw);
    T *Qsm = Qs + C::Q_ELEMS; /* fp32: Q's small parts */
    T *Ks = Qs + C::OFF_K, *Vs = Qs + C::OFF_V;

    uint32_t head, qt;
    fck_attn_block(blockIdx.x, (uint32_t)ntiles, &head, &qt);
    const int q0 = (int)qt * C::BR;
    const size_t hoff = (size_t)head * (size_t)S * D;
    const size_t kvoff = (size_t)fck_attn_kv_head(head, (uint32_t)group) * (size_t)SKV * D;
    const T *Qh = Q + hoff, *Kh = K + kvoff, *Vh = V + kvoff;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
    const int r0 = 32 * warp, qw = q0 + r0; /* the warp's first row: in the block, in the head */
    const int klw = fck_attn_last_key(qw, S, SKV);
    const int nkt = fck_attn_key_tiles(q0, C::BR, C::BC, S, SKV, causal);

    load_tile<T, D, C::BR, C::MQ, C::NT>(Qs, Qh, q0, S, tid);
    load_tile<T, D, C::BC, C::MQ, C::NT>(Ks, Kh, 0, SKV, tid);
    load_tile<T, D, C::BC, C::MV, C::NT>(Vs, Vh, 0, SKV, tid);
    cp_async_commit();
    if constexpr (C::PREP_Q) {
        cp_async_wait<0>();
        prepare_q<KIND, D, false>(reinterpret_cast<float *>(Qs), reinterpret_cast<float *>(Qsm), tid);
    }

    float o[2][D / 8][4];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int i = 0; i < D / 8; i++) o[mi][i][0] = o[mi][i][1] = o[mi][i][2] = o[mi][i][3] = 0.0f;
    float m[2][2] = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}}, l[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};

    for (int kt = 0; kt < nkt; kt++) {
        cp_async_wait<0>(); /* tile kt, this thread's part */
        __syncthreads();    /* ... everyone's; and every warp is done with tile kt - 1 */
        if (kt + 1 < nkt) {
            const int nb = (kt + 1) & 1;
            load_tile<T, D, C::BC, C::MQ, C::NT>(Ks + nb * C::KV_ELEMS, Kh, (kt + 1) * C::BC, SKV, tid);
            load_tile<T, D, C::BC, C::MV, C::NT>(Vs + nb * C::KV_ELEMS, Vh, (kt + 1) * C::BC, SKV, tid);
            cp_async_commit();
        }
        const int k0 = kt * C::BC;
        if (fck_attn_tile_all_masked(k0, causal, klw + 31)) continue; /* warp-uniform */
        const T *Kb = Ks + (kt & 1) * C::KV_ELEMS, *Vb = Vs + (kt & 1) * C::KV_ELEMS;
        float s[2][C::NTS][4], mx[2][2], alpha[2][2];
        qk_tile<KIND, D, false, false>(s, nullptr, Qs, Qsm, Kb, r0, lane);
        mask_max<C::NTS, C::PERM>(s, mx, fck_attn_tile_needs_mask(k0, C::BC, SKV, causal, klw), k0, klw, SKV, causal,
                                  lane);
        online_softmax<C::NTS>(s, mx, m, l, alpha, sl2);
        /* alpha is exactly 1 where a row's max did not grow; most tiles after the first
         * few rescale nothing, and the warp skips the D/2 multiplies */
        if (__any_sync(0xffffffffu,
                       alpha[0][0] != 1.0f || alpha[0][1] != 1.0f || alpha[1][0] != 1.0f || alpha[1][1] != 1.0f)) {
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int i = 0; i < D / 8; i++) {
                    o[mi][i][0] *= alpha[mi][0];
                    o[mi][i][1] *= alpha[mi][0];
                    o[mi][i][2] *= alpha[mi][1];
                    o[mi][i][3] *= alpha[mi][1];
                }
        }
        pv_tile<KIND, D>(o, s, Vb, lane);
    }

    /* O / l through the warp's own rows of Q (no other warp reads them) */
    float inv[2][2];
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int h = 0; h < 2; h++) inv[mi][h] = 1.0f / quad_sum(l[mi][h]);
    T *st = Qs + r0 * D;
    const int g = fck_lane_g(lane), t = fck_lane_t(lane);
    __syncwarp();
#pragma unroll
    for (int mi = 0; mi < 2; mi++)
#pragma unroll
        for (int i = 0; i < D / 8; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int off = fck_tile_off(16 * mi + g + 8 * h, 8 * i + 2 * t, D, C::EPC, C::MO);
                const float x0 = o[mi][i][2 * h] * inv[mi][h], x1 = o[mi][i][2 * h + 1] * inv[mi][h];
                if constexpr (C::HALF)
                    *reinterpret_cast<uint32_t *>(st + off) = KIND == FCK_BF16 ? fck::pack2_bf16(x0, x1)
                                                                               : fck::pack2_f16(x0, x1);
                else
                    *reinterpret_cast<float2 *>(st + off) = make_float2(x0, x1);
            }
    __syncwarp();
    constexpr int CPR = D / C::EPC;
    T *Oh = O + hoff;
#pragma unroll
    for (int i = 0; i < CPR; i++) { /* 32 rows x CPR chunks, CPR per lane */
        const int c = lane + 32 * i, r = c / CPR, ch = c % CPR;
        if (qw + r < S)
            fck::st16(Oh + (size_t)(qw + r) * D + ch * C::EPC,
                      fck::ld16(st + fck_tile_off(r, ch * C::EPC, D, C::EPC, C::MO)));
    }
}

/* ---------------------------------------------------------------- QKᵀ + softmax
 * One loop of nkt + nall iterations: sweep 1 over the nkt key tiles that hold unmasked
 * keys (row max and sum), then sweep 2 over all nall key tiles of the row, recomputing
 * and writing P = exp2(s·sl2 − m·sl2)/l (zeros past the rows' last keys, written without
 * compute). K tiles alternate between two buffers across both sweeps, so the first tile
 * of sweep 2 loads while the last of sweep 1 is computed. */
template <int KIND, int D>
__global__ void __launch_bounds__(F2<KIND, D, true>::NT)
    flash2_qks_kernel(const typename Kind<KIND>::T *__restrict__ Q, const typename Kind<KIND>::T *__restrict__ K,
                      typename Kind<KIND>::T *__restrict__ P, int S, int SKV, int group, int ntiles, float sl2,
                      int causal)
{
    typedef F2<KIND, D, true> C;
    typedef typename C::T T;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    T *Qs = reinterpret_cast<T *>(smem_raw);
    T *Ks = Qs + C::OFF_K;

    uint32_t head, qt;
    fck_attn_block(blockIdx.x, (uint32_t)ntiles, &head, &qt);
    const int q0 = (int)qt * C::BR;
    const size_t hoff = (size_t)head * (size_t)S * D;
    const T *Qh = Q + hoff, *Kh = K + (size_t)fck_attn_kv_head(head, (uint32_t)group) * (size_t)SKV * D;
    T *Ph = P + (size_t)head * (size_t)S * (size_t)SKV;
    const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = fck_lane_g(lane);
    const int r0 = 32 * warp, qw = q0 + r0, klw = fck_attn_last_key(qw, S, SKV);
    const int nkt = fck_attn_key_tiles(q0, C::BR, C::BC, S, SKV, causal);
    const int nall = fck_attn_key_tiles(0, 1, C::BC, 1, SKV, 0);
    /* the warp's P staging: over its own rows of Q (16-bit kinds: Q then lives in qf) */
    T *st = C::HALF ? Qs + r0 * D : Qs + C::OFF_V + r0 * C::BC;

    load_tile<T, D, C::BR, C::MQ, C::NT>(Qs, Qh, q0, S, tid);
    load_tile<T, D, C::BC, C::MQ, C::NT>(Ks, Kh, 0, SKV, tid);
    cp_async_commit();
    if constexpr (C::PREP_Q) {
        cp_async_wait<0>();
        prepare_q<KIND, D, true>(reinterpret_cast<float *>(Qs), nullptr, tid);
    }

    uint32_t qf[2][D / 16][4];
    float m[2][2] = {{-INFINITY, -INFINITY}, {-INFINITY, -INFINITY}}, l[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
    float nb[2][2], inv[2][2];
    const bool vec = ((size_t)SKV * sizeof(T)) % 16 == 0;

    for (int it = 0; it < nkt + nall; it++) {
        const bool sweep2 = it >= nkt;
        const int kt = sweep2 ? it - nkt : it, k0 = kt * C::BC;
        const bool computes = kt < nkt; /* block-uniform */
        if (computes) {
            cp_async_wait<0>();
            __syncthreads();
            const int nit = it + 1, nkt2 = nit < nkt ? nit : nit - nkt;
            if (nit < nkt + nall && nkt2 < nkt) {
                load_tile<T, D, C::BC, C::MQ, C::NT>(Ks + (nit & 1) * C::KV_ELEMS, Kh, nkt2 * C::BC, SKV, tid);
                cp_async_commit();
            }
        }
        if constexpr (C::HALF) {
            if (it == 0) {
#pragma unroll
                for (int ks = 0; ks < D / 16; ks++) {
                    uint32_t a[2][4];
                    q_frags_half<KIND, D, true>(a, Qs, r0, ks, lane);
#pragma unroll
                    for (int mi = 0; mi < 2; mi++)
#pragma unroll
                        for (int i = 0; i < 4; i++) qf[mi][ks][i] = a[mi][i];
                }
            }
        }
        if (it == nkt) { /* sweep 1 done: the rows' final max and sum */
#pragma unroll
            for (int mi = 0; mi < 2; mi++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    inv[mi][h] = 1.0f / quad_sum(l[mi][h]);
                    nb[mi][h] = m[mi][h] == -INFINITY ? 0.0f : -m[mi][h] * sl2;
                }
        }
        const bool skip = !computes || fck_attn_tile_all_masked(k0, causal, klw + 31); /* warp-uniform */
        float s[2][C::NTS][4], mx[2][2];
        if (!skip) {
            qk_tile<KIND, D, true, C::HALF>(s, qf, Qs, nullptr, Ks + (it & 1) * C::KV_ELEMS, r0, lane);
            mask_max<C::NTS, C::PERM>(s, mx, fck_attn_tile_needs_mask(k0, C::BC, SKV, causal, klw), k0, klw, SKV,
                                      causal, lane);
        }
        if (!sweep2) {
            if (!skip) {
                float alpha[2][2];
                online_softmax<C::NTS>(s, mx, m, l, alpha, sl2);
            }
            continue;
        }
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int nt = 0; nt < C::NTS; nt++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    s[mi][nt][i] = skip ? 0.0f : fck_osm_p(s[mi][nt][i], sl2, nb[mi][i >> 1]) * inv[mi][i >> 1];
        /* the warp's 32 x BC tile of P through shared memory, then out in rows */
        __syncwarp();
#pragma unroll
        for (int mi = 0; mi < 2; mi++)
#pragma unroll
            for (int nt = 0; nt < C::NTS; nt++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int row = 16 * mi + g + 8 * h;
                    if constexpr (C::HALF) {
                        const float x0 = s[mi][nt][2 * h], x1 = s[mi][nt][2 * h + 1];
                        *reinterpret_cast<uint32_t *>(st + fck_tile_off(row, 8 * nt + fck_c_key(lane, 2 * h, 0), C::BC,
                                                                        C::EPC, C::MP)) = KIND == FCK_BF16
                                                                                              ? fck::pack2_bf16(x0, x1)
                                                                                              : fck::pack2_f16(x0, x1);
                    } else {
#pragma unroll
                        for (int e = 0; e < 2; e++)
                            st[fck_tile_off(row, 8 * nt + fck_c_key(lane, 2 * h + e, 1), C::BC, 4, C::MP)] =
                                s[mi][nt][2 * h + e];
                    }
                }
        __syncwarp();
        if (vec) {
            constexpr int CPR = C::BC / C::EPC;
#pragma unroll
            for (int i = 0; i < CPR; i++) {
                const int c = lane + 32 * i, r = c / CPR, ch = c % CPR, gj = k0 + ch * C::EPC;
                if (qw + r < S && gj < SKV)
                    fck::st16(Ph + (size_t)(qw + r) * SKV + gj,
                              fck::ld16(st + fck_tile_off(r, ch * C::EPC, C::BC, C::EPC, C::MP)));
            }
        } else {
            for (int c = lane; c < 32 * C::BC; c += 32) {
                const int r = c / C::BC, col = c % C::BC, gj = k0 + col;
                if (qw + r < S && gj < SKV)
                    Ph[(size_t)(qw + r) * SKV + gj] = st[fck_tile_off(r, col, C::BC, C::EPC, C::MP)];
            }
        }
    }
}

/* ---------------------------------------------------------------- launchers */

/* Raises a kernel's dynamic shared memory limit to what it uses, once per kernel: the
 * launchers and the occupancy query in resources2() both need it (above 48 KiB a
 * launch fails and the occupancy calculator answers 0 blocks without it). */
template <int KIND, int D>
cudaError_t configure2(int qks)
{
    static bool done[2] = {false, false};
    if (done[qks]) return cudaSuccess;
    cudaError_t e = qks ? cudaFuncSetAttribute(flash2_qks_kernel<KIND, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)F2<KIND, D, true>::SMEM)
                        : cudaFuncSetAttribute(flash2_kernel<KIND, D>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)F2<KIND, D, false>::SMEM);
    done[qks] = e == cudaSuccess;
    return e;
}

template <int KIND, int D>
cudaError_t launch_flash2(const void *q, const void *k, const void *v, void *o, const fck_attn_shape &sh,
                          cudaStream_t stream)
{
    typedef F2<KIND, D, false> C;
    typedef typename C::T T;
    cudaError_t e = configure2<KIND, D>(0);
    if (e != cudaSuccess) return e;
    const long long blocks = fck_attn_grid_blocks(sh.bh, sh.s, C::BR);
    if (blocks < 0) return cudaErrorInvalidValue;
    flash2_kernel<KIND, D>
        <<<(unsigned)blocks, C::NT, C::SMEM, stream>>>(static_cast<const T *>(q), static_cast<const T *>(k),
                                                       static_cast<const T *>(v), static_cast<T *>(o), sh.s, sh.skv,
                                                       sh.group, (sh.s + C::BR - 1) / C::BR, LOG2E / sqrtf((float)D),
                                                       sh.causal);
    return cudaGetLastError();
}

template <int KIND, int D>
cudaError_t launch_flash2_qks(const void *q, const void *k, void *p, const fck_attn_shape &sh, cudaStream_t stream)
{
    typedef F2<KIND, D, true> C;
    typedef typename C::T T;
    cudaError_t e = configure2<KIND, D>(1);
    if (e != cudaSuccess) return e;
    const long long blocks = fck_attn_grid_blocks(sh.bh, sh.s, C::BR);
    if (blocks < 0) return cudaErrorInvalidValue;
    flash2_qks_kernel<KIND, D>
        <<<(unsigned)blocks, C::NT, C::SMEM, stream>>>(static_cast<const T *>(q), static_cast<const T *>(k),
                                                       static_cast<T *>(p), sh.s, sh.skv, sh.group,
                                                       (sh.s + C::BR - 1) / C::BR, LOG2E / sqrtf((float)D), sh.causal);
    return cudaGetLastError();
}

template <int KIND, int D>
int resources2(int qks, char *buf, size_t n)
{
    cudaFuncAttributes a;
    const size_t smem = qks ? F2<KIND, D, true>::SMEM : F2<KIND, D, false>::SMEM;
    const int bc = qks ? F2<KIND, D, true>::BC : F2<KIND, D, false>::BC;
    const char *name = qks ? "flash2 qk_softmax" : "flash2";
    cudaError_t e = qks ? cudaFuncGetAttributes(&a, flash2_qks_kernel<KIND, D>)
                        : cudaFuncGetAttributes(&a, flash2_kernel<KIND, D>);
    if (e != cudaSuccess)
        return snprintf(buf, n, "%s<%s,d=%d>: attributes unavailable (%s)", name, kind_name(KIND), D,
                        cudaGetErrorString(e));
    int per_sm = 0;
    e = configure2<KIND, D>(qks);
    if (e == cudaSuccess)
        e = qks ? cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flash2_qks_kernel<KIND, D>, FCK_F2_BR, smem)
                : cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, flash2_kernel<KIND, D>, FCK_F2_BR, smem);
    if (e != cudaSuccess)
        return snprintf(buf, n, "%s<%s,d=%d>: occupancy unavailable (%s)", name, kind_name(KIND), D,
                        cudaGetErrorString(e));
    return snprintf(buf, n,
                    "%s<%s,d=%d>: %dx%d tiles, 4 warps x 32 rows, %d regs, %zu B dynamic smem, %zu B local, "
                    "%d blocks/SM",
                    name, kind_name(KIND), D, FCK_F2_BR, bc, a.numRegs, smem, (size_t)a.localSizeBytes, per_sm);
}

} // namespace

#define FCK_F2_DISPATCH(FN, ...)                                                                    \
    switch (dt) {                                                                                   \
    case FCK_FP32: return d == 64 ? FN<FCK_FP32, 64>(__VA_ARGS__) : FN<FCK_FP32, 128>(__VA_ARGS__); \
    case FCK_TF32: return d == 64 ? FN<FCK_TF32, 64>(__VA_ARGS__) : FN<FCK_TF32, 128>(__VA_ARGS__); \
    case FCK_BF16: return d == 64 ? FN<FCK_BF16, 64>(__VA_ARGS__) : FN<FCK_BF16, 128>(__VA_ARGS__); \
    case FCK_FP16: return d == 64 ? FN<FCK_FP16, 64>(__VA_ARGS__) : FN<FCK_FP16, 128>(__VA_ARGS__); \
    }

cudaError_t flash2_attention(fck_dtype dt, const void *q, const void *k, const void *v, void *o,
                             const fck_attn_shape &sh, cudaStream_t stream)
{
    const int d = sh.d;
    FCK_F2_DISPATCH(launch_flash2, q, k, v, o, sh, stream)
    return cudaErrorInvalidValue;
}

cudaError_t flash2_qk_softmax(fck_dtype dt, const void *q, const void *k, void *p, const fck_attn_shape &sh,
                              cudaStream_t stream)
{
    const int d = sh.d;
    FCK_F2_DISPATCH(launch_flash2_qks, q, k, p, sh, stream)
    return cudaErrorInvalidValue;
}

int flash2_resources(fck_dtype dt, int d, int qk_softmax, char *buf, size_t n)
{
    FCK_F2_DISPATCH(resources2, qk_softmax, buf, n)
    return snprintf(buf, n, "unknown dtype");
}

} // namespace fck
