/* decode.cu — split-KV decode attention and qk_softmax (fusecal_kernels.h:
 * fck_decode_attention, fck_decode_qk_softmax).
 *
 * Decode is memory-bound: one query row (or a few) per head against a key/value cache
 * of thousands of keys, each key read once. The flash kernels give all of a head's
 * keys to one block of 64 or 128 query rows, so a decode problem would occupy b·h
 * blocks and use one row of each tile; here the keys of each key/value head are shared
 * out over splits (kernel_logic.h: fck_dec_plan_make), a block per (key/value head,
 * split), and the splits' partial results are combined by a second kernel.
 *
 * Split block (FCK_DEC_THREADS threads), for its rows = group·s query rows (the group's
 * query heads are adjacent: rows n·rows .. n·rows + rows − 1 of Q and O), pieces of its
 * keys in turn:
 *   scores   a warp per key, lanes along d (element lane + 32·e, coalesced), the rows'
 *            Q in registers; the rows' dot products summed by one reduce-scatter over
 *            the lanes (rows_reduce); the causal mask (query i of a head sees keys
 *            j <= i + skv − s) gives −inf;
 *   softmax  a warp per row: the piece's max and the online-softmax step
 *            (kernel_logic.h: fck_osm_step), p = exp2((s − m)·log2(e)/√d) in place;
 *   P·V      thread (group of keys, 4 adjacent columns of V: a warp per key at d =
 *            128): V's rows read once per block, one vector load per key and thread,
 *            coalesced along d, each probability read from shared memory once for 4
 *            columns, the rows' accumulators in registers, rescaled per piece.
 * At the end the groups' accumulators are summed through shared memory and the split's
 * partial output (fp32), row maxima and sums written to the workspace. Combine: a block
 * per row, weights exp2((m_c − max)·sl2) in shared memory, O = Σ w_c·o_c / Σ w_c·l_c.
 * qk_softmax: the split blocks also copy each piece's raw scores to an fp32 buffer and
 * skip P·V; a block per row then writes P = exp2((S − max)·sl2) / Σ w_c·l_c from them
 * (fp32 scores: rounding them to bf16 before the exponent would cost 2^-8 of a score of
 * 10, 4 % of its probability).
 * Arithmetic in fp32 for every dtype (tf32 too: no tensor cores; the dot products are
 * 1 x d x skv per row, nothing for an MMA to share).
 */
#include "fusecal_kernels.h"
#include "kernel_logic.h"
#include "kernel_util.cuh"

#include <math.h>
#include <stdio.h>
#include <string.h>

