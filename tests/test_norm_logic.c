/* test_norm_logic.c — the layouts of the norm family's CUDA kernels (kernels/norm.cu),
 * run on the CPU through the same functions of kernels/kernel_logic.h: the row plan
 * covers every column of a row exactly once within the registers it allows, and the
 * layer norm computed over that layout (per-thread sums, then across the row; padding
 * left out of the variance) matches float64; the head plan covers every element of a
 * head exactly once as a rotate-half pair (i, i + d/2), its vectors and the fp32 table's
 * 16-byte loads aligned, and the rotation over it matches float64. */
#include "kernel_logic.h"
#include "test.h"

#include <stdint.h>

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static double rnd_unit(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)((rng_state >> 11) & 0xffffff) / 16777216.0;
}

static void row_plan_covers_rows(void)
{
    static int seen[20000];
    for (int al = 0; al <= 1; al++)
        for (int esize = 2; esize <= 4; esize += 2)
            for (size_t cols = 1; cols <= 20000; cols += (cols < 1100 ? 1 : 37)) {
                const fck_softmax_plan p = fck_norm_plan_make(cols, esize, al);
                CHECK(p.vec == (al && (cols * (size_t)esize) % 16 == 0 ? 16 / esize : 1));
                if (cols > fck_norm_max_cols(p.vec)) {
                    CHECK_MSG(p.threads == 0, "cols %zu", cols);
                    continue;
                }
                const int ept = fck_norm_ept(p.vec);
                CHECK_MSG(p.threads >= 32 && p.threads <= 1024 && (p.threads & (p.threads - 1)) == 0, "cols %zu", cols);
                CHECK(p.nvec >= 1 && p.nvec * p.vec <= ept && (p.nvec & (p.nvec - 1)) == 0);
                if (p.threads > 32) CHECK(p.nvec * p.vec == ept && (size_t)(p.threads / 2) * ept < cols); /* smallest */
                if (p.threads == 32 && p.nvec > 1) CHECK((size_t)32 * (p.nvec / 2) * p.vec < cols);
                memset(seen, 0, cols * sizeof *seen);
                for (int tr = 0; tr < p.threads; tr++)
                    for (int j = 0; j < p.nvec; j++) {
                        const int c = fck_softmax_col(j, tr, p.threads, p.vec);
                        if ((size_t)c >= cols) continue;
                        CHECK(c % p.vec == 0 && (size_t)(c + p.vec) <= cols); /* a vector never crosses the row's end */
                        for (int e = 0; e < p.vec; e++) seen[c + e]++;
                    }
                for (size_t c = 0; c < cols; c++)
                    CHECK_MSG(seen[c] == 1, "cols %zu esize %d: column %zu", cols, esize, c);
            }
    CHECK(fck_norm_plan_make(16384, 2, 1).threads == 1024 && fck_norm_plan_make(16392, 2, 1).threads == 0);
    CHECK(fck_norm_plan_make(8192, 4, 1).threads == 512 && fck_norm_plan_make(8190, 4, 1).threads == 1024);
    CHECK(fck_norm_plan_make(8193, 2, 1).threads == 0); /* scalars: 8192 at most */
    CHECK(fck_norm_plan_make(512, 2, 1).threads == 32 && fck_norm_plan_make(512, 2, 1).nvec == 2);
    /* a tensor off 16 bytes: scalars, and rows past 8192 not taken */
    CHECK(fck_norm_plan_make(4096, 4, 0).vec == 1 && fck_norm_plan_make(4096, 4, 0).threads == 512);
    CHECK(fck_norm_plan_make(16384, 2, 0).threads == 0);
    static const float buf[8] __attribute__((aligned(16))) = {0};
    CHECK(fck_aligned16(buf) && !fck_aligned16(buf + 1) && !fck_aligned16((const char *)buf + 8) &&
          fck_aligned16(buf + 4) && fck_aligned16(NULL));
}

