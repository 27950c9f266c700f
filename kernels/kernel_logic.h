/* kernel_logic.h — the index maps, tile bounds, launch plans and softmax arithmetic of
 * fusecal's kernels, written once in C so that nvcc compiles them into the kernels
 * (as __host__ __device__ functions) and the host tests (tests/test_kernel_logic.c)
 * run the very same code on a CPU.
 *
 * No CUDA header here: plain C11 or C++17, integers and <math.h>.
 */
#ifndef FCK_KERNEL_LOGIC_H
#define FCK_KERNEL_LOGIC_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define FCK_HD static __host__ __device__ __forceinline__
#define FCK_CX static constexpr __host__ __device__ __forceinline__
#elif defined(__cplusplus)
#define FCK_HD static inline
#define FCK_CX static constexpr inline
#else
#define FCK_HD static inline
#define FCK_CX static inline
#endif

/* ================================================================ fast division
 * n / d for 0 <= n < 2^31 and 1 <= d < 2^31 by a multiply and a shift:
 *   s = ceil(log2 d), mul = ceil(2^(31+s) / d) (< 2^32), n / d = (n·mul) >> (31 + s).
 * Exact: with mul·d = 2^(31+s) + e, 0 <= e < d <= 2^s, n·mul / 2^(31+s) = n/d + n·e/(d·2^(31+s))
 * and n·e/2^(31+s) < 2^31·d/2^(31+s) <= 1, so the error stays below the 1/d gap to the next
 * integer. On the GPU: one 32x32->64 multiply and a shift, no divide. */
typedef struct {
    uint32_t d, mul, shift;
} fck_fastdiv;

FCK_HD fck_fastdiv fck_fastdiv_make(uint32_t d)
{
    fck_fastdiv f;
    uint32_t s = 0;
    while (s < 31 && (1u << s) < d) s++;
    f.d = d;
    f.shift = 31 + s;
    f.mul = (uint32_t)((((uint64_t)1 << (31 + s)) + d - 1) / d);
    return f;
}
FCK_HD uint32_t fck_div(fck_fastdiv f, uint32_t n) { return (uint32_t)(((uint64_t)n * f.mul) >> f.shift); }
FCK_HD uint32_t fck_mod(fck_fastdiv f, uint32_t n) { return n - fck_div(f, n) * f.d; }

/* ================================================================ channel of an element
 * x [n, c, hw] (nchw) or [n, hw, c] (nhwc), flat index i < 2^31: the channel of element i,
 * (i / hw) mod c or i mod c, by fast division. by_hw is unused for nhwc. */
typedef struct {
    fck_fastdiv by_c, by_hw;
    int nhwc;
} fck_chanmap;

FCK_HD fck_chanmap fck_chanmap_make(uint32_t c, uint32_t hw, int nhwc)
{
    fck_chanmap m;
    m.by_c = fck_fastdiv_make(c);
    m.by_hw = fck_fastdiv_make(hw);
    m.nhwc = nhwc;
    return m;
}
FCK_HD uint32_t fck_channel(const fck_chanmap *m, uint32_t i)
{
    return fck_mod(m->by_c, m->nhwc ? i : fck_div(m->by_hw, i));
}

/* How fck_channel_affine reads scale and shift for a 16-byte vector of vec elements
 * starting at a multiple of vec: FCK_AFFINE_RUN when the vector holds vec consecutive
 * channels (nhwc, c a multiple of vec; scale and shift 16-byte aligned: vector loads),
 * FCK_AFFINE_ONE when it lies in one channel (nchw, hw a multiple of vec: one channel
 * per vector), FCK_AFFINE_EACH otherwise (each element's own channel). */
enum { FCK_AFFINE_EACH = 0, FCK_AFFINE_RUN = 1, FCK_AFFINE_ONE = 2 };
FCK_HD int fck_affine_mode(uint32_t c, uint32_t hw, int nhwc, int vec, int params_aligned)
{
    if (nhwc) return c % (uint32_t)vec == 0 && params_aligned ? FCK_AFFINE_RUN : FCK_AFFINE_EACH;
    return hw % (uint32_t)vec == 0 ? FCK_AFFINE_ONE : FCK_AFFINE_EACH;
}

/* ================================================================ attention grid
 * One block per (head, query tile), a 1-D grid of bh·ntiles blocks (ntiles = ceil(s/br)).
 * The query tile varies fastest, so the blocks running at once share a few heads and
 * read those heads' K and V from L2 instead of every head's from HBM; within a head
 * the last query tile (the most key tiles under a causal mask) comes first, so the
 * long blocks start early and the short ones fill the tail. */
FCK_HD void fck_attn_block(uint32_t block, uint32_t ntiles, uint32_t *head, uint32_t *qtile)
{
    uint32_t h = block / ntiles; /* one divide per block */
    *head = h;
    *qtile = ntiles - 1 - (block - h * ntiles);
}

/* Blocks of the grid, or -1 when there would be more than a 1-D grid takes (2^31 - 1). */
FCK_HD long long fck_attn_grid_blocks(long long bh, long long s, int br)
{
    long long n = bh * ((s + br - 1) / br);
    return bh < 1 || s < 1 || n > 0x7fffffffLL ? -1 : n;
}

/* Grouped-query attention: query head n (of the flattened b·h) reads key/value head
 * n / group, group = h/hkv (the query heads sharing a key/value head are adjacent). */
FCK_HD uint32_t fck_attn_kv_head(uint32_t head, uint32_t group) { return head / group; }