namespace {

using fck::from_f;
using fck::to_f;

constexpr int NW = FCK_DEC_THREADS / 32; /* warps per split block */
/* Keys per warp in flight in the scores; P·V unrolls 4 keys per thread. Little's law
 * sizes both: about 18 KB per SM must be in flight for an H100's 3.35 TB/s at ~0.7 µs
 * (132 SMs); three blocks of 8 warps x 4 keys of 256 B (bf16, d = 128) are 24 KB, and
 * P·V's 256 threads x 4 keys x 8 B (4 columns of bf16) x 3 blocks 24 KB. An estimate
 * to check on a GPU, not a measurement. */
constexpr int KU = 4;

__device__ __forceinline__ float warp_sum(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

__device__ __forceinline__ float warp_max(float x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* The rows' dot products of one key summed over the warp: each lane holds its partial
 * sums x[0..RM); row fck_dec_lane_row(lane, RM)'s total is left in x[0] of its lanes. A
 * reduce-scatter: at each offset from 16 down, a lane keeps half of the rows it still
 * holds (the upper half where its bit of that offset is set) and adds its partner's
 * partial sums of them, RM − 1 shuffles in all, then one shuffle per remaining offset
 * for the one row left: RM − 1 + 5 − log2(RM) (6 for RM = 4, 9 for 8, 16 for 16) where a
 * warp_sum per row costs 5 each (20, 80). The pairs added are the butterfly's, offset by
 * offset, so each total is the float warp_sum gives. */
template <int RM>
__device__ __forceinline__ float rows_reduce(float (&x)[RM])
{
    static_assert(RM >= 1 && RM <= 32 && (RM & (RM - 1)) == 0, "rows held: a power of two up to 32");
    constexpr int LOG2 = RM >= 32 ? 5 : RM >= 16 ? 4 : RM >= 8 ? 3 : RM >= 4 ? 2 : RM >= 2 ? 1 : 0;
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int st = 0; st < LOG2; st++) { /* constant trip counts: x stays in registers */
        const int h = (RM >> st) / 2, o = 16 >> st;
        const bool up = lane & o;
#pragma unroll
        for (int i = 0; i < RM / 2; i++)
            if (i < h) {
                const float send = up ? x[i] : x[i + h], keep = up ? x[i + h] : x[i];
                x[i] = keep + __shfl_xor_sync(0xffffffffu, send, o);
            }
    }
#pragma unroll
    for (int st = LOG2; st < 5; st++) x[0] += __shfl_xor_sync(0xffffffffu, x[0], 16 >> st);
    return x[0];
}

/* Scores of the piece's np keys from p0 into sc (rows of fck_dec_sc_stride), −inf where
 * masked. */
template <typename T, int NV, int RM>
__device__ __forceinline__ void piece_scores(const float (&qr)[RM][NV], const T *__restrict__ kn, float *sc,
                                             const fck_dec_plan &pl, int p0, int np, int s, int skv, int d, int causal)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int j0 = warp; j0 < np; j0 += NW * KU) {
        float kv[KU][NV];
#pragma unroll
        for (int u = 0; u < KU; u++) /* the KU keys' loads before any of their arithmetic */
#pragma unroll
            for (int e = 0; e < NV; e++) {
                const int j = j0 + u * NW, c = lane + 32 * e;
                kv[u][e] = j < np && c < d ? to_f(kn[(size_t)(p0 + j) * d + c]) : 0.0f;
            }
        const int r = fck_dec_lane_row(lane, RM); /* the row this lane's sums end with */
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const int j = j0 + u * NW;
            if (j >= np) break;
            float x[RM];
#pragma unroll
            for (int rr = 0; rr < RM; rr++) {
                x[rr] = 0.0f;
                if (rr < pl.rows)
#pragma unroll
                    for (int e = 0; e < NV; e++) x[rr] = fmaf(qr[rr][e], kv[u][e], x[rr]);
            }
            const float dot = rows_reduce<RM>(x);
            if (fck_dec_lane_writes(lane, RM) && r < pl.rows) {
                const bool masked = causal && p0 + j > fck_attn_last_key(r % s, s, skv);
                sc[r * fck_dec_sc_stride(pl.piece) + j] = masked ? -INFINITY : dot;
            }
        }
    }
}

/* The online-softmax step of each row over the piece: p in place, the row's max, sum
 * and this piece's factor for the old accumulators. */
__device__ __forceinline__ void piece_softmax(float *sc, const fck_dec_plan &pl, int np, float sl2, float *m_s,
                                              float *l_s, float *c_s)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int r = warp; r < pl.rows; r += NW) {
        float *row = sc + r * fck_dec_sc_stride(pl.piece);
        float mx = -INFINITY;
        for (int j = lane; j < np; j += 32) mx = fmaxf(mx, row[j]);
        mx = warp_max(mx);
        float m = m_s[r], nb;
        const float alpha = fck_osm_step(&m, mx, sl2, &nb);
        float sum = 0.0f;
        for (int j = lane; j < np; j += 32) {
            const float p = fck_osm_p(row[j], sl2, nb);
            row[j] = p;
            sum += p;
        }
        sum = warp_sum(sum);
        if (lane == 0) {
            m_s[r] = m;
            l_s[r] = l_s[r] * alpha + sum;
            c_s[r] = alpha;
        }
    }
}

constexpr int PC = FCK_DEC_PV_COLS; /* columns of V a thread takes in P·V */

/* PC elements of V from p (aligned to PC elements) in fp32, one load */
template <typename T>
__device__ __forceinline__ void load_vec(const T *p, float (&x)[PC]);
template <>
__device__ __forceinline__ void load_vec<float>(const float *p, float (&x)[PC])
{
    const float4 f = *reinterpret_cast<const float4 *>(p);
    x[0] = f.x, x[1] = f.y, x[2] = f.z, x[3] = f.w;
}
template <>
__device__ __forceinline__ void load_vec<__nv_bfloat16>(const __nv_bfloat16 *p, float (&x)[PC])
{
    const uint2 u = *reinterpret_cast<const uint2 *>(p); /* bf16 -> fp32 is a shift */
    x[0] = __uint_as_float(u.x << 16), x[1] = __uint_as_float(u.x & 0xffff0000u);
    x[2] = __uint_as_float(u.y << 16), x[3] = __uint_as_float(u.y & 0xffff0000u);
}
template <>
__device__ __forceinline__ void load_vec<__half>(const __half *p, float (&x)[PC])
{
    const uint2 u = *reinterpret_cast<const uint2 *>(p);
    const float2 a = __half22float2(*reinterpret_cast<const __half2 *>(&u.x)),
                 b = __half22float2(*reinterpret_cast<const __half2 *>(&u.y));
    x[0] = a.x, x[1] = a.y, x[2] = b.x, x[3] = b.y;
}

