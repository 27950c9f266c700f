/* test_kernel_logic.c — the index maps, tile bounds, launch plans and softmax arithmetic
 * of fusecal's CUDA kernels (kernels/kernel_logic.h), run on the CPU: the same functions
 * the kernels call, checked by brute force, against float64 references, and through an
 * emulation of ldmatrix and mma.sync built from the PTX ISA's fragment layouts. */
#include "kernel_logic.h"
#include "test.h"

#include <stdint.h>

/* ---------------------------------------------------------------- helpers */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint32_t rnd32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}
static double rnd_unit(void) { return (rnd32() & 0xffffff) / 16777216.0; } /* [0, 1) */
static int rnd_int(int lo, int hi) { return lo + (int)(rnd32() % (uint32_t)(hi - lo + 1)); }

/* ---------------------------------------------------------------- fast division */

static void check_div(uint32_t d, uint32_t n)
{
    fck_fastdiv f = fck_fastdiv_make(d);
    uint32_t q = fck_div(f, n), r = fck_mod(f, n);
    CHECK_MSG(q == n / d && r == n % d, "%u / %u: got %u rem %u", n, d, q, r);
}

static void test_fastdiv(void)
{
    const uint32_t top = 0x7fffffffu;
    for (uint32_t d = 1; d <= 3000; d++) {
        const uint32_t ns[] =
            {0, 1, d - 1, d, d + 1, 2 * d - 1, top - 1, top - d + 1, (top / d) * d - 1, top, (top / d) * d};
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            if (ns[i] <= top) check_div(d, ns[i]);
        for (int k = 0; k < 40; k++) check_div(d, rnd32() & top);
    }
    for (int s = 0; s < 31; s++) { /* powers of two and their neighbours */
        const uint32_t p = 1u << s;
        const uint32_t ds[] = {p, p + 1, p - 1 ? p - 1 : 1, p + p / 3};
        for (size_t i = 0; i < 4; i++) {
            if (ds[i] < 1 || ds[i] > top) continue;
            check_div(ds[i], top);
            check_div(ds[i], ds[i]);
            check_div(ds[i], ds[i] - 1);
            for (int k = 0; k < 200; k++) check_div(ds[i], rnd32() & top);
        }
    }
    for (int k = 0; k < 200000; k++) {
        const uint32_t d = 1 + (rnd32() & top) % (1u << rnd_int(1, 31));
        check_div(d, rnd32() & top);
    }
}

/* every element of small tensors: the channel by fast division, and which elements a
 * vector's scale/shift loads assume (fck_affine_mode) */
static void test_channel_map(void)
{
    const int vecs[] = {4, 8};
    for (int nhwc = 0; nhwc < 2; nhwc++)
        for (uint32_t c = 1; c <= 20; c++)
            for (uint32_t hw = 1; hw <= 20; hw++) {
                const uint32_t n = 3, total = n * c * hw;
                fck_chanmap cm = fck_chanmap_make(c, hw, nhwc);
                for (uint32_t i = 0; i < total; i++) {
                    const uint32_t want = nhwc ? i % c : (i / hw) % c;
                    CHECK_MSG(fck_channel(&cm, i) == want, "nhwc=%d c=%u hw=%u i=%u", nhwc, c, hw, i);
                }
                for (int vi = 0; vi < 2; vi++) {
                    const int v = vecs[vi];
                    const int mode = fck_affine_mode(c, hw, nhwc, v, 1);
                    for (uint32_t base = 0; base + (uint32_t)v <= total; base += (uint32_t)v) {
                        const uint32_t c0 = fck_channel(&cm, base);
                        for (int j = 0; j < v; j++) {
                            const uint32_t cj = nhwc ? (base + j) % c : ((base + j) / hw) % c;
                            if (mode == FCK_AFFINE_RUN) CHECK(cj == c0 + (uint32_t)j && c0 % (uint32_t)v == 0);
                            if (mode == FCK_AFFINE_ONE) CHECK(cj == c0);
                        }
                    }
                }
                CHECK(fck_affine_mode(c, hw, 1, 4, 0) == FCK_AFFINE_EACH); /* unaligned scale: per element */
            }
    fck_chanmap big = fck_chanmap_make(2048, 3136, 0); /* resnet-like, 32 x 2048 x 56 x 56 / 2^31 */
    for (int k = 0; k < 100000; k++) {
        uint32_t i = rnd32() & 0x7fffffffu;
        CHECK(fck_channel(&big, i) == (i / 3136) % 2048);
    }
}

/* ---------------------------------------------------------------- attention grid */

static void test_attn_grid(void)
{
    for (uint32_t nt = 1; nt <= 40; nt++)
        for (uint32_t heads = 1; heads <= 6; heads++) {
            int seen[6][40] = {{0}};
            uint32_t prev_h = 0, prev_t = 0;
            for (uint32_t b = 0; b < heads * nt; b++) {
                uint32_t h, t;
                fck_attn_block(b, nt, &h, &t);
                CHECK(h < heads && t < nt);
                if (h >= heads || t >= nt) continue;
                seen[h][t]++;
                if (b > 0) { /* query tile fastest, heads in order, last tile first within a head */
                    CHECK(h == prev_h || h == prev_h + 1);
                    if (h == prev_h) CHECK(t + 1 == prev_t);
                    else
                        CHECK(prev_t == 0 && t == nt - 1);
                } else {
                    CHECK(h == 0 && t == nt - 1);
                }
                prev_h = h;
                prev_t = t;
            }
            for (uint32_t h = 0; h < heads; h++)
                for (uint32_t t = 0; t < nt; t++) CHECK(seen[h][t] == 1);
        }
    CHECK(fck_attn_grid_blocks(64, 4096, 128) == 64 * 32);
    CHECK(fck_attn_grid_blocks(70000, 4096, 64) == 70000LL * 64); /* past the old 65535 of grid.y */
    CHECK(fck_attn_grid_blocks(1, 100, 64) == 2);
    CHECK(fck_attn_grid_blocks(1LL << 20, 1LL << 17, 64) == -1); /* 2^31 blocks */
    CHECK(fck_attn_grid_blocks((1LL << 20) - 1, 1LL << 17, 64) == ((1LL << 20) - 1) * 2048);
    CHECK(fck_attn_grid_blocks(0, 10, 64) == -1 && fck_attn_grid_blocks(3, 0, 64) == -1);
}

/* Brute force over query and key/value lengths, tiles and masks: every unmasked (query,
 * key) lies in a visited key tile; unvisited tiles hold no unmasked pair; tiles that skip
 * the mask hold no masked pair; a warp skips only tiles that are masked for all its rows.
 * Causal: query i sees keys j <= i + skv − s (skv >= s); without the mask skv may be
 * shorter than s. */
static void check_attn_tiles(int s, int skv, int br, int bc, int causal)
{
    const int ntk = (skv + bc - 1) / bc;
    for (int q0 = 0; q0 < s; q0 += br) {
        const int nkt = fck_attn_key_tiles(q0, br, bc, s, skv, causal);
        const int qend = q0 + br < s ? q0 + br : s;
        CHECK(nkt >= 1 && nkt <= ntk);
        for (int kt = 0; kt < ntk; kt++) {
            const int k0 = kt * bc;
            int any_unmasked = 0;
            for (int qi = q0; qi < qend; qi++)
                for (int kj = k0; kj < k0 + bc; kj++) {
                    const int masked = fck_attn_masked(kj, fck_attn_last_key(qi, s, skv), skv, causal);
                    CHECK(masked == (kj >= skv || (causal && kj > qi + skv - s)));
                    any_unmasked |= !masked;
                    if (masked) CHECK(fck_attn_tile_needs_mask(k0, bc, skv, causal, fck_attn_last_key(q0, s, skv)));
                }
            CHECK_MSG((kt < nkt) == any_unmasked, "s=%d skv=%d br=%d bc=%d causal=%d q0=%d kt=%d nkt=%d", s, skv, br,
                      bc, causal, q0, kt, nkt);
            for (int w0 = q0; w0 < qend; w0 += 32) { /* warps of 32 rows */
                const int khi = fck_attn_last_key(w0 + 31, s, skv);
                if (!fck_attn_tile_all_masked(k0, causal, khi)) continue;
                for (int qi = w0; qi <= w0 + 31 && qi < s; qi++)
                    for (int kj = k0; kj < k0 + bc; kj++)
                        CHECK(fck_attn_masked(kj, fck_attn_last_key(qi, s, skv), skv, causal));
                /* and the rows past s as well: they are computed, never stored */
                CHECK(k0 > khi);
            }
        }
    }
}

static void test_attn_tiles(void)
{
    const int brs[] = {64, 128}, bcs[] = {16, 32, 64, 128};
    for (int s = 1; s <= 300; s += (s < 140 ? 1 : 7))
        for (int bi = 0; bi < 2; bi++)
            for (int ci = 0; ci < 4; ci++)
                for (int causal = 0; causal < 2; causal++) {
                    /* skv = s; a cached prefix (chunked prefill, decode); shorter (no mask) */
                    const int skvs[] = {s, s + 1 + s % 37, s + 131, causal ? s : (s + 1) / 2};
                    for (int k = 0; k < 4; k++)
                        if (k == 0 || s % 3 == 0) check_attn_tiles(s, skvs[k], brs[bi], bcs[ci], causal);
                }
    /* decode: one query, a long cache; the one query sees every key */
    for (int causal = 0; causal < 2; causal++) {
        check_attn_tiles(1, 4096, 64, 64, causal);
        CHECK(fck_attn_key_tiles(0, 64, 64, 1, 4096, causal) == 64);
    }
    CHECK(fck_attn_key_tiles(0, 64, 64, 64, 4096, 1) == 64);
    CHECK(fck_attn_key_tiles(0, 64, 64, 64, 64, 1) == 1);
}

/* Grouped-query heads: over b batches of h query heads and hkv key/value heads, query
 * head i of batch bi (flattened n = bi·h + i) reads key/value head bi·hkv + i/(h/hkv), and
 * every key/value head serves exactly h/hkv query heads. */
static void test_attn_kv_head(void)
{
    for (int b = 1; b <= 3; b++)
        for (int h = 1; h <= 12; h++)
            for (int hkv = 1; hkv <= h; hkv++) {
                if (h % hkv) continue;
                int served[36] = {0};
                for (int n = 0; n < b * h; n++) {
                    const uint32_t kv = fck_attn_kv_head((uint32_t)n, (uint32_t)(h / hkv));
                    CHECK(kv == (uint32_t)((n / h) * hkv + (n % h) / (h / hkv)));
                    served[kv]++;
                }
                for (int kv = 0; kv < b * hkv; kv++) CHECK(served[kv] == h / hkv);
            }
}

/* ---------------------------------------------------------------- shared-memory layouts */