/* The causal mask aligns the s queries with the end of the skv keys: query qi sees keys
 * j <= qi + skv − s, its "last key". The tile bounds below take last keys, not queries. */
FCK_HD int fck_attn_last_key(int qi, int s, int skv) { return qi + (skv - s); }

/* Key tiles (of bc keys) that a query tile [q0, q0 + br) of s queries must visit: every
 * tile with a key < skv; under a causal mask only those with a key <= the last key of
 * the tile's last real query. */
FCK_HD int fck_attn_key_tiles(int q0, int br, int bc, int s, int skv, int causal)
{
    int all = (int)(((long long)skv + bc - 1) / bc); /* skv + bc − 1 may pass 2^31 − 1 */
    if (!causal) return all;
    int qlast = (q0 + br < s ? q0 + br : s) - 1;
    int n = fck_attn_last_key(qlast, s, skv) / bc + 1;
    return n < all ? n : all;
}

/* Whether key kj is masked for a query whose last key is klast: past the skv keys, or
 * after klast (causal). */
FCK_HD int fck_attn_masked(int kj, int klast, int skv, int causal) { return kj >= skv || (causal && kj > klast); }

/* Whether any key of [k0, k0 + bc) is masked for some query whose last key is >= klo: the
 * tile reaches past skv, or (causal) past klo. Tiles for which this is 0 skip the mask. */
FCK_HD int fck_attn_tile_needs_mask(int k0, int bc, int skv, int causal, int klo)
{
    return k0 + bc > skv || (causal && k0 + bc - 1 > klo);
}

/* Whether every key of a tile starting at k0 is masked for every query whose last key is
 * <= khi (causal): the rows of a warp whose last row's last key is khi contribute
 * nothing and skip the tile. */
FCK_HD int fck_attn_tile_all_masked(int k0, int causal, int khi) { return causal && k0 > khi; }

/* ================================================================ shared-memory layouts
 * A tile in shared memory is rows of 16-byte chunks, a multiple of 8 chunks (128 bytes)
 * per row. Chunk c of row r is stored at chunk c ^ x(r) of the same row, x(r) < 8, so
 * the map is a bijection of each row onto itself. Banks are 4 bytes wide, 32 of them,
 * so a chunk's banks are fixed by its position mod 8 and the swizzle spreads the
 * accesses of one instruction over all 32 banks:
 *   FCK_SWZ_ROW8   x(r) = r & 7: eight consecutive rows, one column of chunks, hit eight
 *                  positions (ldmatrix phases; the m16n8k8 A and B-of-Kᵀ fragments,
 *                  rows g = 0..7 at one column t).
 *   FCK_SWZ_ROW4X2 x(r) = 2·(r & 3): four consecutive rows, two adjacent chunks (2j,
 *                  2j + 1), hit eight positions (the m16n8k8 B fragment of V: rows
 *                  t = 0..3, columns g = 0..7 in fp32). */
enum { FCK_SWZ_NONE = 0, FCK_SWZ_ROW8 = 1, FCK_SWZ_ROW4X2 = 2 };

FCK_HD int fck_swz(int r, int mode)
{
    return mode == FCK_SWZ_ROW8 ? (r & 7) : mode == FCK_SWZ_ROW4X2 ? (r & 3) << 1 : 0;
}

/* Element offset of (r, col) in a tile of row_elems elements per row, epc elements per
 * 16-byte chunk (4 fp32, 8 bf16/fp16). */
FCK_HD int fck_tile_off(int r, int col, int row_elems, int epc, int mode)
{
    int c = col / epc;
    return r * row_elems + ((c ^ fck_swz(r, mode)) * epc) + (col - c * epc);
}

/* Copying a tile of rows of cpr chunks with nt threads (nt a multiple of cpr): copy i of
 * thread tid takes chunk tid % cpr of row tid / cpr + i·(nt / cpr) — consecutive threads
 * take consecutive chunks of a row (coalesced, and eight of them fill eight distinct
 * bank groups under any of the swizzles), and a thread's row advances by a constant, so
 * its addresses are one base plus immediates. */
FCK_HD int fck_copy_row(int tid, int i, int nt, int cpr) { return tid / cpr + i * (nt / cpr); }
FCK_HD int fck_copy_chunk(int tid, int cpr) { return tid % cpr; }

/* ================================================================ mma.sync fragments
 * Lane l of a warp is (g, t) = (l / 4, l % 4). PTX ISA layouts, fp32 accumulators:
 *   C/D 16x8 (both shapes)  c[i]: row g + 8·(i / 2), column 2t + i % 2
 *   m16n8k16 A 16x16        a[i] (two 16-bit halves each): row g + 8·(i % 2),
 *                           columns 2t + 8·(i / 2) + {0, 1}
 *   m16n8k16 B 16x8         b[i]: rows (k) 2t + 8·i + {0, 1}, column (n) g
 *   m16n8k8 tf32 A 16x8     a[i]: row g + 8·(i % 2), column t + 4·(i / 2)
 *   m16n8k8 tf32 B 8x8      b[i]: row (k) t + 4·i, column (n) g
 * ldmatrix .x4 reads four 8x8 16-bit matrices; lanes 8j..8j+7 give the row addresses of
 * matrix j, and register j of lane l receives row l / 4, columns 2(l % 4) + {0, 1} of
 * matrix j (.trans: rows 2(l % 4) + {0, 1} of column l / 4). */
FCK_HD int fck_lane_g(int lane) { return lane >> 2; }
FCK_HD int fck_lane_t(int lane) { return lane & 3; }