/* PC elements of V from p in fp32: with VEC one load (load_vec), else the n that lie
 * in the row one by one and zeros for the rest. */
template <typename T, bool VEC>
__device__ __forceinline__ void load_cols(const T *p, int n, float (&x)[PC])
{
    if (VEC) load_vec(p, x);
    else
#pragma unroll
        for (int i = 0; i < PC; i++) x[i] = i < n ? to_f(p[i]) : 0.0f;
}

/* P·V of the piece for this thread's group of keys (grp, grp + kg, ...) and its PC
 * columns c0.. of V (vc: the piece's first key at column c0): acc[r][i] += p[r][j] ·
 * V[j][c0 + i]. Each probability read from shared memory serves PC FMAs (one per
 * column: a thread per column read each once per FMA, and at 4 or more rows those
 * reads, not memory, bound P·V); four keys' loads in flight a thread. */
template <typename T, int RM, bool VEC>
__device__ __forceinline__ void piece_pv(const T *__restrict__ vc, const float *sc, const fck_dec_plan &pl, int np,
                                         int grp, int kg, int d, int c0, float (&acc)[RM][PC])
{
#pragma unroll 4
    for (int j = grp; j < np; j += kg) {
        float x[PC];
        load_cols<T, VEC>(vc + (size_t)j * d, d - c0, x);
#pragma unroll
        for (int r = 0; r < RM; r++)
            if (r < pl.rows) {
                const float p = sc[r * fck_dec_sc_stride(pl.piece) + j];
#pragma unroll
                for (int i = 0; i < PC; i++) acc[r][i] = fmaf(p, x[i], acc[r][i]);
            }
    }
}

/* The groups of keys' P·V summed in a fixed order through one R x d buffer in shared
 * memory (sc, no longer read: the piece loop ends with a barrier): the last group
 * writes it, each group down to 1 adds its own in turn, group 0 adds and writes the
 * split's partial output to out. Every thread of the block calls it (barriers). */
template <int RM>
__device__ __forceinline__ void sum_groups(const float (&acc)[RM][PC], float *sc, float *out, int R, int d, int kg,
                                           int grp, int c0, bool pv)
{
    for (int g = kg - 1; g >= 1; g--) {
        if (pv && grp == g)
#pragma unroll
            for (int r = 0; r < RM; r++)
#pragma unroll
                for (int i = 0; i < PC; i++)
                    if (r < R && c0 + i < d) {
                        float &b = sc[r * d + c0 + i];
                        b = g == kg - 1 ? acc[r][i] : b + acc[r][i];
                    }
        __syncthreads();
    }
    if (pv && grp == 0)
#pragma unroll
        for (int r = 0; r < RM; r++)
#pragma unroll
            for (int i = 0; i < PC; i++)
                if (r < R && c0 + i < d) out[r * d + c0 + i] = kg > 1 ? acc[r][i] + sc[r * d + c0 + i] : acc[r][i];
}

/* One split block. QKS (qk_softmax): no V; each piece's raw scores are also copied to
 * `scores` (fp32, [bkv·rows, skv]) and only the maxima and sums go to part. Launch
 * bounds, for the loads in flight that more warps per SM give: up to 4 rows, four
 * blocks per SM for qk_softmax (at most 64 registers: ptxas sm_90 gives 52-64, no
 * spills) and three for attention (72-80), whose P·V accumulators (4 x 4 a thread)
 * are live through the scores (bounded to 64, 12-36 bytes spilled); up to 8, two (at most 128:
 * 72-123, no spills; the fp32 attention took 157-163 unbounded, one block); 16 rows,
 * one (bounded to 128 registers they spill). */
constexpr int min_blocks(int rm, bool qks) { return rm <= 4 ? (qks ? 4 : 3) : rm <= 8 ? 2 : 1; }