static void test_swizzle_bijective(void)
{
    const int modes[] = {FCK_SWZ_NONE, FCK_SWZ_ROW8, FCK_SWZ_ROW4X2};
    const int rows_elems[] = {32, 64, 128}, epcs[] = {4, 8};
    for (int mi = 0; mi < 3; mi++)
        for (int ri = 0; ri < 3; ri++)
            for (int ei = 0; ei < 2; ei++) {
                const int re = rows_elems[ri], epc = epcs[ei], rows = 40;
                if (re / epc < 8) continue; /* rows of at least 8 chunks */
                static unsigned char hit[40 * 128];
                memset(hit, 0, sizeof hit);
                for (int r = 0; r < rows; r++)
                    for (int col = 0; col < re; col++) {
                        const int off = fck_tile_off(r, col, re, epc, modes[mi]);
                        CHECK(off >= r * re && off < (r + 1) * re); /* stays in its row */
                        if (off < 0 || off >= rows * re) continue;
                        hit[off]++;
                        if (col % epc) /* chunks stay whole */
                            CHECK(off == fck_tile_off(r, col - 1, re, epc, modes[mi]) + 1);
                    }
                for (int i = 0; i < rows * re; i++) CHECK(hit[i] == 1);
            }
}

/* Shared-memory wavefronts of one warp-wide access: lanes with a byte address each (or -1,
 * inactive), `width` bytes per lane. 4-byte accesses are served per warp, 8-byte per
 * half-warp, 16-byte (and each 8x8 matrix of ldmatrix) per quarter-warp; within one, the
 * distinct 4-byte words that fall in one of the 32 banks are served one after another.
 * Returns the worst count (1: no conflict). */
static int bank_degree(const long addr[32], int width)
{
    const int group = width == 4 ? 32 : width == 8 ? 16 : 8;
    int worst = 1;
    for (int g0 = 0; g0 < 32; g0 += group) {
        long words[32][32];
        int nw[32] = {0};
        for (int l = g0; l < g0 + group; l++) {
            if (addr[l] < 0) continue;
            for (int k = 0; k < width / 4; k++) {
                const long w = addr[l] / 4 + k;
                const int b = (int)(w % 32);
                int dup = 0;
                for (int i = 0; i < nw[b]; i++) dup |= words[b][i] == w;
                if (!dup) words[b][nw[b]++] = w;
                if (nw[b] > worst) worst = nw[b];
            }
        }
    }
    return worst;
}

#define CHECK_BANKS(addr, width, what, ...)                                     \
    do {                                                                        \
        int deg_ = bank_degree(addr, width);                                    \
        CHECK_MSG(deg_ == 1, "%d-way bank conflict: " what, deg_, __VA_ARGS__); \
    } while (0)

/* The flash2 layouts (kernels/flash2.cu) for one element size, head dimension and key tile:
 * the cp.async fills, every fragment load and the staging of O and P. */
static void check_flash2_banks(int esize, int d, int bc, int qks)
{
    const int epc = 16 / esize, nt = 128, half = esize == 2;
    const int mq = FCK_SWZ_ROW8, mv = half ? FCK_SWZ_ROW8 : FCK_SWZ_ROW4X2, mo = mv, mp = FCK_SWZ_ROW8;
    long a[32];
    /* cp.async fills of Q (128 rows), K and V (bc rows) */
    const int fills[][2] = {{128, mq}, {bc, mq}, {bc, mv}};
    for (int f = 0; f < 3; f++) {
        const int cpr = d / epc, n = fills[f][0] * cpr / nt;
        for (int w = 0; w < 4; w++)
            for (int i = 0; i < n; i++) {
                for (int l = 0; l < 32; l++) {
                    const int tid = 32 * w + l;
                    a[l] = (long)fck_tile_off(fck_copy_row(tid, i, nt, cpr), fck_copy_chunk(tid, cpr) * epc, d, epc,
                                              fills[f][1]) *
                           esize;
                }
                CHECK_BANKS(a, 16, "fill %d esize %d d %d warp %d i %d", f, esize, d, w, i);
            }
    }
    if (half) {
        for (int w = 0; w < 4; w++)
            for (int mi = 0; mi < 2; mi++)
                for (int ks = 0; ks < d / 16; ks++) { /* Q: A fragments */
                    for (int l = 0; l < 32; l++)
                        a[l] = 2L * fck_tile_off(32 * w + 16 * mi + fck_ldsm_a_row(l),
                                                 (2 * ks + fck_ldsm_a_chunk(l)) * 8, d, 8, mq);
                    CHECK_BANKS(a, 16, "ldmatrix Q d %d warp %d mi %d ks %d", d, w, mi, ks);
                }
        for (int np = 0; np < bc / 16; np++)
            for (int ks = 0; ks < d / 16; ks++) { /* K: B fragments */
                for (int l = 0; l < 32; l++)
                    a[l] = 2L * fck_tile_off(16 * np + fck_ldsm_b_row(l), (2 * ks + fck_ldsm_b_chunk(l)) * 8, d, 8, mq);
                CHECK_BANKS(a, 16, "ldmatrix K d %d np %d ks %d", d, np, ks);
            }
        for (int j = 0; j < bc / 16; j++)
            for (int dp = 0; dp < d / 16; dp++) { /* V: .trans */
                for (int l = 0; l < 32; l++)
                    a[l] = 2L * fck_tile_off(16 * j + fck_ldsm_a_row(l), (2 * dp + fck_ldsm_a_chunk(l)) * 8, d, 8, mv);
                CHECK_BANKS(a, 16, "ldmatrix.trans V d %d j %d dp %d", d, j, dp);
            }
    } else {
        for (int w = 0; w < 4; w++)
            for (int mi = 0; mi < 2; mi++)
                for (int kk = 0; kk < d / 8; kk++)
                    for (int i = 0; i < 4; i++) { /* Q: a[i] at row g + 8(i%2), column t + 4(i/2) */
                        for (int l = 0; l < 32; l++)
                            a[l] = 4L * fck_tile_off(32 * w + 16 * mi + fck_lane_g(l) + 8 * (i & 1),
                                                     8 * kk + fck_lane_t(l) + 4 * (i >> 1), d, 4, mq);
                        CHECK_BANKS(a, 4, "tf32 Q d %d mi %d kk %d i %d", d, mi, kk, i);
                    }
        for (int n8 = 0; n8 < bc / 8; n8++)
            for (int kk = 0; kk < d / 8; kk++)
                for (int i = 0; i < 2; i++) { /* K: b[i] at row 8nt + perm(g), column 8kk + t + 4i */
                    for (int l = 0; l < 32; l++)
                        a[l] = 4L * fck_tile_off(8 * n8 + fck_perm_key(fck_lane_g(l)), 8 * kk + fck_lane_t(l) + 4 * i,
                                                 d, 4, mq);
                    CHECK_BANKS(a, 4, "tf32 K d %d nt %d kk %d i %d", d, n8, kk, i);
                }
        for (int kk = 0; kk < bc / 8; kk++)
            for (int n8 = 0; n8 < d / 8; n8++)
                for (int i = 0; i < 2; i++) { /* V: b[i] at row 8kk + t + 4i, column 8nt + g */
                    for (int l = 0; l < 32; l++)
                        a[l] = 4L * fck_tile_off(8 * kk + fck_lane_t(l) + 4 * i, 8 * n8 + fck_lane_g(l), d, 4, mv);
                    CHECK_BANKS(a, 4, "tf32 V d %d kk %d nt %d i %d", d, kk, n8, i);
                }
    }
    if (!qks) { /* O staging over the warp's rows of Q: C layout in, whole rows out */
        for (int mi = 0; mi < 2; mi++)
            for (int i = 0; i < d / 8; i++)
                for (int h = 0; h < 2; h++) {
                    for (int l = 0; l < 32; l++)
                        a[l] = (long)esize *
                               fck_tile_off(16 * mi + fck_lane_g(l) + 8 * h, 8 * i + 2 * fck_lane_t(l), d, epc, mo);
                    CHECK_BANKS(a, 2 * esize, "O stage d %d mi %d i %d h %d", d, mi, i, h);
                }
        const int cpr = d / epc;
        for (int i = 0; i < cpr; i++) {
            for (int l = 0; l < 32; l++) {
                const int c = l + 32 * i;
                a[l] = (long)esize * fck_tile_off(c / cpr, (c % cpr) * epc, d, epc, mo);
            }
            CHECK_BANKS(a, 16, "O read-out d %d i %d", d, i);
        }
    } else { /* P staging: 32 rows x bc per warp */
        for (int mi = 0; mi < 2; mi++)
            for (int n8 = 0; n8 < bc / 8; n8++)
                for (int i = 0; i < 4; i += half ? 2 : 1) {
                    for (int l = 0; l < 32; l++)
                        a[l] = (long)esize *
                               fck_tile_off(16 * mi + fck_c_row(l, i), 8 * n8 + fck_c_key(l, i, !half), bc, epc, mp);
                    CHECK_BANKS(a, 4, "P stage esize %d n8 %d i %d", esize, n8, i); /* 2 x 16 bits, or 32 bits */
                }
        const int cpr = bc / epc;
        for (int i = 0; i < 32 * cpr / 32; i++) {
            for (int l = 0; l < 32; l++) {
                const int c = l + 32 * i;
                a[l] = (long)esize * fck_tile_off(c / cpr, (c % cpr) * epc, bc, epc, mp);
            }
            CHECK_BANKS(a, 16, "P read-out esize %d i %d", esize, i);
        }
    }
}

/* The reference kernels' padded rows (kernels/attention.cu): the same fragment maps on
 * row strides fck_ref_qk_stride / fck_ref_v_stride / fck_ref_stage_stride. */
static void check_ref_banks(int esize, int d)
{
    const int epc = 16 / esize, half = esize == 2;
    const int qs = fck_ref_qk_stride(esize, d), vs = fck_ref_v_stride(d);
    const int ss = fck_ref_stage_stride(esize), sc = fck_ref_stage_cols(esize);
    long a[32];
    for (int w = 0; w < 4; w++)
        for (int i = 0; i < 64 * (d / epc) / 128; i++) { /* fills: chunk c = tid + 128 i */
            for (int l = 0; l < 32; l++) {
                const int c = 32 * w + l + 128 * i, cpr = d / epc;
                a[l] = (long)esize * ((c / cpr) * qs + (c % cpr) * epc);
            }
            CHECK_BANKS(a, 16, "ref fill esize %d d %d", esize, d);
        }
    if (half) {
        for (int ks = 0; ks < d / 16; ks++) {
            for (int l = 0; l < 32; l++) a[l] = 2L * (fck_ldsm_a_row(l) * qs + (2 * ks + fck_ldsm_a_chunk(l)) * 8);
            CHECK_BANKS(a, 16, "ref ldmatrix Q d %d ks %d", d, ks);
            for (int l = 0; l < 32; l++) a[l] = 2L * (fck_ldsm_b_row(l) * qs + (2 * ks + fck_ldsm_b_chunk(l)) * 8);
            CHECK_BANKS(a, 16, "ref ldmatrix K d %d ks %d", d, ks);
            for (int l = 0; l < 32; l++) a[l] = 2L * (fck_ldsm_a_row(l) * vs + (2 * ks + fck_ldsm_a_chunk(l)) * 8);
            CHECK_BANKS(a, 16, "ref ldmatrix.trans V d %d ks %d", d, ks);
        }
    } else {
        for (int i = 0; i < 4; i++) {
            for (int l = 0; l < 32; l++)
                a[l] = 4L * ((fck_lane_g(l) + 8 * (i & 1)) * qs + fck_lane_t(l) + 4 * (i >> 1));
            CHECK_BANKS(a, 4, "ref tf32 Q/K d %d i %d", d, i);
        }
        for (int i = 0; i < 2; i++) {
            for (int l = 0; l < 32; l++) a[l] = 4L * ((fck_lane_t(l) + 4 * i) * vs + fck_lane_g(l));
            CHECK_BANKS(a, 4, "ref tf32 V d %d i %d", d, i);
        }
    }
    for (int j = 0; j < sc / 8; j++)
        for (int h = 0; h < 2; h++) { /* staging: C layout in (2 elements per lane) */
            for (int l = 0; l < 32; l++)
                a[l] = (long)esize * ((fck_lane_g(l) + 8 * h) * ss + 8 * j + 2 * fck_lane_t(l));
            CHECK_BANKS(a, 2 * esize, "ref stage esize %d j %d h %d", esize, j, h);
        }
    const int cpr = sc / epc;
    for (int i = 0; i < 16 * cpr / 32; i++) {
        for (int l = 0; l < 32; l++) {
            const int c = l + 32 * i;
            a[l] = (long)esize * ((c / cpr) * ss + (c % cpr) * epc);
        }
        CHECK_BANKS(a, 16, "ref stage read-out esize %d i %d", esize, i);
    }
}