/* ldmatrix.x4 addresses, "A order": matrices (rows 0-7, chunk 0), (rows 8-15, chunk 0),
 * (rows 0-7, chunk 1), (rows 8-15, chunk 1) of a 16-row, 2-chunk block — the A operand of
 * m16n8k16 from a row-major [m][k] tile, and with .trans the B operand of two n-tiles from
 * a row-major [k][n] tile (V). */
FCK_HD int fck_ldsm_a_row(int lane) { return lane & 15; }
FCK_HD int fck_ldsm_a_chunk(int lane) { return lane >> 4; }
/* "B order": (rows 0-7, chunk 0), (rows 0-7, chunk 1), (rows 8-15, chunk 0), (rows 8-15,
 * chunk 1) — the B operand of two n-tiles (b0, b1 of n-tile 0, then of n-tile 1) from a
 * row-major [n][k] tile (K for Q·Kᵀ). */
FCK_HD int fck_ldsm_b_row(int lane) { return (lane & 7) | ((lane >> 4) << 3); }
FCK_HD int fck_ldsm_b_chunk(int lane) { return (lane >> 3) & 1; }

/* Column of C element i in lane l. With perm (the tf32 path), the keys of each 8-key
 * n-tile are permuted: C column c holds key (c / 2) + 4·(c % 2), so lane t holds keys t
 * and t + 4 — exactly the A fragment of m16n8k8 for P·V (a[0] = c[0], a[1] = c[2],
 * a[2] = c[1], a[3] = c[3]), and P goes to the tensor cores without shuffles. Q·Kᵀ
 * then reads K row fck_perm_key(g) for B column g. */
FCK_HD int fck_c_row(int lane, int i) { return fck_lane_g(lane) + 8 * (i >> 1); }
FCK_HD int fck_c_col(int lane, int i) { return 2 * fck_lane_t(lane) + (i & 1); }
FCK_HD int fck_perm_key(int c) { return (c >> 1) + ((c & 1) << 2); }
FCK_HD int fck_c_key(int lane, int i, int perm) { return perm ? fck_perm_key(fck_c_col(lane, i)) : fck_c_col(lane, i); }

/* ================================================================ online softmax
 * Scores are kept raw (Q·Kᵀ, unscaled); sl2 = log2(e)/√d turns them into the exponent
 * base 2, so p = exp2(s·sl2 − m·sl2) = exp(s/√d − max/√d) is one FMA and one exp2.
 *
 * fck_osm_step: the running max m of a row meets a tile whose row max is mx (all lanes
 * of the row agree on both): m becomes max(m, mx); returns alpha = exp2((m_old − m)·sl2),
 * the factor for the row's old sum and output accumulators, and sets *nb = −m·sl2 for
 * fck_osm_p. A row with every score so far masked (m = −inf) takes 0 as its base, so
 * masked scores give p = 0 and alpha = 0 instead of NaN. */
FCK_HD float fck_osm_step(float *m, float mx, float sl2, float *nb)
{
    float mn = fmaxf(*m, mx);
    float b = mn == -INFINITY ? 0.0f : mn * sl2;
    float alpha = exp2f(*m * sl2 - b);
    *m = mn;
    *nb = -b;
    return alpha;
}
FCK_HD float fck_osm_p(float s, float sl2, float nb) { return exp2f(fmaf(s, sl2, nb)); }

/* ================================================================ attention tilings
 * Shared memory in bytes of each kernel, for the launch and for the host tests that
 * check how many blocks fit on an SM. esize: 4 (fp32, tf32) or 2 (bf16, fp16); split:
 * fp32's 3xTF32 path.
 *
 * reference: 64 queries x 64 keys, rows padded (16 bytes for 16-bit kinds; fp32: Q and
 * K 4 words, V 8 words), one K and one V buffer (flash) or two K buffers and four
 * 16-row staging tiles of P (qk_softmax), 64 columns wide for 16-bit kinds and 32 for
 * fp32 (written in two halves), each row padded by 8 elements. */
#define FCK_REF_BR 64
#define FCK_REF_BC 64
FCK_CX int fck_ref_qk_stride(int esize, int d) { return esize == 2 ? d + 8 : d + 4; }
FCK_CX int fck_ref_v_stride(int d) { return d + 8; }
FCK_CX int fck_ref_stage_cols(int esize) { return esize == 2 ? 64 : 32; }
FCK_CX int fck_ref_stage_stride(int esize) { return fck_ref_stage_cols(esize) + 8; }
FCK_CX size_t fck_ref_smem(int esize, int d, int qk_softmax)
{
    const size_t qk = (size_t)fck_ref_qk_stride(esize, d);
    if (qk_softmax) /* Q, two K buffers, four staging tiles */
        return ((size_t)FCK_REF_BR * qk + 2 * (size_t)FCK_REF_BC * qk + 4 * 16 * (size_t)fck_ref_stage_stride(esize)) *
               (size_t)esize;
    return (size_t)FCK_REF_BR * (2 * qk + (size_t)fck_ref_v_stride(d)) * (size_t)esize; /* Q, K, V */
}

/* flash2: 128 queries per block, 4 warps of 32 rows (two m16 tiles each), key tiles of
 * fck_f2_bc keys (as many as the registers allow beside O's accumulators: flash2.cu),
 * rows swizzled rather than padded. flash: Q once, K and V double-buffered; fp32 keeps Q
 * split into big and small tf32 parts (two Q buffers), done once per block; the O tile
 * is staged over each warp's own Q rows. qk_softmax: K double-buffered; the P tiles
 * (32 rows x bc per warp) are staged over each warp's own Q rows where Q's fragments live
 * in registers (16-bit kinds), beside Q otherwise; fp32 splits Q's fragments once per key
 * tile and k-step (not per n-tile), keeping Q single so that two blocks fit on an SM at
 * d = 128. */