template <typename T, int NV, int RM, bool QKS>
__global__ void __launch_bounds__(FCK_DEC_THREADS, min_blocks(RM, QKS))
    dec_split_kernel(const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v,
                     float *__restrict__ part, float *__restrict__ scores, fck_dec_plan pl, int s, int skv, int d,
                     int causal, float sl2)
{
    extern __shared__ float sc[];
    __shared__ float m_s[RM], l_s[RM], c_s[RM];
    const int R = pl.rows, lane = threadIdx.x & 31;
    const int n = blockIdx.x / pl.nsplit, sp = blockIdx.x % pl.nsplit;
    const int ja = sp * pl.chunk, jb = min(skv, ja + pl.chunk); /* fck_dec_split_keys, pl kept in registers */
    const T *qn = q + (size_t)n * R * d, *kn = k + (size_t)n * skv * d;

    float qr[RM][NV];
#pragma unroll
    for (int r = 0; r < RM; r++)
#pragma unroll
        for (int e = 0; e < NV; e++) {
            const int c = lane + 32 * e;
            qr[r][e] = r < R && c < d ? to_f(qn[(size_t)r * d + c]) : 0.0f;
        }
    if (threadIdx.x < RM) {
        m_s[threadIdx.x] = -INFINITY;
        l_s[threadIdx.x] = 0.0f;
    }
    const int kg = fck_dec_key_groups(d);
    int grp, c0;
    fck_dec_pv_slot(threadIdx.x, d, &grp, &c0);
    const bool pv = !QKS && c0 < d;
    /* whole vectors of V: every row's columns c0.. aligned to PC elements */
    const bool vec = d % PC == 0 && reinterpret_cast<uintptr_t>(v) % (PC * sizeof(T)) == 0;
    float acc[RM][PC];
#pragma unroll
    for (int r = 0; r < RM; r++)
#pragma unroll
        for (int i = 0; i < PC; i++) acc[r][i] = 0.0f;
    __syncthreads();

    for (int p0 = ja; p0 < jb; p0 += pl.piece) {
        const int np = min(pl.piece, jb - p0);
        piece_scores<T, NV, RM>(qr, kn, sc, pl, p0, np, s, skv, d, causal);
        __syncthreads();
        if (QKS) {
            for (int t = threadIdx.x; t < R * np; t += FCK_DEC_THREADS) {
                const int r = t / np, j = t - r * np;
                scores[((size_t)n * R + r) * skv + p0 + j] = sc[r * fck_dec_sc_stride(pl.piece) + j];
            }
            __syncthreads(); /* every raw score copied before a row's warp overwrites it */
        }
        piece_softmax(sc, pl, np, sl2, m_s, l_s, c_s);
        __syncthreads();
        if (pv) {
            const T *vc = v + (size_t)n * skv * d + (size_t)p0 * d + c0;
#pragma unroll
            for (int r = 0; r < RM; r++)
#pragma unroll
                for (int i = 0; i < PC; i++)
                    if (r < R) acc[r][i] *= c_s[r];
            if (vec) piece_pv<T, RM, true>(vc, sc, pl, np, grp, kg, d, c0, acc);
            else
                piece_pv<T, RM, false>(vc, sc, pl, np, grp, kg, d, c0, acc);
        }
        __syncthreads(); /* the next piece's scores overwrite sc */
    }

    float *out = part + (size_t)blockIdx.x * fck_dec_part_floats(R, d);
    if (threadIdx.x < R) {
        out[R * d + threadIdx.x] = m_s[threadIdx.x];
        out[R * d + R + threadIdx.x] = l_s[threadIdx.x];
    }
    if (!QKS) sum_groups<RM>(acc, sc, out, R, d, kg, grp, c0, pv);
}

constexpr int CT = 128; /* threads of a combine or normalizing block */

/* Row r's splits (p0: its key/value head's first partial result): each split's weight
 * exp2((m_c − max)·sl2) into w (shared), the max into *mx; returns 1 / Σ w_c·l_c (0 for
 * a row no key reached). */
__device__ __forceinline__ float split_weights(const float *p0, size_t stride, int R, int d, int r, int nsplit,
                                               float sl2, float *w, float *mx)
{
    float m = -INFINITY;
    for (int c = 0; c < nsplit; c++) m = fmaxf(m, p0[c * stride + (size_t)R * d + r]);
    for (int c = threadIdx.x; c < nsplit; c += CT) {
        const float mc = p0[c * stride + (size_t)R * d + r];
        w[c] = mc == -INFINITY ? 0.0f : exp2f((mc - m) * sl2);
    }
    __syncthreads();
    float l = 0.0f;
    for (int c = 0; c < nsplit; c++) l += w[c] * p0[c * stride + (size_t)R * d + R + r];
    *mx = m;
    return l > 0.0f ? 1.0f / l : 0.0f;
}