static void test_bank_conflicts(void)
{
    const int ds[] = {64, 128};
    for (int di = 0; di < 2; di++) {
        const int d = ds[di];
        for (int split = 0; split < 2; split++) {
            check_flash2_banks(4, d, fck_f2_bc(4, split, d, 0), 0);
            check_flash2_banks(4, d, fck_f2_bc(4, split, d, 1), 1);
        }
        check_flash2_banks(2, d, fck_f2_bc(2, 0, d, 0), 0);
        check_flash2_banks(2, d, fck_f2_bc(2, 0, d, 1), 1);
        check_ref_banks(4, d);
        check_ref_banks(2, d);
    }
    /* the checker itself: two rows 128 bytes apart in one quarter-warp conflict */
    long a[32];
    for (int l = 0; l < 32; l++) a[l] = 16L * l;
    CHECK(bank_degree(a, 16) == 1);
    a[1] = 128;
    CHECK(bank_degree(a, 16) == 2);
    for (int l = 0; l < 32; l++) a[l] = 4L * 33 * l; /* a column of a 33-word-wide array */
    CHECK(bank_degree(a, 4) == 1);
    for (int l = 0; l < 32; l++) a[l] = 4L * 32 * l; /* ... of a 32-word-wide one */
    CHECK(bank_degree(a, 4) == 32);
}

/* ---------------------------------------------------------------- shared memory and occupancy */

static void test_smem_budget(void)
{
    const size_t max_block = 227 * 1024;
    const int ds[] = {64, 128};
    for (int di = 0; di < 2; di++) {
        const int d = ds[di];
        for (int qks = 0; qks < 2; qks++) {
            for (int split = 0; split < 2; split++) {
                const size_t s4 = fck_f2_smem(4, split, d, qks);
                CHECK_MSG(s4 <= max_block, "flash2 fp32 split=%d d=%d qks=%d: %zu B", split, d, qks, s4);
                CHECK(fck_f2_bc(4, split, d, qks) % 16 == 0 && fck_f2_bc(4, split, d, qks) >= 16);
            }
            const size_t s2 = fck_f2_smem(2, 0, d, qks);
            CHECK(s2 <= max_block);
            CHECK_MSG(fck_sm90_blocks_per_sm(s2, 128, 0) >= 2, "flash2 16-bit d=%d qks=%d: %zu B", d, qks, s2);
            CHECK(fck_ref_smem(2, d, qks) <= max_block && fck_ref_smem(4, d, qks) <= max_block);
        }
        /* the P staging of 16-bit qk_softmax fits in a warp's rows of Q */
        CHECK(fck_f2_bc(2, 0, d, 1) <= d);
    }
    /* the reference qk_softmax, fp32 d=128: two blocks per SM (it was one) */
    CHECK(fck_ref_smem(4, 128, 1) == (64 * 132 + 2 * 64 * 132 + 4 * 16 * 40) * 4);
    CHECK(fck_sm90_blocks_per_sm(fck_ref_smem(4, 128, 1), 128, 158) >= 2);
    /* flash2 bf16 d=128 with ptxas's 242 registers: two blocks, bound by registers */
    CHECK(fck_f2_smem(2, 0, 128, 0) == 128 * 128 * 2 + 4 * 32 * 128 * 2);
    CHECK(fck_sm90_blocks_per_sm(fck_f2_smem(2, 0, 128, 0), 128, 242) == 2);
    /* fp32 flash keeps Q twice (big and small parts) */
    CHECK(fck_f2_smem(4, 1, 128, 0) == 2 * 128 * 128 * 4 + 4 * 16 * 128 * 4);
    /* the occupancy helper */
    CHECK(fck_sm90_blocks_per_sm(1024, 1024, 32) == 2);
    CHECK(fck_sm90_blocks_per_sm(100 * 1024, 128, 64) == 2);
    CHECK(fck_sm90_blocks_per_sm(1024, 256, 255) == 1);
}

/* ---------------------------------------------------------------- softmax arithmetic */

/* p[j] = softmax(x·scale)[j] over n entries, in float64 */
static void softmax_ref(const double *x, int n, double scale, double *p)
{
    double m = -INFINITY, s = 0.0;
    for (int j = 0; j < n; j++)
        if (x[j] > m) m = x[j];
    for (int j = 0; j < n; j++) s += (p[j] = exp((x[j] - m) * scale));
    for (int j = 0; j < n; j++) p[j] /= s;
}

/* The online softmax of the flash kernels as one query row sees it: key tiles of bc keys,
 * each spread over the row's 4 lanes in the C layout (perm: the tf32 key order); a lane
 * keeps its own running max and partial sum; the tile max is merged over the 4 lanes
 * (the kernels' shuffles); O accumulates p·V for every key. Compared with float64
 * softmax(s/√d)·V. The qk_softmax sweep 2 (P from the final max and sum) as well. */
static void check_online_softmax(int s, int br, int bc, int causal, int perm, int d, double amp, int kind)
{
    const float sl2 = 1.4426950408889634f / sqrtf((float)d);
    enum { DV = 4 };
    static float sc[600][600];
    static float v[600][DV];
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++) {
            double x = amp * (2.0 * rnd_unit() - 1.0);
            if (kind == 1) x = amp * (double)j / s;       /* the max grows tile after tile */
            if (kind == 2) x = amp * (double)(s - j) / s; /* ... or only shrinks */
            sc[i][j] = (float)x;
        }
    for (int j = 0; j < s; j++)
        for (int k = 0; k < DV; k++) v[j][k] = (float)(2.0 * rnd_unit() - 1.0);
    double worst = 0.0, worst_p = 0.0;
    for (int q0 = 0; q0 < s; q0 += br) {
        const int nkt = fck_attn_key_tiles(q0, br, bc, s, s, causal);
        for (int qi = q0; qi < q0 + br && qi < s; qi++) {
            const int qw = q0 + ((qi - q0) / 32) * 32; /* the row's warp */
            float m[4], l[4], o[DV] = {0};
            for (int t = 0; t < 4; t++) m[t] = -INFINITY, l[t] = 0.0f;
            for (int kt = 0; kt < nkt; kt++) {
                const int k0 = kt * bc;
                if (fck_attn_tile_all_masked(k0, causal, qw + 31)) continue;
                const int need = fck_attn_tile_needs_mask(k0, bc, s, causal, qw);
                float x[4][64], mx = -INFINITY; /* lane t's scores, as mask_max leaves them */
                for (int t = 0; t < 4; t++)
                    for (int nt = 0; nt < bc / 8; nt++)
                        for (int e = 0; e < 2; e++) {
                            const int kj = k0 + 8 * nt + fck_c_key(t, e, perm);
                            const float v0 = kj < s ? sc[qi][kj] : 0.0f; /* zero-filled rows of K */
                            x[t][2 * nt + e] = need && fck_attn_masked(kj, qi, s, causal) ? -INFINITY : v0;
                            mx = fmaxf(mx, x[t][2 * nt + e]); /* lane max, then the quad's */
                        }
                float alpha = 0.0f, pv[DV] = {0};
                for (int t = 0; t < 4; t++) {
                    float nb, r = 0.0f;
                    const float a = fck_osm_step(&m[t], mx, sl2, &nb);
                    if (t > 0) CHECK(a == alpha && m[t] == m[0]); /* the row's lanes agree */
                    alpha = a;
                    for (int nt = 0; nt < bc / 8; nt++)
                        for (int e = 0; e < 2; e++) {
                            const int kj = k0 + 8 * nt + fck_c_key(t, e, perm);
                            const float p = fck_osm_p(x[t][2 * nt + e], sl2, nb);
                            r += p;
                            if (kj < s)
                                for (int k = 0; k < DV; k++) pv[k] += p * v[kj][k];
                            else
                                CHECK(p == 0.0f);
                        }
                    l[t] = l[t] * a + r;
                }
                for (int k = 0; k < DV; k++) o[k] = o[k] * alpha + pv[k]; /* rescale, then this tile's P·V */
            }
            const float lsum = l[0] + l[1] + l[2] + l[3];
            /* float64 reference over the unmasked keys */
            static double row[600], pref[600];
            const int n = causal ? qi + 1 : s;
            for (int j = 0; j < n; j++) row[j] = sc[qi][j];
            softmax_ref(row, n, 1.0 / sqrt((double)d), pref);
            for (int k = 0; k < DV; k++) {
                double ref = 0.0, mag = 0.0;
                for (int j = 0; j < n; j++) {
                    ref += pref[j] * v[j][k];
                    mag += pref[j] * fabs(v[j][k]);
                }
                const double err = fabs(o[k] / lsum - ref) / (mag > 1e-30 ? mag : 1e-30);
                if (err > worst) worst = err;
            }
            /* qk_softmax's sweep 2: P from the final max and sum */
            const float nbf = m[0] == -INFINITY ? 0.0f : -m[0] * sl2, inv = 1.0f / lsum;
            for (int kj = 0; kj < s; kj++) {
                const int masked = fck_attn_masked(kj, qi, s, causal);
                const float p = masked ? 0.0f : fck_osm_p(sc[qi][kj], sl2, nbf) * inv;
                const double ref = masked ? 0.0 : pref[kj];
                const double err = fabs(p - ref);
                if (err > worst_p) worst_p = err;
            }
        }
    }
    CHECK_MSG(worst < 2e-6, "online softmax s=%d br=%d bc=%d causal=%d perm=%d amp=%g kind=%d: rel err %.3g", s, br, bc,
              causal, perm, amp, kind, worst);
    CHECK_MSG(worst_p < 1e-6, "qk_softmax P s=%d bc=%d causal=%d: abs err %.3g", s, bc, causal, worst_p);
}