#define FCK_F2_BR 128
#define FCK_F2_WARPS 4
FCK_CX int fck_f2_bc(int esize, int split, int d, int qk_softmax)
{
    if (qk_softmax) return esize == 2 ? 64 : 32;
    if (esize == 2) return d == 64 ? 64 : 32;
    return split ? (d == 64 ? 32 : 16) : (d == 64 ? 64 : 32);
}
/* Whether Q is kept split in shared memory (fp32 flash). */
FCK_CX int fck_f2_q_split(int split, int qk_softmax) { return split && !qk_softmax; }
FCK_CX size_t fck_f2_smem(int esize, int split, int d, int qk_softmax)
{
    size_t q = (size_t)FCK_F2_BR * (size_t)d * (size_t)esize * (fck_f2_q_split(split, qk_softmax) ? 2 : 1);
    size_t kv = 2 * (size_t)fck_f2_bc(esize, split, d, qk_softmax) * (size_t)d * (size_t)esize;
    if (!qk_softmax) return q + 2 * kv;
    size_t stage = (size_t)FCK_F2_BR * (size_t)fck_f2_bc(esize, split, d, 1) * (size_t)esize;
    return (esize == 2 ? (q > stage ? q : stage) : q + stage) + kv;
}

/* Blocks of `threads` threads using smem bytes of shared memory and regs registers per
 * thread (0: not known, no bound) that fit on one SM of compute capability 9.0: 228 KiB
 * of shared memory (1 KiB of it reserved per block), 64 Ki registers (allocated per warp
 * in units of 256), 2048 threads, 32 blocks. */
FCK_CX int fck_sm90_blocks_per_sm(size_t smem, int threads, int regs)
{
    int by_smem = (int)((size_t)228 * 1024 / (smem + 1024));
    int warps = (threads + 31) / 32;
    int regs_warp = ((regs * 32 + 255) / 256) * 256;
    int by_regs = regs > 0 ? 65536 / (regs_warp * warps) : 32;
    int by_threads = 2048 / threads;
    int n = by_smem < by_regs ? by_smem : by_regs;
    n = n < by_threads ? n : by_threads;
    return n < 32 ? n : 32;
}

/* ================================================================ split-KV decode
 * fck_decode_attention (decode.cu): few queries against a long key/value cache. A
 * block of FCK_DEC_THREADS threads takes one key/value head's `rows` = group·s query
 * rows (their Q in registers, a warp per key along d) against one split of `chunk`
 * keys, in pieces of `piece` keys whose scores sit in shared memory (then their
 * probabilities, in place, for P·V: thread (group of keys, 4 columns of V)); it writes the
 * split's partial output, row maxima and sums; a second kernel combines the splits by
 * their maxima. Splits (fck_dec_plan_make): the count whose grid ends soonest on the
 * blocks the device keeps resident at once, at least FCK_DEC_MIN_KEYS keys each, chunk a
 * multiple of 32. Template sizes: vecs elements of d per lane (2: d <= 64, 4: d <= 128),
 * rtile rows held (4, 8 or 16). */
#define FCK_DEC_THREADS 256
#define FCK_DEC_MAX_ROWS 16
#define FCK_DEC_MAX_D 128
#define FCK_DEC_MIN_KEYS 64
#define FCK_DEC_WAVES_SEARCHED 32 /* waves of the grid the split count's search goes through */
#define FCK_DEC_SCORE_FLOATS 8192 /* rows x piece at most: 32 KiB of scores */
/* splits of a key/value head at most: the combine (and qk_softmax's normalization)
 * keeps a weight per split in shared memory, 48 KiB at most without an opt-in */
#define FCK_DEC_MAX_SPLITS (48 * 1024 / 4)
/* keys at most: a split's end (at most skv + chunk - 1, chunk at most skv rounded up to
 * 32) and the split count's arithmetic stay inside an int */
#define FCK_DEC_MAX_SKV (1 << 30)
typedef struct {
    int rows;   /* query rows per key/value head: group·s */
    int nsplit; /* splits of each key/value head's keys */
    int chunk;  /* keys per split (the last may have fewer) */
    int piece;  /* keys per piece of a split */
    int vecs;   /* elements of a row per lane: 2 or 4 */
    int rtile;  /* rows the kernel holds: 4, 8 or 16 */
} fck_dec_plan;

/* Whether the decode kernel takes rows query rows per key/value head of dimension d
 * over skv keys. */
FCK_HD int fck_dec_supports(long long rows, long long d, long long skv)
{
    return rows >= 1 && rows <= FCK_DEC_MAX_ROWS && d >= 1 && d <= FCK_DEC_MAX_D && skv >= 1 && skv <= FCK_DEC_MAX_SKV;
}
/* The kernel's template sizes for d and rows: elements per lane, rows held. */
FCK_HD int fck_dec_vecs(int d) { return d <= 64 ? 2 : 4; }
FCK_HD int fck_dec_rtile(int rows) { return rows <= 4 ? 4 : rows <= 8 ? 8 : 16; }
/* Keys per piece at most for rows: the scores' shared memory in whole warps of keys. */
FCK_HD int fck_dec_piece_cap(int rows) { return FCK_DEC_SCORE_FLOATS / (rows > 0 ? rows : 1) / 32 * 32; }
/* Keys per split when skv keys go to n splits: whole warps. */
FCK_HD int fck_dec_chunk_of(int skv, long long n) { return (int)(((skv + n - 1) / n + 31) / 32 * 32); }
/* What the split search minimises for bkv heads in splits of chunk keys (nsplit of them)
 * on `slots` resident blocks: waves of the grid x keys per block. A memory-bound
 * block's time follows its keys, and a last wave that fills few of the slots takes
 * about as long as a full one. */