/* attention: one block per row (key/value head n, row r), O's row n·rows + r = the
 * splits' partial outputs weighted, over the weighted sums. */
template <typename T>
__global__ void __launch_bounds__(CT, 1)
    dec_combine_kernel(const float *__restrict__ part, T *__restrict__ o, fck_dec_plan pl, int d, float sl2)
{
    extern __shared__ float w[]; /* nsplit weights */
    const int R = pl.rows, n = blockIdx.x / R, r = blockIdx.x % R;
    const size_t stride = fck_dec_part_floats(R, d);
    const float *p0 = part + (size_t)n * pl.nsplit * stride;
    float mx;
    const float inv = split_weights(p0, stride, R, d, r, pl.nsplit, sl2, w, &mx);
    T *orow = o + ((size_t)n * R + r) * d;
    for (int col = threadIdx.x; col < d; col += CT) {
        float x = 0.0f;
        for (int c = 0; c < pl.nsplit; c++) x = fmaf(w[c], p0[c * stride + (size_t)r * d + col], x);
        orow[col] = from_f<T>(x * inv);
    }
}

/* qk_softmax: one block per row, P's row n·rows + r = exp2((S − max)·sl2) over the
 * weighted sums, from the fp32 raw scores (−inf where masked: 0). */
template <typename T>
__global__ void __launch_bounds__(CT, 1)
    dec_normalize_kernel(const float *__restrict__ part, const float *__restrict__ scores, T *__restrict__ p,
                         fck_dec_plan pl, int skv, int d, float sl2)
{
    extern __shared__ float w[]; /* nsplit weights */
    const int R = pl.rows, n = blockIdx.x / R, r = blockIdx.x % R;
    const size_t stride = fck_dec_part_floats(R, d), row = (size_t)n * R + r;
    float mx, nb;
    const float inv = split_weights(part + (size_t)n * pl.nsplit * stride, stride, R, d, r, pl.nsplit, sl2, w, &mx);
    float m = -INFINITY;
    fck_osm_step(&m, mx, sl2, &nb); /* nb = −max·sl2, 0 for a row no key reached */
    const float *srow = scores + row * skv;
    T *prow = p + row * skv;
    for (int j = threadIdx.x; j < skv; j += CT) prow[j] = from_f<T>(fck_osm_p(srow[j], sl2, nb) * inv);
}

/* The current device's SM count, asked of the runtime once per device (the launchers
 * plan every call; the attribute query is kept out of the timed calls, as attention.cu's
 * configure keeps its attribute setting). */
int device_sms(void)
{
    static int known_dev = -1, known_sms = 1;
    int dev = 0, sms = 0;
    /* a failed query's error is cleared, so that the next launch's check does not report it */
    if (cudaGetDevice(&dev) != cudaSuccess) return (void)cudaGetLastError(), 1;
    if (dev == known_dev) return known_sms;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms < 1)
        return (void)cudaGetLastError(), 1;
    known_dev = dev;
    known_sms = sms;
    return sms;
}

/* The kernel's template for the plan's elements per lane and rows held. */
#define FCK_DEC_PICK(pl, F, ...)                                          \
    ((pl).vecs == 2 ? ((pl).rtile == 4   ? F<T, 2, 4, QKS>(__VA_ARGS__)   \
                       : (pl).rtile == 8 ? F<T, 2, 8, QKS>(__VA_ARGS__)   \
                                         : F<T, 2, 16, QKS>(__VA_ARGS__)) \
                    : ((pl).rtile == 4   ? F<T, 4, 4, QKS>(__VA_ARGS__)   \
                       : (pl).rtile == 8 ? F<T, 4, 8, QKS>(__VA_ARGS__)   \
                                         : F<T, 4, 16, QKS>(__VA_ARGS__)))

template <typename T, int NV, int RM, bool QKS>
const void *kernel_ptr(const fck_dec_plan &)
{
    return reinterpret_cast<const void *>(dec_split_kernel<T, NV, RM, QKS>);
}