static void test_online_softmax(void)
{
    const int ss[] = {1, 33, 100, 257}, bcs[] = {16, 32, 64};
    for (int si = 0; si < 4; si++)
        for (int bi = 0; bi < 3; bi++)
            for (int causal = 0; causal < 2; causal++)
                for (int kind = 0; kind < 3; kind++) {
                    check_online_softmax(ss[si], 128, bcs[bi], causal, bi & 1, 128, 4.0, kind);
                    check_online_softmax(ss[si], 64, bcs[bi], causal, !(bi & 1), 64, 60.0, kind);
                }
    /* a row whose first tile is all masked keeps m = -inf and gives p = 0, alpha = 0 */
    float m = -INFINITY, nb;
    CHECK(fck_osm_step(&m, -INFINITY, 0.125f, &nb) == 0.0f && m == -INFINITY && nb == 0.0f);
    CHECK(fck_osm_p(-INFINITY, 0.125f, nb) == 0.0f);
    CHECK(fck_osm_step(&m, 3.0f, 0.5f, &nb) == 0.0f && m == 3.0f && nb == -1.5f);
    CHECK(fck_osm_step(&m, 1.0f, 0.5f, &nb) == 1.0f && m == 3.0f); /* max unchanged: alpha exactly 1 */
    CHECK_NEAR(fck_osm_step(&m, 5.0f, 0.5f, &nb), 0.5, 1e-7);      /* exp2((3 - 5)·0.5) */
    CHECK(fck_osm_p(5.0f, 0.5f, nb) == 1.0f);
}

/* The row softmax as fck_softmax_rows's one-read kernel computes it: columns spread over
 * the plan's threads and vectors, each read once, max and sum reduced over the row. */
static void test_softmax_plan(void)
{
    for (int esize = 2; esize <= 4; esize += 2)
        for (size_t cols = 1; cols <= 40000; cols += (cols < 2100 ? 1 : 97)) {
            const fck_softmax_plan p = fck_softmax_plan_make(cols, esize);
            CHECK(p.vec == ((cols * (size_t)esize) % 16 == 0 ? 16 / esize : 1));
            if (cols > fck_softmax_max_cols(p.vec)) {
                CHECK(p.threads == 0);
                continue;
            }
            const int ept = fck_softmax_ept(p.vec);
            CHECK_MSG(p.threads >= 32 && p.threads <= 1024 && (p.threads & (p.threads - 1)) == 0, "cols %zu", cols);
            CHECK(p.nvec >= 1 && p.nvec * p.vec <= ept && (p.nvec & (p.nvec - 1)) == 0);
            CHECK_MSG((size_t)p.threads * p.nvec * p.vec >= cols, "cols %zu not covered", cols);
            if (p.threads == 32 && p.nvec > 1) CHECK((size_t)32 * (p.nvec / 2) * p.vec < cols); /* smallest */
            if (p.threads > 64) CHECK((size_t)(p.threads / 2) * ept < cols);
            if (p.threads > 32) CHECK(p.nvec * p.vec == ept);
            CHECK(fck_softmax_rows_per_block(p.threads) * p.threads == (p.threads < 256 ? 256 : p.threads));
        }
    CHECK(fck_softmax_plan_make(32768, 2).threads == 1024 && fck_softmax_plan_make(32769, 2).threads == 0);
    CHECK(fck_softmax_plan_make(32768, 4).threads == 1024 && fck_softmax_plan_make(32772, 4).threads == 0);
    CHECK(fck_softmax_plan_make(16383, 2).threads == 1024 && fck_softmax_plan_make(16385, 2).threads == 0);
    CHECK(fck_softmax_plan_make(4096, 2).threads == 128 && fck_softmax_plan_make(4096, 2).nvec == 4);
    CHECK(fck_softmax_plan_make(1024, 4).threads == 32 && fck_softmax_plan_make(1024, 4).nvec == 8);

    /* the kernel's arithmetic over its element map, against float64 */
    const size_t colss[] = {1, 7, 33, 100, 512, 513, 1000, 1024, 1025, 4096, 4100, 16384, 32768};
    static float x[32768];
    static int seen[32768];
    for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
        for (int esize = 2; esize <= 4; esize += 2) {
            const size_t cols = colss[ci];
            const fck_softmax_plan p = fck_softmax_plan_make(cols, esize);
            if (p.threads == 0) continue;
            for (size_t j = 0; j < cols; j++) x[j] = (j % 11 == 3) ? -INFINITY : (float)(8.0 * rnd_unit() - 4.0);
            memset(seen, 0, sizeof seen);
            const float L2E = 1.4426950408889634f;
            float m = -INFINITY, sum = 0.0f;
            for (int tr = 0; tr < p.threads; tr++)
                for (int j = 0; j < p.nvec; j++)
                    for (int e = 0; e < p.vec; e++) {
                        const int c = fck_softmax_col(j, tr, p.threads, p.vec) + e;
                        if ((size_t)c >= cols) continue;
                        seen[c]++;
                        m = fmaxf(m, x[c]);
                    }
            const float nb = m == -INFINITY ? 0.0f : -m * L2E;
            for (size_t c = 0; c < cols; c++) sum += fck_osm_p(x[c], L2E, nb);
            static double xd[32768], pref[32768];
            for (size_t c = 0; c < cols; c++) xd[c] = x[c];
            softmax_ref(xd, (int)cols, 1.0, pref);
            double worst = 0.0;
            for (size_t c = 0; c < cols; c++) {
                CHECK(seen[c] == 1);
                const double ref = pref[c];
                const double err = fabs(fck_osm_p(x[c], L2E, nb) / sum - ref);
                if (err > worst) worst = err;
            }
            CHECK_MSG(worst < 1e-6, "softmax cols %zu: %.3g", cols, worst);
        }
}

/* ---------------------------------------------------------------- fragment emulation
 * ldmatrix and mma.sync on the host, from the PTX ISA layouts (kernel_logic.h's comment),
 * driven by the same address and fragment maps as flash2.cu's qk_tile and pv_tile for one
 * warp: S = Q·Kᵀ must come out in the C layout with the keys fck_c_key names, and O = S·V
 * through the P-as-A-operand hand-over. Values are small integers: every sum is exact. */

typedef struct {
    float lo, hi;
} reg2; /* a 32-bit register holding two 16-bit values (as floats) */

/* ldmatrix.x4 (.trans): lanes give the element offsets of their rows in `sm` */
static void ldsm(reg2 out[32][4], const float *sm, const int addr[32], int trans)
{
    for (int l = 0; l < 32; l++)
        for (int j = 0; j < 4; j++) {
            const int g = l / 4, t = l % 4;
            if (!trans) {
                out[l][j].lo = sm[addr[8 * j + g] + 2 * t];
                out[l][j].hi = sm[addr[8 * j + g] + 2 * t + 1];
            } else {
                out[l][j].lo = sm[addr[8 * j + 2 * t] + g];
                out[l][j].hi = sm[addr[8 * j + 2 * t + 1] + g];
            }
        }
}

/* m16n8k16: c += a·b, fragments per lane */
static void mma16(float c[32][4], const reg2 a[32][4], const reg2 b[32][2])
{
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < 4; i++) {
            A[g + 8 * (i % 2)][2 * t + 8 * (i / 2)] = a[l][i].lo;
            A[g + 8 * (i % 2)][2 * t + 8 * (i / 2) + 1] = a[l][i].hi;
        }
        for (int i = 0; i < 2; i++) {
            B[2 * t + 8 * i][g] = b[l][i].lo;
            B[2 * t + 8 * i + 1][g] = b[l][i].hi;
        }
    }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            const int r = fck_c_row(l, i), col = fck_c_col(l, i);
            for (int k = 0; k < 16; k++) c[l][i] += A[r][k] * B[k][col];
        }
}

/* m16n8k8 tf32: c += a·b */
static void mma8(float c[32][4], const float a[32][4], const float b[32][2])
{
    float A[16][8], B[8][8];
    for (int l = 0; l < 32; l++) {
        const int g = l / 4, t = l % 4;
        for (int i = 0; i < 4; i++) A[g + 8 * (i % 2)][t + 4 * (i / 2)] = a[l][i];
        for (int i = 0; i < 2; i++) B[t + 4 * i][g] = b[l][i];
    }
    for (int l = 0; l < 32; l++)
        for (int i = 0; i < 4; i++) {
            const int r = fck_c_row(l, i), col = fck_c_col(l, i);
            for (int k = 0; k < 8; k++) c[l][i] += A[r][k] * B[k][col];
        }
}

/* the B fragments of two n-tiles that one ldmatrix.x4 gives: registers 0-1 and 2-3 */
static void split_b(const reg2 b[32][4], reg2 b01[32][2], reg2 b23[32][2])
{
    for (int l = 0; l < 32; l++) b01[l][0] = b[l][0], b01[l][1] = b[l][1], b23[l][0] = b[l][2], b23[l][1] = b[l][3];
}

enum { EM_D = 64, EM_BC = 32, EM_ROWS = 128 };
static float em_q[EM_ROWS][EM_D], em_k[EM_BC][EM_D], em_v[EM_BC][EM_D];

/* fills a swizzled tile the way load_tile does (every thread, every chunk) */
static void em_fill(float *sm, const float *src, int rows, int d, int epc, int mode)
{
    const int cpr = d / epc;
    for (int tid = 0; tid < 128; tid++)
        for (int i = 0; i < rows * cpr / 128; i++) {
            const int r = fck_copy_row(tid, i, 128, cpr), ch = fck_copy_chunk(tid, cpr);
            for (int e = 0; e < epc; e++) sm[fck_tile_off(r, ch * epc + e, d, epc, mode)] = src[r * d + ch * epc + e];
        }
}