FCK_HD long long fck_dec_grid_cost(long long bkv, int nsplit, int chunk, long long slots)
{
    return (bkv * nsplit + slots - 1) / slots * chunk;
}

/* The plan for bkv key/value heads of skv keys, rows query rows each, on a device that
 * keeps `slots` split blocks resident at once (its SMs x the kernel's blocks per SM).
 * The split count: of 1 .. FCK_DEC_WAVES_SEARCHED splits a head and the largest counts
 * that fit each number of waves from the fewest (one split a head) on,
 * FCK_DEC_WAVES_SEARCHED of them, the one of least fck_dec_grid_cost, the fewest splits
 * among equals (each adds to the combine's work); at least FCK_DEC_MIN_KEYS keys a
 * split. 64 candidates: the launchers plan every call. */
FCK_HD fck_dec_plan fck_dec_plan_make(long long bkv, int rows, int skv, int d, long long slots)
{
    fck_dec_plan p;
    p.rows = rows;
    p.vecs = fck_dec_vecs(d);
    p.rtile = fck_dec_rtile(rows);
    if (bkv < 1) bkv = 1;
    if (slots < 1) slots = 1;
    if (skv < 1) skv = 1;
    const long long most = ((long long)skv + FCK_DEC_MIN_KEYS - 1) / FCK_DEC_MIN_KEYS;
    const long long w0 = (bkv + slots - 1) / slots; /* the waves of one split a head */
    long long best = -1;
    p.chunk = fck_dec_chunk_of(skv, 1);
    p.nsplit = 1;
    /* i < SEARCHED: 1 + i splits (many waves: a few splits a head); then the most splits
     * that fit each number of waves from w0 on */
    for (long long i = 0; i < 2 * FCK_DEC_WAVES_SEARCHED; i++) {
        long long n = i < FCK_DEC_WAVES_SEARCHED ? 1 + i : (w0 + i - FCK_DEC_WAVES_SEARCHED) * slots / bkv;
        if (n < 1) n = 1;
        if (n > most) n = most;
        if (n > FCK_DEC_MAX_SPLITS) n = FCK_DEC_MAX_SPLITS;
        const int chunk = fck_dec_chunk_of(skv, n), ns = (int)(((long long)skv + chunk - 1) / chunk);
        const long long cost = fck_dec_grid_cost(bkv, ns, chunk, slots);
        if (best < 0 || cost < best || (cost == best && ns < p.nsplit)) {
            best = cost;
            p.chunk = chunk;
            p.nsplit = ns;
        }
    }
    const int cap = fck_dec_piece_cap(rows);
    p.piece = p.chunk < cap ? p.chunk : cap;
    return p;
}
/* Keys [*ja, *jb) of split sp. */
FCK_HD void fck_dec_split_keys(const fck_dec_plan *p, int sp, int skv, int *ja, int *jb)
{
    *ja = sp * p->chunk;
    *jb = *ja + p->chunk < skv ? *ja + p->chunk : skv;
}
/* The scores' row stride in shared memory: a piece and one float. The lanes that store
 * one key's scores, one lane a row (fck_dec_lane_writes), then hit as many banks as
 * rows; at a stride of the piece, whole warps of keys, they all hit the key's bank, a
 * 16-way conflict at 16 rows, for every key. */
FCK_HD int fck_dec_sc_stride(int piece) { return piece + 1; }
/* Shared memory of a split block in floats: the piece's scores, or at the end the sum
 * of the groups of keys' partial outputs (rows x d, d at most FCK_DEC_MAX_D). */
FCK_HD size_t fck_dec_smem_floats(const fck_dec_plan *p)
{
    const int ss = fck_dec_sc_stride(p->piece), w = ss > FCK_DEC_MAX_D ? ss : FCK_DEC_MAX_D;
    return (size_t)p->rows * (size_t)w;
}
/* ... the most any plan for rows gives (its pieces at fck_dec_piece_cap). */
FCK_HD size_t fck_dec_smem_floats_most(int rows)
{
    const int ss = fck_dec_sc_stride(fck_dec_piece_cap(rows)), w = ss > FCK_DEC_MAX_D ? ss : FCK_DEC_MAX_D;
    return (size_t)rows * (size_t)w;
}
/* Floats of one split's partial result: rows x d outputs, rows maxima, rows sums. */
FCK_HD size_t fck_dec_part_floats(int rows, int d) { return (size_t)rows * ((size_t)d + 2); }
/* The workspace: every split's partial result. */
FCK_HD size_t fck_dec_workspace_floats(const fck_dec_plan *p, long long bkv, int d)
{
    return (size_t)bkv * (size_t)p->nsplit * fck_dec_part_floats(p->rows, d);
}
/* The scores' reduce-scatter over a warp's 32 lanes (decode.cu: rows_reduce) for rm
 * rows held (a power of two up to 32): the row whose total lane ends with, and whether
 * it is the one lane of its 32 / rm that writes it. */