template <typename T, bool QKS>
const void *split_kernel_t(const fck_dec_plan &pl)
{
    return FCK_DEC_PICK(pl, kernel_ptr, pl);
}

/* The split kernel that runs the plan for dt (for the runtime's attribute and
 * occupancy queries). */
const void *split_kernel(fck_dtype dt, const fck_dec_plan &pl, bool qks)
{
    if (dt == FCK_BF16) return qks ? split_kernel_t<__nv_bfloat16, true>(pl) : split_kernel_t<__nv_bfloat16, false>(pl);
    if (dt == FCK_FP16) return qks ? split_kernel_t<__half, true>(pl) : split_kernel_t<__half, false>(pl);
    return qks ? split_kernel_t<float, true>(pl) : split_kernel_t<float, false>(pl);
}

/* The split kernel's blocks resident per SM for dt and the plan's template sizes, with
 * the most shared memory a plan for its rows gives (registers bind first: 52-202 of
 * them a thread); asked of the runtime once per device and kernel, like device_sms. */
int blocks_per_sm(fck_dtype dt, const fck_dec_plan &pl, bool qks)
{
    static int known_dev = -1, known[4][2][2][FCK_DEC_MAX_ROWS + 1]; /* [dt][vecs == 4][qks][rows] */
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return (void)cudaGetLastError(), 1; /* as device_sms */
    if ((unsigned)dt > 3u || pl.rows < 1 || pl.rows > FCK_DEC_MAX_ROWS) return 1;
    if (dev != known_dev) {
        memset(known, 0, sizeof known);
        known_dev = dev;
    }
    int &b = known[dt][pl.vecs == 4][qks][pl.rows]; /* (rtile follows from rows) */
    if (b) return b;
    int n = 0;
    cudaError_t e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, split_kernel(dt, pl, qks), FCK_DEC_THREADS,
                                                                  fck_dec_smem_floats_most(pl.rows) * sizeof(float));
    if (e != cudaSuccess || n < 1) {
        (void)cudaGetLastError(); /* not left for the next launch's check */
        return 1;
    }
    return b = n;
}

/* The plan for dt on the current device's resident blocks; rows 0 when the shape is not
 * the kernel's. */
fck_dec_plan plan_of(fck_dtype dt, const fck_attn_shape &sh, bool qks)
{
    fck_dec_plan p{};
    if (sh.bh < 1 || sh.s < 1 || sh.skv < 1 || sh.group < 1 || sh.bh % sh.group || (sh.causal && sh.skv < sh.s))
        return p;
    const long long rows = (long long)sh.group * sh.s, bkv = sh.bh / sh.group;
    if (!fck_dec_supports(rows, sh.d, sh.skv)) return p;
    p.rows = (int)rows;
    p.vecs = fck_dec_vecs(sh.d);
    p.rtile = fck_dec_rtile(p.rows);
    const long long slots = (long long)device_sms() * blocks_per_sm(dt, p, qks);
    p = fck_dec_plan_make(bkv, (int)rows, sh.skv, sh.d, slots);
    if ((long long)bkv * p.nsplit > 0x7fffffffLL || bkv * rows > 0x7fffffffLL) p.rows = 0;
    return p;
}

/* Bytes of workspace: the splits' partial results, and for qk_softmax the fp32 scores
 * after them. */
size_t workspace_bytes(const fck_attn_shape &sh, const fck_dec_plan &pl, bool qks)
{
    const long long bkv = sh.bh / sh.group;
    return (fck_dec_workspace_floats(&pl, bkv, sh.d) + (qks ? (size_t)bkv * pl.rows * sh.skv : 0)) * sizeof(float);
}

/* The split kernel, then the combine (attention: o is O) or the normalization
 * (qk_softmax: o is P). */
template <typename T, int NV, int RM, bool QKS>
cudaError_t launch(const void *q, const void *k, const void *v, void *o, const fck_attn_shape &sh,
                   const fck_dec_plan &pl, float *ws, cudaStream_t stream)
{
    const long long bkv = sh.bh / sh.group;
    const float sl2 = 1.4426950408889634f / sqrtf((float)sh.d);
    float *scores = QKS ? ws + fck_dec_workspace_floats(&pl, bkv, sh.d) : nullptr;
    dec_split_kernel<T, NV, RM, QKS>
        <<<(unsigned)(bkv * pl.nsplit), FCK_DEC_THREADS, fck_dec_smem_floats(&pl) * sizeof(float), stream>>>(
            static_cast<const T *>(q), static_cast<const T *>(k), static_cast<const T *>(v), ws, scores, pl, sh.s,
            sh.skv, sh.d, sh.causal, sl2);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
    const unsigned rows = (unsigned)(bkv * pl.rows);
    const size_t wsm = (size_t)pl.nsplit * sizeof(float);
    if (QKS) dec_normalize_kernel<T><<<rows, CT, wsm, stream>>>(ws, scores, static_cast<T *>(o), pl, sh.skv, sh.d, sl2);
    else
        dec_combine_kernel<T><<<rows, CT, wsm, stream>>>(ws, static_cast<T *>(o), pl, sh.d, sl2);
    return cudaGetLastError();
}