static void test_fragments_half(void)
{
    static float qs[EM_ROWS * EM_D], ks[EM_BC * EM_D], vs[EM_BC * EM_D];
    for (int i = 0; i < EM_ROWS; i++)
        for (int k = 0; k < EM_D; k++) em_q[i][k] = (float)rnd_int(-3, 3);
    for (int j = 0; j < EM_BC; j++)
        for (int k = 0; k < EM_D; k++) em_k[j][k] = (float)rnd_int(-3, 3), em_v[j][k] = (float)rnd_int(-3, 3);
    em_fill(qs, &em_q[0][0], EM_ROWS, EM_D, 8, FCK_SWZ_ROW8);
    em_fill(ks, &em_k[0][0], EM_BC, EM_D, 8, FCK_SWZ_ROW8);
    em_fill(vs, &em_v[0][0], EM_BC, EM_D, 8, FCK_SWZ_ROW8);
    for (int w = 0; w < 4; w++) {
        const int r0 = 32 * w;
        static float s[2][EM_BC / 8][32][4], o[2][EM_D / 8][32][4];
        memset(s, 0, sizeof s);
        memset(o, 0, sizeof o);
        for (int ks_ = 0; ks_ < EM_D / 16; ks_++) { /* qk_tile, 16-bit kinds */
            reg2 a[2][32][4];
            int addr[32];
            for (int mi = 0; mi < 2; mi++) {
                for (int l = 0; l < 32; l++)
                    addr[l] = fck_tile_off(r0 + 16 * mi + fck_ldsm_a_row(l), (2 * ks_ + fck_ldsm_a_chunk(l)) * 8, EM_D,
                                           8, FCK_SWZ_ROW8);
                ldsm(a[mi], qs, addr, 0);
            }
            for (int np = 0; np < EM_BC / 16; np++) {
                reg2 b[32][4], b01[32][2], b23[32][2];
                for (int l = 0; l < 32; l++)
                    addr[l] = fck_tile_off(16 * np + fck_ldsm_b_row(l), (2 * ks_ + fck_ldsm_b_chunk(l)) * 8, EM_D, 8,
                                           FCK_SWZ_ROW8);
                ldsm(b, ks, addr, 0);
                split_b(b, b01, b23);
                for (int mi = 0; mi < 2; mi++) {
                    mma16(s[mi][2 * np], a[mi], b01);
                    mma16(s[mi][2 * np + 1], a[mi], b23);
                }
            }
        }
        for (int mi = 0; mi < 2; mi++)
            for (int nt = 0; nt < EM_BC / 8; nt++)
                for (int l = 0; l < 32; l++)
                    for (int i = 0; i < 4; i++) {
                        const int row = r0 + 16 * mi + fck_c_row(l, i), key = 8 * nt + fck_c_key(l, i, 0);
                        float ref = 0.0f;
                        for (int k = 0; k < EM_D; k++) ref += em_q[row][k] * em_k[key][k];
                        CHECK_MSG(s[mi][nt][l][i] == ref, "S[%d][%d] = %g, want %g", row, key, s[mi][nt][l][i], ref);
                    }
        for (int j = 0; j < EM_BC / 16; j++) { /* pv_tile: P as the A operand, V by ldmatrix.trans */
            reg2 pa[2][32][4];
            for (int mi = 0; mi < 2; mi++)
                for (int l = 0; l < 32; l++)
                    for (int i = 0; i < 4; i++) {
                        pa[mi][l][i].lo = s[mi][2 * j + (i >> 1)][l][2 * (i & 1)];
                        pa[mi][l][i].hi = s[mi][2 * j + (i >> 1)][l][2 * (i & 1) + 1];
                    }
            for (int dp = 0; dp < EM_D / 16; dp++) {
                reg2 b[32][4], b01[32][2], b23[32][2];
                int addr[32];
                for (int l = 0; l < 32; l++)
                    addr[l] = fck_tile_off(16 * j + fck_ldsm_a_row(l), (2 * dp + fck_ldsm_a_chunk(l)) * 8, EM_D, 8,
                                           FCK_SWZ_ROW8);
                ldsm(b, vs, addr, 1);
                split_b(b, b01, b23);
                for (int mi = 0; mi < 2; mi++) {
                    mma16(o[mi][2 * dp], pa[mi], b01);
                    mma16(o[mi][2 * dp + 1], pa[mi], b23);
                }
            }
        }
        for (int mi = 0; mi < 2; mi++)
            for (int nt = 0; nt < EM_D / 8; nt++)
                for (int l = 0; l < 32; l++)
                    for (int i = 0; i < 4; i++) {
                        const int row = r0 + 16 * mi + fck_c_row(l, i), dim = 8 * nt + fck_c_col(l, i);
                        float ref = 0.0f;
                        for (int key = 0; key < EM_BC; key++) {
                            float sk = 0.0f;
                            for (int k = 0; k < EM_D; k++) sk += em_q[row][k] * em_k[key][k];
                            ref += sk * em_v[key][dim];
                        }
                        CHECK_MSG(o[mi][nt][l][i] == ref, "O[%d][%d] = %g, want %g", row, dim, o[mi][nt][l][i], ref);
                    }
    }
}

/* fusecal's GEMM (gemm.cu) emulated block by block through the same maps: the copies of
 * each k-tile (rows and columns past the operand zero-filled, x through the prologue,
 * W's rows by fck_gm_w_row), every warp's ldmatrix fragments and MMAs, and the
 * epilogue's rows and columns; y must come out as the mode's product, each element
 * written once, for shapes with partial tiles in m, n and k. Stand-ins keep every sum
 * an exact integer: f(v) = v·|v| for gelu (like it, f(0) = 0, so zero-filled columns
 * add nothing) and g·u for silu(g)·u. */
enum { GM_PLAIN, GM_GELU_BIAS, GM_SWIGLU };
static float gm_f(float v) { return v * fabsf(v); }

/* a k-tile into shared memory as the threads copy it; rows[r]: the operand's row of
 * tile row r, or -1 */
static void gm_fill(float *sm, const float *g, const long long *rows, int k, int k0, int prologue)
{
    for (int tid = 0; tid < FCK_GM_THREADS; tid++)
        for (int i = 0; i < FCK_GM_COPIES; i++) {
            const int r = fck_copy_row(tid, i, FCK_GM_THREADS, FCK_GM_BK / 8), ch = fck_copy_chunk(tid, FCK_GM_BK / 8);
            for (int j = 0; j < 8; j++) {
                const int gc = k0 + ch * 8 + j;
                const float v = rows[r] >= 0 && gc < k ? g[(size_t)rows[r] * k + gc] : 0.0f;
                sm[fck_gm_off(r, ch * 8 + j)] = prologue ? gm_f(v) : v;
            }
        }
}

static float gm_dot(const float *x, const float *w, int k, int prologue)
{
    float s = 0.0f;
    for (int kk = 0; kk < k; kk++) s += (prologue ? gm_f(x[kk]) : x[kk]) * w[kk];
    return s;
}

static void check_gemm(int m, int n, int k, int mode)
{
    const int glu = mode == GM_SWIGLU, wn = glu ? 2 * n : n;
    float *x = malloc(sizeof(float) * m * k), *w = malloc(sizeof(float) * wn * k), *b = malloc(sizeof(float) * n);
    float *y = calloc((size_t)m * n, sizeof(float));
    int *hits = calloc((size_t)m * n, sizeof(int));
    for (int i = 0; i < m * k; i++) x[i] = (float)rnd_int(-3, 3);
    for (int i = 0; i < wn * k; i++) w[i] = (float)rnd_int(-3, 3);
    for (int i = 0; i < n; i++) b[i] = mode == GM_GELU_BIAS ? (float)rnd_int(-5, 5) : 0.0f;
    static float as[FCK_GM_BM * FCK_GM_BK], bs[FCK_GM_BN * FCK_GM_BK];
    static float acc[FCK_GM_THREADS / 32][FCK_GM_MT][FCK_GM_NT][32][4];
    const long long blocks = fck_gm_blocks(m, n, glu);
    const int nbm = (m + FCK_GM_BM - 1) / FCK_GM_BM, nbn = (n + fck_gm_cols(glu) - 1) / fck_gm_cols(glu);
    CHECK(blocks == (long long)nbm * nbn);
    for (int bid = 0; bid < blocks; bid++) {
        int bm, bn;
        fck_gm_block(bid, nbm, nbn, &bm, &bn);
        const int m0 = bm * FCK_GM_BM, n0 = bn * fck_gm_cols(glu);
        long long xrows[FCK_GM_BM], wrows[FCK_GM_BN];
        for (int r = 0; r < FCK_GM_BM; r++) xrows[r] = m0 + r < m ? m0 + r : -1;
        for (int r = 0; r < FCK_GM_BN; r++) wrows[r] = fck_gm_w_row(r, bn, n, glu);
        memset(acc, 0, sizeof acc);
        for (int k0 = 0; k0 < k; k0 += FCK_GM_BK) {
            gm_fill(as, x, xrows, k, k0, mode == GM_GELU_BIAS);
            gm_fill(bs, w, wrows, k, k0, 0);
            for (int wp = 0; wp < FCK_GM_THREADS / 32; wp++)
                for (int ks = 0; ks < FCK_GM_BK / 16; ks++) {
                    reg2 a[FCK_GM_MT][32][4];
                    int addr[32];
                    for (int mi = 0; mi < FCK_GM_MT; mi++) {
                        for (int l = 0; l < 32; l++) addr[l] = fck_gm_a_frag(wp, mi, ks, l);
                        ldsm(a[mi], as, addr, 0);
                    }
                    for (int np = 0; np < FCK_GM_NT / 2; np++) {
                        reg2 bq[32][4], b01[32][2], b23[32][2];
                        for (int l = 0; l < 32; l++) addr[l] = fck_gm_b_frag(wp, np, ks, l);
                        ldsm(bq, bs, addr, 0);
                        split_b(bq, b01, b23);
                        for (int mi = 0; mi < FCK_GM_MT; mi++) {
                            mma16(acc[wp][mi][2 * np], a[mi], b01);
                            mma16(acc[wp][mi][2 * np + 1], a[mi], b23);
                        }
                    }
                }
        }
        for (int wp = 0; wp < FCK_GM_THREADS / 32; wp++)
            for (int mi = 0; mi < FCK_GM_MT; mi++)
                for (int nt = 0; nt < FCK_GM_NT; nt += 1 + glu)
                    for (int l = 0; l < 32; l++)
                        for (int i = 0; i < 4; i++) {
                            const int row = m0 + fck_gm_c_row(wp, mi, l, i);
                            const int col = n0 + (glu ? fck_gm_glu_col(wp, nt / 2, l, i) : fck_gm_c_col(wp, nt, l, i));
                            CHECK(fck_gm_c_col(wp, nt, l, i) == fck_gm_c_col(wp, nt, l, i & 2) + (i & 1));
                            if (row >= m || col >= n) continue;
                            const float v = acc[wp][mi][nt][l][i];
                            y[(size_t)row * n + col] = glu ? v * acc[wp][mi][nt + 1][l][i] : v + b[col];
                            hits[(size_t)row * n + col]++;
                        }
    }
    int bad = 0;
    for (int r = 0; r < m; r++)
        for (int c = 0; c < n; c++) {
            const float *xr = x + (size_t)r * k;
            const int pro = mode == GM_GELU_BIAS;
            const float ref = glu ? gm_dot(xr, w + (size_t)c * k, k, 0) * gm_dot(xr, w + (size_t)(n + c) * k, k, 0)
                                  : gm_dot(xr, w + (size_t)c * k, k, pro) + b[c];
            if ((hits[(size_t)r * n + c] != 1 || y[(size_t)r * n + c] != ref) && bad++ < 3)
                CHECK_MSG(0, "mode %d m=%d n=%d k=%d: y[%d][%d] = %g written %d times, want %g once", mode, m, n, k, r,
                          c, y[(size_t)r * n + c], hits[(size_t)r * n + c], ref);
        }
    CHECK_MSG(bad == 0, "mode %d m=%d n=%d k=%d: %d elements of y wrong", mode, m, n, k, bad);
    free(x), free(w), free(b), free(y), free(hits);
}

/* The grid's order (fck_gm_block): every tile once, and within a group of FCK_GM_GROUP
 * rows of tiles (fewer in the last) the blocks in a row share a column of W. */