FCK_HD int fck_dec_lane_row(int lane, int rm) { return lane / (32 / rm); }
FCK_HD int fck_dec_lane_writes(int lane, int rm) { return lane % (32 / rm) == 0; }
/* P·V: each thread takes FCK_DEC_PV_COLS adjacent columns of V (one 16-byte fp32 or
 * 8-byte bf16/fp16 load per key) for one group of keys; the threads of a key are d /
 * FCK_DEC_PV_COLS rounded up to a power of two (32 for d = 128: a warp per key), and
 * the FCK_DEC_THREADS threads make FCK_DEC_THREADS / that groups of keys (8 for d =
 * 128). */
#define FCK_DEC_PV_COLS 4
FCK_HD int fck_dec_pv_threads(int d)
{
    const int cols = (d + FCK_DEC_PV_COLS - 1) / FCK_DEC_PV_COLS;
    int t = 1;
    while (t < cols) t *= 2;
    return t;
}
FCK_HD int fck_dec_key_groups(int d) { return FCK_DEC_THREADS / fck_dec_pv_threads(d); }
/* Thread t's share of P·V: keys grp, grp + groups, ... of each piece and columns c0 ..
 * c0 + FCK_DEC_PV_COLS − 1 (those below d; none where c0 >= d). */
FCK_HD void fck_dec_pv_slot(int t, int d, int *grp, int *c0)
{
    const int tpk = fck_dec_pv_threads(d);
    *grp = t / tpk;
    *c0 = FCK_DEC_PV_COLS * (t % tpk);
}

/* ================================================================ row softmax plan
 * fck_softmax_rows reads each row once: the row sits in registers, `threads` threads per
 * row, each holding nvec vectors of vec elements, at most fck_softmax_ept(vec) elements
 * (32 in 16-byte vectors; 16 as scalars, whose addresses and bounds take registers too:
 * 1024 threads leave 64 registers each). vec is 16 bytes' worth where a row is a whole
 * number of 16-byte vectors, else 1. A warp takes a row of up to 32·ept elements (8 rows
 * per 256-thread block); longer rows take 64 to 1024 threads; rows beyond 1024·ept
 * (fck_softmax_max_cols) cannot sit in the registers of one block and take the two-pass
 * kernel (threads = 0 in the plan). */
#define FCK_SOFTMAX_MAX_THREADS 1024
typedef struct {
    int threads; /* per row; 0: two passes */
    int vec;     /* elements per vector */
    int nvec;    /* vectors per thread */
} fck_softmax_plan;

FCK_CX int fck_softmax_ept(int vec) { return vec > 1 ? 32 : 16; }
FCK_HD size_t fck_softmax_max_cols(int vec) { return (size_t)FCK_SOFTMAX_MAX_THREADS * (size_t)fck_softmax_ept(vec); }

FCK_HD fck_softmax_plan fck_softmax_plan_make(size_t cols, int esize)
{
    fck_softmax_plan p;
    p.vec = (cols * (size_t)esize) % 16 == 0 ? 16 / esize : 1;
    p.threads = 0;
    p.nvec = 0;
    const size_t ept = (size_t)fck_softmax_ept(p.vec);
    if (cols == 0 || cols > fck_softmax_max_cols(p.vec)) return p;
    if (cols <= 32 * ept) {
        p.threads = 32;
        p.nvec = 1;
        while ((size_t)32 * p.nvec * p.vec < cols) p.nvec *= 2;
        return p;
    }
    p.nvec = (int)ept / p.vec;
    p.threads = 64;
    while ((size_t)p.threads * ept < cols) p.threads *= 2;
    return p;
}
/* First column of vector j of thread tr (of `threads` per row): the threads of a row read
 * consecutive vectors, so each load instruction of a warp covers 32 adjacent vectors. */
FCK_HD int fck_softmax_col(int j, int tr, int threads, int vec) { return (j * threads + tr) * vec; }
/* Rows of one block: 256 threads' worth for narrow rows, one row from 256 threads up. */
FCK_HD int fck_softmax_rows_per_block(int threads) { return threads < 256 ? 256 / threads : 1; }

/* ================================================================ norm row plan
 * The norm kernels keep a row in registers like the softmax, with half its elements per
 * thread (fck_norm_ept: 16 in 16-byte vectors, 8 as scalars): the fused add + norm also
 * holds the addresses of x, r, γ, β and the output for each, and 1024 threads leave 64
 * registers each. So a warp takes a row of up to 32·ept elements, longer rows 64 to 1024
 * threads, and rows beyond 1024·ept (16384, or 8192 not in whole vectors) get threads = 0. */
FCK_CX int fck_norm_ept(int vec) { return vec > 1 ? 16 : 8; }
FCK_HD size_t fck_norm_max_cols(int vec) { return (size_t)FCK_SOFTMAX_MAX_THREADS * (size_t)fck_norm_ept(vec); }

/* Whether p sits on a 16-byte boundary (a null pointer does): the norm kernels take
 * 16-byte vectors only where every tensor they touch does (aligned, below). */
FCK_HD int fck_aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* The row plan for rows of cols elements of esize bytes; aligned: every tensor's base
 * on 16 bytes (fck_aligned16), without which the rows are read as scalars. */
FCK_HD fck_softmax_plan fck_norm_plan_make(size_t cols, int esize, int aligned)
{
    fck_softmax_plan p;
    p.vec = aligned && (cols * (size_t)esize) % 16 == 0 ? 16 / esize : 1;
    p.threads = 0;
    p.nvec = 0;
    const size_t ept = (size_t)fck_norm_ept(p.vec);
    if (cols == 0 || cols > fck_norm_max_cols(p.vec)) return p;
    p.threads = 32;
    p.nvec = 1;
    while ((size_t)p.threads * p.nvec * p.vec < cols) {
        if (p.threads == 32 && (size_t)(p.nvec * 2 * p.vec) <= ept) p.nvec *= 2;
        else
            p.threads *= 2;
    }
    if (p.threads > 32) p.nvec = (int)ept / p.vec;
    return p;
}