template <typename T, bool QKS>
cudaError_t dispatch(const void *q, const void *k, const void *v, void *o, const fck_attn_shape &sh,
                     const fck_dec_plan &pl, float *ws, cudaStream_t stream)
{
    return FCK_DEC_PICK(pl, launch, q, k, v, o, sh, pl, ws, stream);
}

template <bool QKS>
cudaError_t run(fck_dtype dt, const void *q, const void *k, const void *v, void *o, const fck_attn_shape &sh, void *ws,
                size_t ws_bytes, cudaStream_t stream)
{
    const fck_dec_plan pl = plan_of(dt, sh, QKS);
    if (!pl.rows || ws_bytes < workspace_bytes(sh, pl, QKS)) return cudaErrorInvalidValue;
    float *w = static_cast<float *>(ws);
    switch (dt) {
    case FCK_FP32:
    case FCK_TF32: return dispatch<float, QKS>(q, k, v, o, sh, pl, w, stream);
    case FCK_BF16: return dispatch<__nv_bfloat16, QKS>(q, k, v, o, sh, pl, w, stream);
    case FCK_FP16: return dispatch<__half, QKS>(q, k, v, o, sh, pl, w, stream);
    }
    return cudaErrorInvalidValue;
}

} // namespace

extern "C" size_t fck_decode_workspace(fck_dtype dt, fck_attn_shape sh, int qk_softmax)
{
    const fck_dec_plan pl = plan_of(dt, sh, qk_softmax != 0);
    return pl.rows ? workspace_bytes(sh, pl, qk_softmax != 0) : 0;
}

extern "C" cudaError_t fck_decode_attention(fck_dtype dt, const void *q, const void *k, const void *v, void *o,
                                            fck_attn_shape sh, void *ws, size_t ws_bytes, cudaStream_t stream)
{
    return run<false>(dt, q, k, v, o, sh, ws, ws_bytes, stream);
}

extern "C" cudaError_t fck_decode_qk_softmax(fck_dtype dt, const void *q, const void *k, void *p, fck_attn_shape sh,
                                             void *ws, size_t ws_bytes, cudaStream_t stream)
{
    return run<true>(dt, q, k, nullptr, p, sh, ws, ws_bytes, stream);
}

extern "C" int fck_decode_describe(fck_dtype dt, fck_attn_shape sh, int qk_softmax, char *buf, size_t n)
{
    const fck_dec_plan pl = plan_of(dt, sh, qk_softmax != 0);
    if (!pl.rows) return snprintf(buf, n, "decode<d=%d, %d rows>: unsupported", sh.d, sh.group * sh.s);
    cudaFuncAttributes a;
    cudaError_t e = cudaFuncGetAttributes(&a, split_kernel(dt, pl, qk_softmax != 0));
    if (e != cudaSuccess) return snprintf(buf, n, "decode: attributes unavailable (%s)", cudaGetErrorString(e));
    return snprintf(buf, n,
                    "decode%s<%d elements/lane, %d rows>: %d splits of %d keys per key/value head in pieces of %d "
                    "(%lld blocks, %d resident per SM on %d SMs), %d threads, %d regs, %zu B dynamic smem, %zu B "
                    "local; then a %s kernel",
                    qk_softmax ? " qk_softmax" : "", pl.vecs, pl.rtile, pl.nsplit, pl.chunk, pl.piece,
                    (long long)(sh.bh / sh.group) * pl.nsplit, blocks_per_sm(dt, pl, qk_softmax != 0), device_sms(),
                    FCK_DEC_THREADS, a.numRegs, fck_dec_smem_floats(&pl) * sizeof(float), (size_t)a.localSizeBytes,
                    qk_softmax ? "normalizing" : "combine");
}