/* One thread's sum over its elements of the row: of x (mean < 0), or of the squared
 * deviations about mean, padding left out as the kernel leaves it. */
static float thread_sum(const float *x, size_t cols, const fck_softmax_plan *p, int tr, float mean)
{
    float acc = 0.0f;
    for (int j = 0; j < p->nvec; j++)
        for (int e = 0; e < p->vec; e++) {
            const size_t c = (size_t)fck_softmax_col(j, tr, p->threads, p->vec) + (size_t)e;
            if (c >= cols) continue;
            acc += mean < 0 ? x[c] : (x[c] - mean) * (x[c] - mean);
        }
    return acc;
}

/* The layer norm's statistics over the kernel's layout (per-thread sums, then the
 * row's), against float64, with a row mean far from zero. */
static void layernorm_over_the_layout(void)
{
    static float x[16384];
    const size_t colss[] = {1, 13, 100, 512, 513, 1030, 4096, 8190, 16384};
    for (int al = 0; al <= 1; al++)
        for (size_t ci = 0; ci < sizeof colss / sizeof colss[0]; ci++)
            for (int esize = 2; esize <= 4; esize += 2) {
                const size_t cols = colss[ci];
                const fck_softmax_plan p = fck_norm_plan_make(cols, esize, al);
                if (p.threads == 0) continue;
                double s = 0, sq = 0;
                for (size_t c = 0; c < cols; c++) {
                    x[c] = (float)(40.0 + 2.0 * rnd_unit());
                    s += x[c];
                }
                const double mean_ref = s / (double)cols;
                for (size_t c = 0; c < cols; c++) sq += (x[c] - mean_ref) * (x[c] - mean_ref);
                float total = 0.0f, var = 0.0f;
                for (int tr = 0; tr < p.threads; tr++) total += thread_sum(x, cols, &p, tr, -1.0f);
                const float mean = total / (float)cols;
                for (int tr = 0; tr < p.threads; tr++) var += thread_sum(x, cols, &p, tr, mean);
                CHECK_MSG(fabs(mean - mean_ref) <= 1e-5 * mean_ref, "cols %zu mean %g vs %g", cols, mean, mean_ref);
                CHECK_MSG(fabs(var - sq) <= 1e-3 * sq + 1e-6, "cols %zu variance %g vs %g", cols, var, sq);
            }
}

static void head_plan_covers_heads(void)
{
    static int seen[2048];
    for (int al = 0; al <= 1; al++)
        for (int esize = 2; esize <= 4; esize += 2)
            for (int d = 2; d <= 1100; d += 2) {
                const fck_head_plan p = fck_head_plan_make(d, esize, al);
                const int half = d / 2;
                CHECK(p.vec == (al && (half * esize) % 16 == 0 ? 16 / esize : 1));
                if (d > 1024) {
                    CHECK_MSG(p.tph == 0, "d %d", d);
                    continue;
                }
                CHECK_MSG(p.tph >= 1 && p.tph <= 32 && (p.tph & (p.tph - 1)) == 0, "d %d tph %d", d, p.tph);
                CHECK_MSG(p.np >= 1 && 2 * p.np * p.vec <= 32 && (p.np & (p.np - 1)) == 0, "d %d np %d", d, p.np);
                CHECK(p.np == 1 || p.tph == 32); /* the kernel's launch assumes it */
                CHECK(p.tph * p.np * p.vec >= half && (p.tph == 1 || (p.tph / 2) * p.np * p.vec < half));
                if (p.vec > 1) CHECK((d * esize) % 16 == 0 && half % 4 == 0); /* aligned heads and float4 table loads */
                memset(seen, 0, (size_t)d * sizeof *seen);
                for (int t = 0; t < p.tph; t++)
                    for (int j = 0; j < p.np; j++) {
                        if (j * p.tph + t >= half / p.vec) continue;
                        const int c = fck_head_col(j, t, p.tph, p.vec);
                        CHECK(c + p.vec <= half && c % p.vec == 0);
                        for (int e = 0; e < p.vec; e++) {
                            seen[c + e]++;
                            seen[c + half + e]++;
                        }
                    }
                for (int i = 0; i < d; i++) CHECK_MSG(seen[i] == 1, "d %d esize %d: element %d", d, esize, i);
            }
    CHECK(fck_head_plan_make(128, 2, 1).tph == 8 && fck_head_plan_make(128, 2, 1).vec == 8);
    CHECK(fck_head_plan_make(128, 4, 1).tph == 16 && fck_head_plan_make(128, 4, 1).np == 1);
    CHECK(fck_head_plan_make(1024, 4, 1).tph == 32 && fck_head_plan_make(1024, 4, 1).np == 4);
    CHECK(fck_head_plan_make(7, 2, 1).tph == 0 && fck_head_plan_make(0, 2, 1).tph == 0);
    CHECK(fck_head_plan_make(128, 2, 0).vec == 1 && fck_head_plan_make(128, 2, 0).tph == 32 &&
          fck_head_plan_make(1024, 4, 0).tph == 32 && fck_head_plan_make(1024, 4, 0).np == 16);
}