/* ================================================================ head plan
 * qk_norm_rope's kernels take a head of d (even) as d/2 rotate-half pairs (i, i + d/2):
 * thread t of a head holds np pairs of vectors, its j-th starting at column
 * fck_head_col(j, t, tph, vec) and its partner d/2 later, so normalizing and rotating
 * need no exchange but the sum of squares. vec is 16 bytes' worth where d/2 is a whole
 * number of 16-byte vectors (each head then starts 16-byte aligned) and every tensor's
 * base is 16-byte aligned (aligned), else 1. tph, the
 * threads per head, is the power of two that covers the half's vectors, up to 32 (a
 * head never straddles a warp: its sum is shuffles within tph lanes); past 32 vectors a
 * thread holds np pairs, a power of two, at most 32 elements (2·np·vec). Heads longer
 * than that (d > 1024) get tph = 0. */
typedef struct {
    int tph; /* threads per head; 0: too long */
    int vec; /* elements per vector */
    int np;  /* pairs of vectors per thread */
} fck_head_plan;

FCK_HD fck_head_plan fck_head_plan_make(int d, int esize, int aligned)
{
    fck_head_plan p;
    p.tph = 0;
    p.np = 0;
    p.vec = 1;
    if (d <= 0 || d % 2) return p;
    const int half = d / 2;
    p.vec = aligned && (half * esize) % 16 == 0 ? 16 / esize : 1;
    const int hv = half / p.vec;
    p.np = 1;
    while (32 * p.np < hv) p.np *= 2;
    if (2 * p.np * p.vec > 32) {
        p.np = 0;
        return p;
    }
    p.tph = 1;
    while (p.tph < hv && p.tph < 32) p.tph *= 2;
    return p;
}
/* First column of pair j of thread t (its partner is d/2 further): the threads of a head
 * read consecutive vectors. */
FCK_HD int fck_head_col(int j, int t, int tph, int vec) { return (j * tph + t) * vec; }

/* ================================================================ gelu on 16-bit data
 * gelu_tanh(x) = 0.5·x·(1 + tanh u), u = √(2/π)·(x + 0.044715·x³), as x·σ(2u) =
 * x / (1 + 2^(−2u·log2 e)), since 0.5·(1 + tanh u) = σ(2u). On the GPU one ex2.approx
 * and one div.approx: 7 PTX instructions where the tanhf form takes 31 (nvcc 13,
 * sm_90), and no cancellation at negative x, where 1 + tanh u loses its leading digits
 * (near x = −3, up to 2.3e-5 of gelu(x) in fp32 with glibc's tanhf). Within about 1e-6
 * of gelu(x), relative, from x = −4 up (ex2.approx's 2^-22, the exponent's rounding,
 * |2u·log2 e|·2^-24, and div.approx's 2 ulp; the exponent's share grows below, to 1e-5
 * at x = −10, where gelu is −1e-36): far under a 16-bit value's rounding (2^-9 bf16,
 * 2^-11 fp16). So 16-bit data take it (kernel_util.cuh's gelu_for), and fusecal's
 * GEMM's prologue, which puts each element of x through gelu n/128 times (gemm.cu),
 * issues under a quarter of the instructions for it. Ends: x → +∞ gives x; x → −∞ gives
 * −0 (the power overflows, or a divisor past 2^126 gives div.approx's 0). On the host,
 * exp2f and a division: tests/test_kernel_logic.c checks the identity. */
FCK_HD float fck_gelu_sigmoid(float x)
{
    const float a = -2.0f * 0.7978845608028654f * 1.4426950408889634f; /* −2·√(2/π)·log2 e */
    const float d = 1.0f + exp2f(a * fmaf(0.044715f * x * x, x, x));
#ifdef __CUDA_ARCH__
    return __fdividef(x, d);
#else
    return x / d;
#endif
}

/* ================================================================ fusecal's GEMM
 * fck_gemm (gemm.cu): y = x·Wᵀ with a prologue on x or an epilogue no library has, bf16
 * or fp16 on mma.sync m16n8k16. A block takes FCK_GM_BM rows of y and walks k in tiles
 * of FCK_GM_BK (128 bytes of a row: 8 chunks, swizzled by FCK_SWZ_ROW8 as flash2's d = 64
 * tiles are) against a tile of FCK_GM_BN rows of W. Its FCK_GM_THREADS threads copy each
 * k-tile of x and of W chunk by chunk (fck_copy_row/chunk), x through the prologue on
 * its way into shared memory. Warp w of the 2 x 4 warp grid owns rows [64·(w / 4), +64)
 * and W-tile rows [32·(w % 4), +32) of the block: 4 m16 tiles x 4 n8 tiles. The grid
 * is 1-D, the column tiles of a row of blocks fastest (blocks in flight share their rows
 * of x).
 * Gated (SwiGLU, W = [W_g; W_u], [2n, k]): a block's W tile interleaves the two halves
 * eight rows at a time — tile rows 16j..16j+7 are gate rows, 16j+8..16j+15 the up rows
 * of the same eight output columns — so each warp's n-tiles 2p and 2p + 1 hold the gate
 * and up products of the same columns in the same lanes, and silu(g)·u is formed in the
 * registers. Such a block covers FCK_GM_BN / 2 columns of y. */