static void check_gemm_grid(int nbm, int nbn)
{
    char *seen = calloc((size_t)nbm * nbn, 1);
    int bad = 0;
    for (int bid = 0; bid < nbm * nbn; bid++) {
        int bm, bn;
        fck_gm_block(bid, nbm, nbn, &bm, &bn);
        const int first = bm / FCK_GM_GROUP * FCK_GM_GROUP;
        const int rows = nbm - first < FCK_GM_GROUP ? nbm - first : FCK_GM_GROUP;
        const int ok = bm >= 0 && bm < nbm && bn >= 0 && bn < nbn && !seen[(size_t)bm * nbn + bn] &&
                       bid == first * nbn + bn * rows + (bm - first);
        if (ok) seen[(size_t)bm * nbn + bn] = 1;
        if (!ok && bad++ < 3) CHECK_MSG(0, "%d x %d tiles: block %d at tile (%d, %d)", nbm, nbn, bid, bm, bn);
    }
    CHECK_MSG(bad == 0, "%d x %d tiles: %d blocks misplaced", nbm, nbn, bad);
    free(seen);
}

static void test_gemm(void)
{
    static const int shapes[][3] = {{7, 13, 5},     {1, 4, 1},      {33, 17, 65},   {130, 520, 70},
                                    {128, 128, 64}, {300, 24, 200}, {1300, 140, 16}};
    static const int grids[][2] = {{1, 1}, {1, 9}, {8, 1}, {8, 8}, {9, 3}, {17, 5}, {16, 112}, {23, 1}};
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++) check_gemm_grid(grids[i][0], grids[i][1]);
    for (int mode = GM_PLAIN; mode <= GM_SWIGLU; mode++)
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            check_gemm(shapes[i][0], shapes[i][1], shapes[i][2], mode);
    /* the grid: every tile of y once; a gated block covers half the columns; a 1-D grid's limit */
    CHECK(fck_gm_blocks(0, 5, 0) == -1 && fck_gm_blocks(5, 0, 1) == -1);
    CHECK(fck_gm_blocks(1, 1, 0) == 1 && fck_gm_blocks(129, 257, 0) == 6 && fck_gm_blocks(129, 257, 1) == 10);
    CHECK(fck_gm_blocks(1LL << 31, 1LL << 20, 0) == -1);
    /* the gated interleave: tile rows 0-7 gate, 8-15 up of the same columns */
    CHECK(fck_gm_w_row(0, 0, 100, 1) == 0 && fck_gm_w_row(8, 0, 100, 1) == 100 && fck_gm_w_row(16, 0, 100, 1) == 8);
    CHECK(fck_gm_w_row(127, 1, 200, 1) == 127 + 200 && fck_gm_w_row(0, 2, 100, 1) == -1);
    CHECK(fck_gm_smem() == 65536);
    CHECK(fck_sm90_blocks_per_sm(fck_gm_smem(), FCK_GM_THREADS, 176) == 1);
}

static void test_fragments_tf32(void)
{
    static float qs[EM_ROWS * EM_D], ks[EM_BC * EM_D], vs[EM_BC * EM_D];
    for (int i = 0; i < EM_ROWS; i++)
        for (int k = 0; k < EM_D; k++) em_q[i][k] = (float)rnd_int(-3, 3);
    for (int j = 0; j < EM_BC; j++)
        for (int k = 0; k < EM_D; k++) em_k[j][k] = (float)rnd_int(-3, 3), em_v[j][k] = (float)rnd_int(-3, 3);
    em_fill(qs, &em_q[0][0], EM_ROWS, EM_D, 4, FCK_SWZ_ROW8);
    em_fill(ks, &em_k[0][0], EM_BC, EM_D, 4, FCK_SWZ_ROW8);
    em_fill(vs, &em_v[0][0], EM_BC, EM_D, 4, FCK_SWZ_ROW4X2);
    for (int w = 0; w < 4; w++) {
        const int r0 = 32 * w;
        static float s[2][EM_BC / 8][32][4], o[2][EM_D / 8][32][4];
        memset(s, 0, sizeof s);
        memset(o, 0, sizeof o);
        for (int kk = 0; kk < EM_D / 8; kk++) { /* qk_tile, tf32: keys permuted within an n-tile */
            float a[2][32][4];
            for (int mi = 0; mi < 2; mi++)
                for (int l = 0; l < 32; l++) {
                    const int ra = r0 + 16 * mi + fck_lane_g(l), rb = ra + 8, ca = 8 * kk + fck_lane_t(l), cb = ca + 4;
                    a[mi][l][0] = qs[fck_tile_off(ra, ca, EM_D, 4, FCK_SWZ_ROW8)];
                    a[mi][l][1] = qs[fck_tile_off(rb, ca, EM_D, 4, FCK_SWZ_ROW8)];
                    a[mi][l][2] = qs[fck_tile_off(ra, cb, EM_D, 4, FCK_SWZ_ROW8)];
                    a[mi][l][3] = qs[fck_tile_off(rb, cb, EM_D, 4, FCK_SWZ_ROW8)];
                }
            for (int nt = 0; nt < EM_BC / 8; nt++) {
                float b[32][2];
                for (int l = 0; l < 32; l++) {
                    const int kr = 8 * nt + fck_perm_key(fck_lane_g(l)), ca = 8 * kk + fck_lane_t(l);
                    b[l][0] = ks[fck_tile_off(kr, ca, EM_D, 4, FCK_SWZ_ROW8)];
                    b[l][1] = ks[fck_tile_off(kr, ca + 4, EM_D, 4, FCK_SWZ_ROW8)];
                }
                for (int mi = 0; mi < 2; mi++) mma8(s[mi][nt], a[mi], b);
            }
        }
        for (int mi = 0; mi < 2; mi++)
            for (int nt = 0; nt < EM_BC / 8; nt++)
                for (int l = 0; l < 32; l++)
                    for (int i = 0; i < 4; i++) {
                        const int row = r0 + 16 * mi + fck_c_row(l, i), key = 8 * nt + fck_c_key(l, i, 1);
                        float ref = 0.0f;
                        for (int k = 0; k < EM_D; k++) ref += em_q[row][k] * em_k[key][k];
                        CHECK_MSG(s[mi][nt][l][i] == ref, "tf32 S[%d][%d] = %g, want %g", row, key, s[mi][nt][l][i],
                                  ref);
                    }
        for (int kk = 0; kk < EM_BC / 8; kk++) { /* pv_tile, tf32: A = {c0, c2, c1, c3}, no shuffles */
            float a[2][32][4];
            for (int mi = 0; mi < 2; mi++)
                for (int l = 0; l < 32; l++) {
                    a[mi][l][0] = s[mi][kk][l][0];
                    a[mi][l][1] = s[mi][kk][l][2];
                    a[mi][l][2] = s[mi][kk][l][1];
                    a[mi][l][3] = s[mi][kk][l][3];
                }
            for (int nt = 0; nt < EM_D / 8; nt++) {
                float b[32][2];
                for (int l = 0; l < 32; l++) {
                    const int ra = 8 * kk + fck_lane_t(l), col = 8 * nt + fck_lane_g(l);
                    b[l][0] = vs[fck_tile_off(ra, col, EM_D, 4, FCK_SWZ_ROW4X2)];
                    b[l][1] = vs[fck_tile_off(ra + 4, col, EM_D, 4, FCK_SWZ_ROW4X2)];
                }
                for (int mi = 0; mi < 2; mi++) mma8(o[mi][nt], a[mi], b);
            }
        }
        for (int mi = 0; mi < 2; mi++)
            for (int nt = 0; nt < EM_D / 8; nt++)
                for (int l = 0; l < 32; l++)
                    for (int i = 0; i < 4; i++) {
                        const int row = r0 + 16 * mi + fck_c_row(l, i), dim = 8 * nt + fck_c_col(l, i);
                        float ref = 0.0f;
                        for (int key = 0; key < EM_BC; key++) {
                            float sk = 0.0f;
                            for (int k = 0; k < EM_D; k++) sk += em_q[row][k] * em_k[key][k];
                            ref += sk * em_v[key][dim];
                        }
                        CHECK_MSG(o[mi][nt][l][i] == ref, "tf32 O[%d][%d] = %g, want %g", row, dim, o[mi][nt][l][i],
                                  ref);
                    }
    }
    /* the permutation: a bijection of each 8-key n-tile, lane t holding keys t and t + 4 */
    for (int l = 0; l < 32; l++) {
        CHECK(fck_c_key(l, 0, 1) == fck_lane_t(l) && fck_c_key(l, 1, 1) == fck_lane_t(l) + 4);
        CHECK(fck_c_key(l, 2, 1) == fck_lane_t(l) && fck_c_key(l, 3, 1) == fck_lane_t(l) + 4);
    }
    int hit = 0;
    for (int c = 0; c < 8; c++) hit |= 1 << fck_perm_key(c);
    CHECK(hit == 0xff);
}

/* ---------------------------------------------------------------- tf32 splitting
 * cvt.rna.tf32.f32 rounds to 10 mantissa bits, to nearest, ties away from zero. The fp32
 * path's three products of the split operands recover fp32 accuracy. */
static float tf32_rna(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    float r;
    memcpy(&r, &u, 4);
    return r;
}