/* RMSNorm and the rotation over the head plan's pairs, with the table laid out as
 * fc_rope_table's (cosines, then sines), against float64. */
static void rope_over_the_layout(void)
{
    static float q[1024], y[1024], cs[1024];
    const int ds[] = {2, 10, 64, 66, 128, 256, 1024};
    for (int al = 0; al <= 1; al++)
        for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++)
            for (int esize = 2; esize <= 4; esize += 2) {
                const int d = ds[di], half = d / 2, pos = 7;
                const fck_head_plan p = fck_head_plan_make(d, esize, al);
                double ms = 0;
                for (int i = 0; i < d; i++) {
                    q[i] = (float)(4.0 * rnd_unit() - 2.0);
                    ms += (double)q[i] * q[i] / d;
                }
                for (int i = 0; i < half; i++) {
                    double a = pos * pow(10000.0, -2.0 * i / d);
                    cs[i] = (float)cos(a);
                    cs[half + i] = (float)sin(a);
                }
                float sq = 0.0f;
                for (int t = 0; t < p.tph; t++)
                    for (int j = 0; j < p.np; j++)
                        for (int e = 0; e < p.vec && j * p.tph + t < half / p.vec; e++) {
                            const int c = fck_head_col(j, t, p.tph, p.vec) + e;
                            sq += q[c] * q[c] + q[c + half] * q[c + half];
                        }
                const float rstd = 1.0f / sqrtf(sq / (float)d + 1e-6f);
                for (int t = 0; t < p.tph; t++)
                    for (int j = 0; j < p.np; j++)
                        for (int e = 0; e < p.vec && j * p.tph + t < half / p.vec; e++) {
                            const int c = fck_head_col(j, t, p.tph, p.vec) + e;
                            const float lo = q[c] * rstd, hi = q[c + half] * rstd;
                            y[c] = lo * cs[c] - hi * cs[half + c];
                            y[c + half] = hi * cs[c] + lo * cs[half + c];
                        }
                double worst = 0;
                for (int i = 0; i < d; i++) {
                    const int lo = i < half ? i : i - half;
                    const double a = pos * pow(10000.0, -2.0 * lo / d), inv = 1.0 / sqrt(ms + 1e-6);
                    const double ql = q[lo] * inv, qh = q[lo + half] * inv;
                    const double ref = i < half ? ql * cos(a) - qh * sin(a) : qh * cos(a) + ql * sin(a);
                    worst = fmax(worst, fabs(y[i] - ref));
                }
                CHECK_MSG(worst < 1e-5, "d %d esize %d: %g", d, esize, worst);
            }
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(row_plan_covers_rows), T(layernorm_over_the_layout), T(head_plan_covers_heads),
                                   T(rope_over_the_layout)};
    return t_run(cases, sizeof cases / sizeof cases[0], argc, argv);
}