#define FCK_GM_BM 128
#define FCK_GM_BN 128
#define FCK_GM_BK 64
#define FCK_GM_THREADS 256
#define FCK_GM_MT 4 /* m16 tiles per warp */
#define FCK_GM_NT 4 /* n8 tiles per warp */
/* chunks of each operand's k-tile a thread copies */
#define FCK_GM_COPIES (FCK_GM_BM * (FCK_GM_BK / 8) / FCK_GM_THREADS)
FCK_HD int fck_gm_warp_row(int warp) { return 16 * FCK_GM_MT * (warp >> 2); }
FCK_HD int fck_gm_warp_col(int warp) { return 8 * FCK_GM_NT * (warp & 3); }
/* Element offset of (r, col) in a k-tile of x or W in shared memory. */
FCK_HD int fck_gm_off(int r, int col) { return fck_tile_off(r, col, FCK_GM_BK, 8, FCK_SWZ_ROW8); }
/* Where lane's ldmatrix.x4 reads: m-tile mi's A fragments (A order) and n-tiles 2np,
 * 2np + 1's B fragments (B order) for k-step ks (16 columns) of the k-tile. */
FCK_HD int fck_gm_a_frag(int warp, int mi, int ks, int lane)
{
    return fck_gm_off(fck_gm_warp_row(warp) + 16 * mi + fck_ldsm_a_row(lane), (2 * ks + fck_ldsm_a_chunk(lane)) * 8);
}
FCK_HD int fck_gm_b_frag(int warp, int np, int ks, int lane)
{
    return fck_gm_off(fck_gm_warp_col(warp) + 16 * np + fck_ldsm_b_row(lane), (2 * ks + fck_ldsm_b_chunk(lane)) * 8);
}
/* Columns of y a block covers. */
FCK_HD int fck_gm_cols(int glu) { return glu ? FCK_GM_BN / 2 : FCK_GM_BN; }
/* The row of W that row r of block column bn's W tile holds, or -1 past W (n: y's
 * columns; glu: the gated interleave, the up half n rows below the gate half). */
FCK_HD long long fck_gm_w_row(int r, int bn, int n, int glu)
{
    if (!glu) {
        long long j = (long long)bn * FCK_GM_BN + r;
        return j < n ? j : -1;
    }
    long long j = (long long)bn * (FCK_GM_BN / 2) + (r >> 4) * 8 + (r & 7);
    return j < n ? j + (long long)((r >> 3) & 1) * n : -1;
}
/* Row and column, within the block's tile of y, of accumulator i of lane in tile (mi,
 * nt); gated: the column of the pair of n-tiles 2p (gate) and 2p + 1 (up). */
FCK_HD int fck_gm_c_row(int warp, int mi, int lane, int i)
{
    return fck_gm_warp_row(warp) + 16 * mi + fck_c_row(lane, i);
}
FCK_HD int fck_gm_c_col(int warp, int nt, int lane, int i)
{
    return fck_gm_warp_col(warp) + 8 * nt + fck_c_col(lane, i);
}
FCK_HD int fck_gm_glu_col(int warp, int p, int lane, int i)
{
    return fck_gm_warp_col(warp) / 2 + 8 * p + fck_c_col(lane, i);
}
/* Blocks of the grid for y [m, n], or -1 beyond a 1-D grid (2^31 - 1) or for an empty y. */
FCK_HD long long fck_gm_blocks(long long m, long long n, int glu)
{
    if (m < 1 || n < 1) return -1;
    long long b = ((m + FCK_GM_BM - 1) / FCK_GM_BM) * ((n + fck_gm_cols(glu) - 1) / fck_gm_cols(glu));
    return b > 0x7fffffffLL ? -1 : b;
}
/* Block bid's tile: row of tiles *bm, column *bn, of nbm x nbn tiles. The grid goes
 * down groups of FCK_GM_GROUP rows of tiles a column at a time, so that the blocks
 * resident together share columns of W (each W tile read once a group from memory, not
 * once a row of tiles: W is the larger operand of an LLM's projections, e.g. 235 MB at
 * n = 14336 gated, k = 4096, which the row-major order read m/128 times) and the
 * group's rows of x (FCK_GM_GROUP x 128 rows of k, 8 MiB at k = 4096 in 16 bits) stay in
 * L2 across the columns. */
#define FCK_GM_GROUP 8
FCK_HD void fck_gm_block(int bid, int nbm, int nbn, int *bm, int *bn)
{
    const int per = FCK_GM_GROUP * nbn, g = bid / per, first = g * FCK_GM_GROUP, in = bid - g * per;
    const int rows = nbm - first < FCK_GM_GROUP ? nbm - first : FCK_GM_GROUP;
    *bm = first + in % rows;
    *bn = in / rows;
}
/* Dynamic shared memory: two k-tiles of x and two of W (double-buffered), 16-bit. */
FCK_CX size_t fck_gm_smem(void) { return 2 * (size_t)(FCK_GM_BM + FCK_GM_BN) * FCK_GM_BK * 2; }

/* ================================================================ napkin math */
/* FLOPs of attention, 2·s²·d for Q·Kᵀ and as many for P·V per head, the s x s matrix
 * counted whole (a causal kernel skips about half of it). */
FCK_HD double fck_attention_flops(double bh, double s, double d) { return 4.0 * bh * s * s * d; }
/* Bytes a one-read softmax moves: each element read once and written once. */
FCK_HD double fck_softmax_bytes(double rows, double cols, int esize) { return 2.0 * rows * cols * esize; }

#endif