static void test_tf32_split(void)
{
    double worst3 = 0.0, worst1 = 0.0;
    for (int k = 0; k < 200000; k++) {
        const float x = (float)(rnd_unit() * 4.0 - 2.0), y = (float)(rnd_unit() * 4.0 - 2.0);
        const float xb = tf32_rna(x), xs = tf32_rna(x - xb), yb = tf32_rna(y), ys = tf32_rna(y - yb);
        const double exact = (double)x * y, mag = fabs(exact) > 1e-3 ? fabs(exact) : 1e-3;
        const double three = (double)xs * yb + (double)xb * ys + (double)xb * yb;
        const double one = (double)xb * yb;
        if (fabs(three - exact) / mag > worst3) worst3 = fabs(three - exact) / mag;
        if (fabs(one - exact) / mag > worst1) worst1 = fabs(one - exact) / mag;
    }
    /* about fp32's 6e-8, plus the dropped small·small term */
    CHECK_MSG(worst3 < 4e-7, "3xTF32 worst relative error %.3g", worst3);
    CHECK_MSG(worst1 > 1e-4, "one tf32 product should lose accuracy (%.3g)", worst1);
    CHECK(tf32_rna(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f); /* ties away from zero */
    CHECK(tf32_rna(1.0f + 0x1p-12f) == 1.0f);
}

/* ---------------------------------------------------------------- split-KV decode */

/* The decode plan over bkv heads, rows, skv keys, d and resident blocks: every split
 * holds keys (none empty, none past skv), chunks of whole warps, at most one split per
 * FCK_DEC_MIN_KEYS keys (the bound cuda.custom's device_bytes counts on), a grid cost
 * (waves x keys per block) that no split count within the searched waves beats and
 * that is within 1/16 of the best of every split count (brute force), pieces whose
 * scores fit the shared memory the launch gives
 * (within what fck_dec_smem_floats_most tells the occupancy query), which also holds
 * the key groups' partial outputs. */
static void test_decode_plan(void)
{
    for (int it = 0; it < 20000; it++) {
        const long long bkv = rnd_int(1, it % 3 ? 64 : 5000);
        const int rows = rnd_int(1, FCK_DEC_MAX_ROWS), skv = rnd_int(1, it % 2 ? 3000 : 200000);
        const int d = rnd_int(1, FCK_DEC_MAX_D);
        const long long slots = rnd_int(1, 8) * (long long)rnd_int(1, 200);
        const fck_dec_plan p = fck_dec_plan_make(bkv, rows, skv, d, slots);
        CHECK_MSG(p.nsplit >= 1 && p.chunk >= 32 && p.chunk % 32 == 0, "nsplit %d chunk %d", p.nsplit, p.chunk);
        CHECK_MSG((long long)(p.nsplit - 1) * p.chunk < skv && (long long)p.nsplit * p.chunk >= skv,
                  "skv %d: %d splits of %d", skv, p.nsplit, p.chunk);
        for (int sp = 0; sp<p.nsplit; sp += p.nsplit> 1 ? p.nsplit - 1 : 1) {
            int ja, jb;
            fck_dec_split_keys(&p, sp, skv, &ja, &jb);
            CHECK(ja < jb && jb <= skv && jb - ja <= p.chunk);
        }
        const long long most = (skv + FCK_DEC_MIN_KEYS - 1) / FCK_DEC_MIN_KEYS;
        CHECK_MSG(p.nsplit <= most || p.nsplit == 1, "skv %d: %d splits", skv, p.nsplit);
        /* the split search against every split count */
        const long long cost = fck_dec_grid_cost(bkv, p.nsplit, p.chunk, slots), w0 = (bkv + slots - 1) / slots;
        long long best = cost, best_searched = cost;
        for (long long n = 1; n <= most && n <= 4096; n++) {
            const int c = fck_dec_chunk_of(skv, n), ns = (skv + c - 1) / c;
            const long long k = fck_dec_grid_cost(bkv, ns, c, slots);
            if (k < best) best = k;
            if ((n <= FCK_DEC_WAVES_SEARCHED || (bkv * ns + slots - 1) / slots < w0 + FCK_DEC_WAVES_SEARCHED) &&
                k < best_searched)
                best_searched = k;
        }
        CHECK_MSG(best_searched == cost && cost * 16 <= best * 17,
                  "bkv %lld skv %d slots %lld: %d splits of %d cost %lld, best %lld (searched %lld)", bkv, skv, slots,
                  p.nsplit, p.chunk, cost, best, best_searched);
        CHECK(p.piece >= 32 && p.piece <= p.chunk && (p.piece % 32 == 0 || p.piece == p.chunk));
        CHECK((size_t)rows * (size_t)p.piece <= FCK_DEC_SCORE_FLOATS);
        const size_t smem = fck_dec_smem_floats(&p);
        const int ss = fck_dec_sc_stride(p.piece);
        CHECK(smem >= (size_t)rows * (size_t)ss && ss >= p.piece && smem <= fck_dec_smem_floats_most(rows) &&
              fck_dec_smem_floats_most(rows) * sizeof(float) <= 48 * 1024);
        /* one key's scores, stored by one lane a row: each row's in a bank of its own */
        unsigned banks = 0;
        const int j = rnd_int(0, p.piece - 1);
        for (int r = 0; r < rows; r++) banks |= 1u << ((r * ss + j) % 32);
        CHECK_MSG(__builtin_popcount(banks) == rows, "rows %d piece %d: the scores' stores hit %d banks", rows, p.piece,
                  __builtin_popcount(banks));
        const int kg = fck_dec_key_groups(d), tpk = fck_dec_pv_threads(d);
        CHECK_MSG(kg >= 2 && kg * tpk == FCK_DEC_THREADS && (size_t)rows * d <= smem, "d %d", d);
        /* P·V's threads: each (group of keys, column) taken by exactly one thread, and
         * no more threads per key than whole vectors need */
        static unsigned char owners[FCK_DEC_THREADS][FCK_DEC_MAX_D];
        memset(owners, 0, sizeof owners);
        for (int t = 0; t < FCK_DEC_THREADS; t++) {
            int grp, c0;
            fck_dec_pv_slot(t, d, &grp, &c0);
            CHECK(grp >= 0 && grp < kg && c0 >= 0 && c0 % FCK_DEC_PV_COLS == 0);
            for (int c = c0; c < c0 + FCK_DEC_PV_COLS && c < d; c++) owners[grp][c]++;
        }
        int once = 0;
        for (int g = 0; g < kg; g++)
            for (int c = 0; c < d; c++) once += owners[g][c] == 1;
        CHECK_MSG(once == kg * d && (tpk == 1 || (tpk / 2) * FCK_DEC_PV_COLS < d), "d %d: %d of %d once", d, once,
                  kg * d);
        CHECK(p.rows == rows && p.rtile >= rows && (p.vecs == 2 ? d <= 64 : d <= 128) && 32 * p.vecs >= d);
        CHECK(p.vecs == fck_dec_vecs(d) && p.rtile == fck_dec_rtile(rows));
        CHECK_MSG((p.rtile == 4 || p.rtile == 8 || p.rtile == 16) && (p.rtile == 4 || p.rtile / 2 < rows),
                  "rows %d held in %d", rows, p.rtile); /* the smallest instance that holds them */
        CHECK(fck_dec_workspace_floats(&p, bkv, d) == (size_t)bkv * p.nsplit * rows * (d + 2));
    }
    /* LLaMA-3-8B decode, b = 4 (32 key/value heads of 4096 keys), 132 SMs x 3 blocks:
     * 12 splits of 352 keys, one wave of 384 blocks (16 splits of 256 are 1.3 waves) */
    const fck_dec_plan ll = fck_dec_plan_make(32, 4, 4096, 128, 132 * 3);
    CHECK_MSG(ll.nsplit == 12 && ll.chunk == 352, "%d splits of %d", ll.nsplit, ll.chunk);
    CHECK(fck_dec_supports(16, 128, 4096) && !fck_dec_supports(17, 64, 4096) && !fck_dec_supports(4, 129, 4096) &&
          !fck_dec_supports(0, 64, 4096) && !fck_dec_supports(4, 64, 0));
    /* the most keys: every split's end and the split count's sums inside an int, for
     * one split and for many (past it, the chunk of one split was INT_MIN) */
    CHECK(fck_dec_supports(4, 64, FCK_DEC_MAX_SKV) && !fck_dec_supports(4, 64, FCK_DEC_MAX_SKV + 1LL));
    /* the combine's weights, one float a split, in its 48 KiB of shared memory: near-equal
     * costs once let the rounding pick 30984 splits here */
    const fck_dec_plan many = fck_dec_plan_make(2, 4, 972636772, 128, 1999);
    CHECK_MSG(many.nsplit >= 1 && many.nsplit <= FCK_DEC_MAX_SPLITS &&
                  (size_t)many.nsplit * sizeof(float) <= 48 * 1024 && (long long)many.nsplit * many.chunk >= 972636772,
              "%d splits of %d", many.nsplit, many.chunk);
    const long long slot_counts[] = {1, 132 * 3, 1LL << 20};
    for (size_t i = 0; i < sizeof slot_counts / sizeof slot_counts[0]; i++) {
        const int skv = FCK_DEC_MAX_SKV;
        const fck_dec_plan big = fck_dec_plan_make(1, 4, skv, 64, slot_counts[i]);
        CHECK_MSG(big.chunk >= 32 && big.nsplit >= 1 && big.nsplit <= FCK_DEC_MAX_SPLITS &&
                      (long long)big.nsplit * big.chunk >= skv && (long long)skv + big.chunk - 1 <= 0x7fffffffLL &&
                      big.piece >= 32 && big.piece <= big.chunk,
                  "skv = %d on %lld slots: %d splits of %d keys in pieces of %d", skv, slot_counts[i], big.nsplit,
                  big.chunk, big.piece);
    }
}

/* decode.cu's rows_reduce over 32 simulated lanes for rm = 1..32 rows held: every
 * shuffle gives the partner's value from before the step, as __shfl_xor_sync does. Each
 * row must end in the lanes fck_dec_lane_row names, with exactly one writing lane per
 * row, and its total must be the float the butterfly (warp_sum per row) gives: the
 * same pairs, offset by offset. Checked to fail with the upper and lower halves swapped
 * and with the rows mapped as lane % rm. */
static void test_decode_rows_reduce(void)
{
    for (int rm = 1; rm <= 32; rm *= 2)
        for (int it = 0; it < 50; it++) {
            float x[32][32], bf[32][32], t[32][32];
            for (int l = 0; l < 32; l++)
                for (int r = 0; r < rm; r++) x[l][r] = bf[l][r] = (float)(2.0 * rnd_unit() - 1.0) * (r + 1);
            for (int o = 16; o > 0; o >>= 1) { /* the butterfly of each row */
                memcpy(t, bf, sizeof t);
                for (int l = 0; l < 32; l++)
                    for (int r = 0; r < rm; r++) bf[l][r] = t[l][r] + t[l ^ o][r];
            }
            int o = 16;
            for (int cnt = rm; cnt > 1; cnt >>= 1, o >>= 1) {
                memcpy(t, x, sizeof t);
                for (int l = 0; l < 32; l++) {
                    const int up = (l & o) != 0, p = l ^ o;
                    for (int i = 0; i < cnt / 2; i++) {
                        const int pup = (p & o) != 0; /* the partner sends the half it gives up */
                        const float recv = pup ? t[p][i] : t[p][i + cnt / 2];
                        x[l][i] = (up ? t[l][i + cnt / 2] : t[l][i]) + recv;
                    }
                }
            }
            for (; o > 0; o >>= 1) {
                memcpy(t, x, sizeof t);
                for (int l = 0; l < 32; l++) x[l][0] = t[l][0] + t[l ^ o][0];
            }
            int writers[32] = {0};
            for (int l = 0; l < 32; l++) {
                const int r = fck_dec_lane_row(l, rm);
                CHECK_MSG(r >= 0 && r < rm && x[l][0] == bf[l][r], "rm %d lane %d row %d: %.9g, butterfly %.9g", rm, l,
                          r, x[l][0], r < rm ? bf[l][r] : 0.0f);
                if (fck_dec_lane_writes(l, rm)) writers[r]++;
            }
            for (int r = 0; r < rm; r++)
                CHECK_MSG(writers[r] == 1, "rm %d row %d: %d writing lanes", rm, r, writers[r]);
        }
}

/* decode.cu's arithmetic on the CPU, float for float where it can be: the plan's splits
 * and pieces, Q·K per (row, key), the causal mask, the online-softmax step per piece
 * (fck_osm_step, fck_osm_p), P·V accumulated and rescaled by the threads' groups of
 * keys and summed over the groups in the kernel's order, the splits' partial outputs,
 * maxima and sums, and the combine's weights; against softmax(QKᵀ/√d)·V in float64
 * (the relative error returned) and, for qk_softmax, P written from the raw scores once
 * the splits are combined (its relative error in *perr). */
static double decode_emulated(int rows, int s, int skv, int d, int causal, int slots, const float *q, const float *k,
                              const float *v, double *perr)
{
    const fck_dec_plan pl = fck_dec_plan_make(1, rows, skv, d, slots);
    const float sl2 = 1.4426950408889634f / sqrtf((float)d);
    const size_t pf = fck_dec_part_floats(rows, d);
    float *part = calloc((size_t)pl.nsplit * pf, sizeof(float)), *sc = malloc((size_t)pl.piece * sizeof(float));
    float *raw = malloc((size_t)rows * skv * sizeof(float)); /* qk_softmax's fp32 scores */
    const int kg = fck_dec_key_groups(d);
    float *accg = malloc((size_t)kg * d * sizeof(float)); /* a row's P·V per group of keys */
    for (int sp = 0; sp < pl.nsplit; sp++) {
        int ja, jb;
        fck_dec_split_keys(&pl, sp, skv, &ja, &jb);
        float *out = part + (size_t)sp * pf;
        for (int r = 0; r < rows; r++) {
            float m = -INFINITY, l = 0.0f, *acc = out + (size_t)r * d;
            memset(accg, 0, (size_t)kg * d * sizeof(float));
            for (int p0 = ja; p0 < jb; p0 += pl.piece) {
                const int np = jb - p0 < pl.piece ? jb - p0 : pl.piece;
                float mx = -INFINITY, nb, sum = 0.0f;
                for (int j = 0; j < np; j++) {
                    float x = 0.0f;
                    for (int c = 0; c < d; c++) x = fmaf(q[(size_t)r * d + c], k[(size_t)(p0 + j) * d + c], x);
                    sc[j] = causal && p0 + j > fck_attn_last_key(r % s, s, skv) ? -INFINITY : x;
                    raw[(size_t)r * skv + p0 + j] = sc[j];
                    mx = fmaxf(mx, sc[j]);
                }
                const float alpha = fck_osm_step(&m, mx, sl2, &nb);
                for (int j = 0; j < np; j++) sum += sc[j] = fck_osm_p(sc[j], sl2, nb);
                l = l * alpha + sum;
                /* P·V as the threads share it (fck_dec_pv_slot): group g's keys g, g + kg, ... */
                for (int t = 0; t < FCK_DEC_THREADS; t++) {
                    int g, c0;
                    fck_dec_pv_slot(t, d, &g, &c0);
                    for (int c = c0; c < c0 + FCK_DEC_PV_COLS && c < d; c++) {
                        float a = accg[(size_t)g * d + c] * alpha;
                        for (int j = g; j < np; j += kg) a = fmaf(sc[j], v[(size_t)(p0 + j) * d + c], a);
                        accg[(size_t)g * d + c] = a;
                    }
                }
            }
            /* the groups summed as the kernel sums them: the last, then each down to 1, then group 0 */
            for (int c = 0; c < d; c++) {
                float b = accg[(size_t)(kg - 1) * d + c];
                for (int g = kg - 2; g >= 1; g--) b += accg[(size_t)g * d + c];
                acc[c] = kg > 1 ? accg[c] + b : accg[c];
            }
            out[(size_t)rows * d + r] = m;
            out[(size_t)rows * d + rows + r] = l;
        }
    }
    double num = 0.0, den = 0.0, pnum = 0.0, pden = 0.0;
    for (int r = 0; r < rows; r++) {
        float mx = -INFINITY, l = 0.0f;
        for (int c = 0; c < pl.nsplit; c++) mx = fmaxf(mx, part[c * pf + (size_t)rows * d + r]);
        float *w = malloc((size_t)pl.nsplit * sizeof(float));
        for (int c = 0; c < pl.nsplit; c++) {
            const float mc = part[c * pf + (size_t)rows * d + r];
            w[c] = mc == -INFINITY ? 0.0f : exp2f((mc - mx) * sl2);
            l += w[c] * part[c * pf + (size_t)rows * d + rows + r];
        }
        /* float64 reference of row r: query position r % s */
        const int last = causal ? fck_attn_last_key(r % s, s, skv) : skv - 1;
        double m64 = -INFINITY, l64 = 0.0;
        double *p64 = malloc((size_t)skv * sizeof(double));
        for (int j = 0; j <= last; j++) {
            double x = 0.0;
            for (int c = 0; c < d; c++) x += (double)q[(size_t)r * d + c] * k[(size_t)j * d + c];
            p64[j] = x / sqrt((double)d);
            if (p64[j] > m64) m64 = p64[j];
        }
        for (int j = 0; j <= last; j++) l64 += p64[j] = exp(p64[j] - m64);
        float m0 = -INFINITY, nb;
        fck_osm_step(&m0, mx, sl2, &nb); /* the normalizing kernel's base */
        for (int j = 0; j < skv; j++) {
            const double p = fck_osm_p(raw[(size_t)r * skv + j], sl2, nb) * (l > 0.0f ? 1.0f / l : 0.0f);
            const double ref = j <= last ? p64[j] / l64 : 0.0;
            pnum += (p - ref) * (p - ref);
            pden += ref * ref;
        }
        for (int c = 0; c < d; c++) {
            float o = 0.0f;
            for (int t = 0; t < pl.nsplit; t++) o = fmaf(w[t], part[t * pf + (size_t)r * d + c], o);
            o = l > 0.0f ? o / l : 0.0f;
            double ref = 0.0;
            for (int j = 0; j <= last; j++) ref += p64[j] * v[(size_t)j * d + c];
            ref /= l64;
            num += (o - ref) * (o - ref);
            den += ref * ref;
        }
        free(w);
        free(p64);
    }
    free(part);
    free(sc);
    free(raw);
    free(accg);
    *perr = sqrt(pnum / pden);
    return sqrt(num / den);
}

static void test_decode_arithmetic(void)
{
    /* rows, s, skv, d, causal, resident blocks: several splits and pieces per split (rows 16: pieces of
     * 512 keys), one split, a last split and piece of fewer keys, a causal mask whose
     * last keys are hidden from all but the last query, d not a multiple of 32 */
    const int shapes[][6] = {{4, 1, 4096, 128, 0, 8},  {16, 2, 3000, 64, 1, 1}, {1, 1, 70, 8, 0, 132},
                             {6, 3, 600, 72, 1, 132},  {5, 5, 1500, 64, 0, 4},  {4, 2, 700, 20, 1, 16},
                             {16, 16, 4133, 128, 1, 2}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int *sh = shapes[i], rows = sh[0], s = sh[1], skv = sh[2], d = sh[3];
        float *q = malloc((size_t)rows * d * sizeof(float)), *k = malloc((size_t)skv * d * sizeof(float));
        float *v = malloc((size_t)skv * d * sizeof(float));
        for (int t = 0; t < rows * d; t++) q[t] = (float)(4.0 * rnd_unit() - 2.0);
        for (size_t t = 0; t < (size_t)skv * d; t++) {
            k[t] = (float)(2.0 * rnd_unit() - 1.0);
            v[t] = (float)(2.0 * rnd_unit() - 1.0);
        }
        const fck_dec_plan pl = fck_dec_plan_make(1, rows, skv, d, sh[5]);
        double perr;
        const double err = decode_emulated(rows, s, skv, d, sh[4], sh[5], q, k, v, &perr);
        CHECK_MSG(err < 2e-6 && perr < 2e-6,
                  "rows %d s %d skv %d d %d causal %d (%d splits of %d, pieces %d): error O %.3g, P %.3g", rows, s, skv,
                  d, sh[4], pl.nsplit, pl.chunk, pl.piece, err, perr);
        free(q), free(k), free(v);
    }
}

/* ---------------------------------------------------------------- gelu on 16-bit data */

/* fck_gelu_sigmoid against gelu_tanh in float64 over x in [-12, 12] by 1/256: against
 * x / (1 + e^(−2u)) everywhere, and against 0.5·x·(1 + tanh u) from x = −4 up (below, 1 +
 * tanh u cancels to nothing even in float64: 0 at x = −9.9, where gelu is −1e-36).
 * Within 1e-6, relative, from x = −4 up; 1e-5 below, where the exponent's rounding
 * grows with its size and gelu(x) is under 1e-4 (and of 1e-30 where gelu is smaller).
 * On the host exp2f and a division: this checks the constants and the identity as
 * written, not the GPU's ex2.approx. And the ends: large x gives x, large negative x 0,
 * NaN NaN. */
static void test_gelu_sigmoid(void)
{
    int bad = 0;
    double worst = 0;
    for (int i = -12 * 256; i <= 12 * 256; i++) {
        const float x = (float)i / 256.0f;
        const double xd = x, u = 0.7978845608028654 * (xd + 0.044715 * xd * xd * xd);
        const double sig = xd / (1.0 + exp(-2.0 * u)), ref = x >= -4 ? 0.5 * xd * (1.0 + tanh(u)) : sig;
        const double got = fck_gelu_sigmoid(x);
        const double err = fmax(fabs(got - ref), fabs(got - sig)) / fmax(fabs(sig), 1e-30);
        worst = fmax(worst, err);
        if (err > (x >= -4 ? 1e-6 : 1e-5) && bad++ < 3)
            CHECK_MSG(0, "gelu(%g) = %.9g, want %.9g (%.3g relative)", x, got, ref, err);
    }
    CHECK_MSG(bad == 0, "%d values of gelu off (worst %.3g relative)", bad, worst);
    CHECK(fck_gelu_sigmoid(0.0f) == 0.0f && fck_gelu_sigmoid(1e20f) == 1e20f && fck_gelu_sigmoid(-1e20f) == 0.0f);
    CHECK(fck_gelu_sigmoid(INFINITY) == INFINITY && isnan(fck_gelu_sigmoid(NAN)));
}

/* ---------------------------------------------------------------- napkin math */

static void test_napkin(void)
{
    /* b=4, h=16, s=4096, d=128: 549.8 GFLOP (not 137) */
    CHECK(fck_attention_flops(64, 4096, 128) == 549755813888.0);
    CHECK_NEAR(fck_attention_flops(64, 4096, 128) / 1e9, 549.8, 0.05);
    /* the unfused softmax at that shape: 4.3 GB, one read and one write */
    CHECK(fck_softmax_bytes(64.0 * 4096, 4096, 2) == 2.0 * 64 * 4096 * 4096 * 2);
    CHECK_NEAR(fck_softmax_bytes(64.0 * 4096, 4096, 2) / 1e9, 4.29, 0.01);
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {
        T(test_fastdiv),           T(test_channel_map),    T(test_attn_grid),
        T(test_attn_tiles),        T(test_attn_kv_head),   T(test_swizzle_bijective),
        T(test_bank_conflicts),    T(test_smem_budget),    T(test_online_softmax),
        T(test_softmax_plan),      T(test_fragments_half), T(test_fragments_tf32),
        T(test_tf32_split),        T(test_decode_plan),    T(test_decode_rows_reduce),
        T(test_decode_arithmetic), T(test_napkin),         T(test_gemm),
        T(test_gelu_sigmoid),
    };
    return t_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
