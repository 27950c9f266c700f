/* conformance.c — see conformance.h. */
#include "conformance.h"
#include "builtin.h"
#include "test.h"
#include "verify.h"

/* Shapes of every family: tiny and odd (m=1,k=1,n=4; odd channel counts in both
 * layouts, strides, paddings, 1x1 and 5x3 filters, groups and depthwise, Winograd's
 * tiles; s=1, s=33
 * with d=64 and d=128, causal on and off, several tiles, head dimensions the fused GPU
 * kernels lack; grouped-query heads, skv != s, decode; rows of 1 and 13, rows no whole
 * number of vectors, rows longer than a block holds, heads of 2, 10, 66 and 128).
 * Each has several outputs: the check is normwise, and a single output that cancels
 * (q·k of one query and one key, x·w + b) can sit arbitrarily far below its own
 * rounding error — qk_scale at b=1, h=1, s=1, d=8 failed 1e-5 by 3e-5 for one seed in
 * about twenty. */
static const char *const shapes[] = {
    /* linear */
    "m=7,k=13,n=5",
    "m=7,k=5,n=13",
    "m=1,k=1,n=4",
    "m=33,k=65,n=17",
    "m=64,k=128,n=256",
    "m=130,k=70,n=520",
    "m=50,k=16384,n=24", /* cpu.onednn's gelu_linear in blocks of x rows and a last block of fewer */
    "m=129,k=200,n=72",  /* fusecal's CUDA GEMM's 16-byte copies with a last k-tile of 8 of 64 columns */
    /* conv */
    "n=2,c=3,h=7,w=6,k=5,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=3,h=7,w=6,k=5,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=5,h=9,w=9,k=7,r=1,s=1,layout=nhwc",
    "n=1,c=5,h=9,w=9,k=7,r=1,s=1,layout=nchw",
    "n=3,c=4,h=11,w=11,k=6,r=3,s=3,stride=2,pad=1,layout=nhwc",
    "n=1,c=17,h=13,w=10,k=9,r=5,s=3,stride=1,pad=2,layout=nchw",
    "n=2,c=16,h=8,w=8,k=32,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=16,h=8,w=8,k=32,r=3,s=3,pad=1,layout=nchw",
    /* conv with groups: c = 6 in 3 groups (k = 9), 1x1 groups, groups = c (depthwise:
     * dwconv_bn_relu takes g = c from c = k), stride 2, more channels than a vector */
    "n=2,c=6,h=7,w=7,k=9,g=3,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=6,h=7,w=7,k=9,g=3,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=8,h=5,w=5,k=12,g=4,r=1,s=1,layout=nhwc",
    "n=1,c=8,h=5,w=5,k=12,g=4,r=1,s=1,layout=nchw",
    "n=2,c=6,h=9,w=7,k=6,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=6,h=9,w=7,k=6,g=6,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=1,c=83,h=5,w=6,k=83,g=83,r=3,s=3,stride=2,pad=1,layout=nhwc",
    /* depthwise NHWC 3x3 (cpu.openblas's rows with the weights in registers): interior
     * pixels in fours and a remainder, channels past the last whole vector, a row with
     * no interior pixel (w = 2), no padding at stride 2 */
    "n=1,c=37,h=9,w=13,k=37,g=37,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=40,h=7,w=2,k=40,g=40,r=3,s=3,pad=1,layout=nhwc",
    "n=1,c=24,h=8,w=11,k=24,g=24,r=3,s=3,stride=2,layout=nhwc",
    "n=1,c=32,h=9,w=9,k=32,r=3,s=3,stride=1,pad=1,layout=nchw",
    /* cpu.openblas's direct 3x3 NHWC conv (input channels a multiple of 8, output
     * channels of two vectors): rows of pixels no whole number of tiles (17 = 14 + 3 =
     * 6 + 6 + 5; 15 at stride 2), a one-pixel image (the rows above and below skipped),
     * three images of two rows in channel-block-major order (the ring's rows tagged by
     * image) */
    "n=1,c=24,h=9,w=17,k=64,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=8,h=11,w=30,k=32,r=3,s=3,stride=2,pad=1,layout=nhwc",
    "n=1,c=16,h=1,w=1,k=32,r=3,s=3,pad=1,layout=nhwc",
    "n=3,c=16,h=2,w=3,k=96,r=3,s=3,stride=2,pad=1,layout=nhwc",
    /* ... the same register tiles on NCHW (rows gathered by channel, outputs stored
     * per channel): the same four shapes */
    "n=1,c=24,h=9,w=17,k=64,r=3,s=3,pad=1,layout=nchw",
    "n=2,c=8,h=11,w=30,k=32,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=1,c=16,h=1,w=1,k=32,r=3,s=3,pad=1,layout=nchw",
    "n=3,c=16,h=2,w=3,k=96,r=3,s=3,stride=2,pad=1,layout=nchw",
    /* ... on the whole image's copy (channel-block-major): rows of 7 and 3 pixels, an
     * odd number of rows, two images (the copy made again), stride 2, a 2x2 image
     * whose taps above and below lie outside the input */
    "n=2,c=16,h=7,w=7,k=64,r=3,s=3,pad=1,layout=nhwc",
    "n=1,c=8,h=13,w=14,k=32,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=2,c=8,h=4,w=3,k=32,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=16,h=6,w=5,k=32,r=3,s=3,stride=2,pad=1,layout=nhwc",
    "n=1,c=8,h=2,w=2,k=32,r=3,s=3,pad=1,layout=nhwc",
    /* ... its 7 x 64 tiles (AVX-512, rows of at most 7 pixels, output channels of two
     * blocks): NCHW at stride 2 with two tile pairs of blocks, two NCHW images of 5, a
     * row of 3 at stride 2 */
    "n=1,c=8,h=13,w=14,k=128,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=2,c=8,h=5,w=5,k=64,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=16,h=6,w=5,k=64,r=3,s=3,stride=2,pad=1,layout=nhwc",
    /* cpu.openblas's direct 3x3 NCHW conv on a padded copy (channels no multiple of 8,
     * or output channels of no whole register tile): a grid of positions no whole
     * number of tiles, rows of 1 and 7 (mostly dropped columns), channels past one tile */
    "n=2,c=3,h=5,w=7,k=16,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=9,h=1,w=1,k=8,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=4,h=13,w=20,k=24,r=3,s=3,pad=1,layout=nchw",
    /* ... its narrow tile (one vector of positions) on small grids: 15 and 63
     * positions, three channel blocks; the 1x1 image above takes it on AVX2 alone */
    "n=2,c=5,h=3,w=3,k=32,r=3,s=3,pad=1,layout=nchw",
    "n=1,c=7,h=7,w=7,k=48,r=3,s=3,pad=1,layout=nchw",
    /* ... at stride 2 (four parity planes): odd and even sides, a one-pixel image, a
     * grid of whole wide tiles */
    "n=2,c=5,h=9,w=11,k=16,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=1,c=8,h=8,w=8,k=32,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=1,c=3,h=1,w=1,k=16,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=1,c=4,h=30,w=29,k=8,r=3,s=3,stride=2,pad=1,layout=nchw",
    /* cpu.openblas's im2col conv split along the output channels (fewer pixel blocks
     * than threads), the last chunk narrower: NCHW 3x3, NHWC 1x1 in two groups */
    "n=1,c=24,h=5,w=5,k=86,r=3,s=3,pad=1,layout=nchw", /* k no multiple of 4: not the direct conv */
    "n=1,c=8,h=3,w=3,k=136,g=2,r=1,s=1,layout=nhwc",
    /* depthwise NCHW rows of 16 outputs and more (vectors, the last one overlapping the
     * one before): stride 1 and 2, no padding, a 5x3 filter */
    "n=1,c=5,h=11,w=37,k=5,g=5,r=3,s=3,pad=1,layout=nchw",
    "n=2,c=3,h=9,w=41,k=3,g=3,r=3,s=3,stride=2,pad=1,layout=nchw",
    "n=1,c=4,h=6,w=18,k=4,g=4,r=3,s=3,layout=nchw",
    "n=1,c=4,h=8,w=20,k=4,g=4,r=5,s=3,pad=2,layout=nchw",
    /* cpu.onednn's Winograd convolutions (64 channels and more, 3x3, stride 1, fp32, where
     * the CPU has AVX-512): outputs no whole number of 2x2 tiles, with and without padding */
    "n=1,c=64,h=9,w=7,k=64,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=64,h=6,w=5,k=80,r=3,s=3,layout=nchw",
    /* attention */
    "b=2,h=3,s=33,d=64",
    "b=1,h=2,s=33,d=128",
    "b=2,h=3,s=33,d=64,causal=1",
    "b=1,h=2,s=33,d=128,causal=1",
    "b=1,h=2,s=130,d=64,causal=1",
    "b=1,h=2,s=200,d=128",
    "b=1,h=1,s=64,d=64",
    "b=2,h=3,s=1,d=64",
    "b=1,h=2,s=40,d=32",
    "b=1,h=2,s=70,d=16,causal=1",
    "b=2,h=1,s=300,d=32,causal=1",
    "b=2,h=2,s=1,d=8",
    /* grouped-query heads, key/value lengths of their own, decode */
    "b=1,h=4,hkv=2,s=33,skv=50,d=64,causal=1",
    "b=2,h=6,hkv=3,s=40,skv=97,d=32",
    "b=1,h=4,hkv=2,s=50,skv=20,d=32",
    "b=1,h=2,hkv=1,s=17,skv=17,d=16,causal=1",
    "b=2,h=4,hkv=1,s=1,skv=300,d=64",
    "b=1,h=8,hkv=2,s=1,skv=1100,d=128,causal=1",
    "b=1,h=4,hkv=2,s=3,skv=600,d=72,causal=1",
    "b=1,h=2,hkv=2,s=5,skv=1500,d=64",
    "b=1,h=4,hkv=2,s=2,skv=700,d=20",         /* decode, d no whole number of AVX2 or AVX-512 vectors */
    "b=1,h=3,hkv=3,s=1,skv=37,d=20",          /* decode, one row per key/value head: its own Q·Kᵀ tiles */
    "b=1,h=2,hkv=2,s=1,skv=600,d=80",         /* decode, one row: 3 pieces, a block of P·V and a tail of d */
    "b=2,h=4,hkv=2,s=1,skv=523,d=40",         /* decode, 2 rows a key/value head: groups of two, 3 pieces */
    "b=1,h=6,hkv=2,s=1,skv=300,d=36",         /* decode, 3 rows: two groups of two, the last row repeated */
    "b=1,h=8,hkv=1,s=3,skv=90,d=64,causal=1", /* 24 rows a key/value head: past the GPU's decode kernels */
    /* cpu.onednn's fused tiles, on two threads: tiles all threads share (4 MiB of f32
     * scores; fewer than 8 tiles of 1 MiB) with a last tile of fewer heads (11 heads of
     * 300 x 300, then 2) and of fewer rows (a head's 2000 rows of 600 keys: 1744, then
     * 256); tiles per thread (1 MiB) with a last tile of fewer heads (4 heads of 256 x
     * 256, 34 of them) and of fewer rows (2 query heads' 1000 rows of 600 keys in tiles
     * of 432, the second spanning both query heads; causal: the first runs over 576
     * keys, the 532 its rows see rounded up). Causal with s >= 256, rows in blocks of at
     * most max(s/4, 128): 1100 rows of 1100 keys in 4 blocks of 272 rows and one of 12,
     * shared; 3 heads of 512 x 512 that would fit whole, in blocks of 128 rows per
     * thread; 2 query heads of 300 rows per key/value head in blocks of 128, the third
     * spanning both heads. */
    "b=1,h=13,s=300,d=16",
    "b=1,h=2,hkv=1,s=1000,skv=600,d=16",
    "b=2,h=17,s=256,d=16",
    "b=1,h=8,hkv=4,s=500,skv=600,d=32,causal=1",
    "b=1,h=1,s=1100,d=16,causal=1",
    "b=1,h=3,s=512,d=16,causal=1",
    "b=1,h=4,hkv=2,s=300,d=16,causal=1",
    /* norm */
    "m=7,n=13",
    "m=1,n=1",
    "m=3,n=1030",
    "m=17,n=4096",
    "m=2,n=12290",
    "m=7,h=3,d=10",
    "m=5,h=1,d=2",
    "m=9,h=4,d=128",
    "m=3,h=5,d=66",
};
static const char *const quick_shapes[] = {
    "m=7,k=13,n=5",
    "m=64,k=128,n=256",
    "n=2,c=3,h=7,w=6,k=5,r=3,s=3,pad=1,layout=nhwc",
    "n=1,c=17,h=13,w=10,k=9,r=5,s=3,stride=1,pad=2,layout=nchw",
    "n=2,c=6,h=7,w=7,k=9,g=3,r=3,s=3,pad=1,layout=nhwc",
    "n=1,c=83,h=5,w=6,k=83,g=83,r=3,s=3,stride=2,pad=1,layout=nhwc",
    /* depthwise NHWC 3x3 (cpu.openblas's rows with the weights in registers): interior
     * pixels in fours and a remainder, channels past the last whole vector, a row with
     * no interior pixel (w = 2), no padding at stride 2 */
    "n=1,c=37,h=9,w=13,k=37,g=37,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=40,h=7,w=2,k=40,g=40,r=3,s=3,pad=1,layout=nhwc",
    "n=1,c=24,h=8,w=11,k=24,g=24,r=3,s=3,stride=2,layout=nhwc",
    "n=2,c=6,h=9,w=7,k=6,g=6,r=3,s=3,stride=2,pad=1,layout=nchw",
    "b=1,h=2,s=33,d=64,causal=1",
    "b=1,h=1,s=130,d=128",
    "b=1,h=4,hkv=2,s=33,skv=50,d=64,causal=1",
    "b=1,h=8,hkv=2,s=1,skv=1100,d=128,causal=1",
    "m=7,n=13",
    "m=7,h=3,d=10",
};

static bool name_listed(const char *list, const char *name)
{
    if (!list) return true;
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && !strncmp(p, name, n)) return true;
        p += l + (c ? 1 : 0);
    }
    return false;
}

bool fc_conf_library_refusal(const fc_problem *p, int rc, const char *msg)
{
    if (rc != FC_DECLINED && !strstr(msg, "NOT_SUPPORTED")) return false;
    if (p->dtype == FC_FP32) return false;
    const fc_family *f = fc_family_of(p->pat);
    for (int i = 0; i < f->ndims; i++) {
        const char *n = f->dims[i].name;
        bool channel = !strcmp(n, "c") || !strcmp(n, "k") || !strcmp(n, "m") || !strcmp(n, "n");
        if (f == &fc_family_conv && !strcmp(n, "n")) channel = false; /* batch */
        if (channel && p->d[i] % 8 != 0) return true;
    }
    return false;
}

typedef struct conf_case {
    const fc_conf_opts *o;
    const fc_backend *b;
    const fc_problem *p;
    const char *ps;
    const fc_workload *w;
    const fc_reference *ref;
    double tol;
    void *state;
} conf_case;

/* The variant's own checks; its output is left in out. */
static void check_variant(const conf_case *c, fc_variant v, float *out, float *again)
{
    const char *bn = c->b->name, *ps = c->ps, *vn = fc_variant_name(v);
    size_t n = c->w->out_n;
    unsigned long long seed = (unsigned long long)c->o->seed;
    fc_err e = {{0}};
    fc_impl impl;
    c->b->describe(c->state, v, &impl);
    CHECK_MSG(impl.name[0], "%s %s %s: no implementation named", bn, ps, vn);
    CHECK_MSG(!impl.fallback, "%s %s %s ran a fallback: %s", bn, ps, vn, impl.fallback_why);
    int nops = c->p->pat->nops;
    /* one kernel; a gated unit's may be two where no library fuses act-and-mul into its
     * GEMM (the GEMM and one act-and-mul pass, or two matmuls with post-ops); the control
     * is the unfused chain with the fused form's main operation: as many calls; the
     * layout reorders around a call (a Winograd convolution's) aside, both variants
     * the same number */
    int fused_max = fc_pattern_has_op(c->p->pat, FC_OP_GLU_MUL) ? 2 : 1, calls = impl.nkernels - impl.nreorders;
    CHECK_MSG(impl.nreorders >= 0 && impl.nreorders <= 2, "%s %s %s: %d layout reorders", bn, ps, vn, impl.nreorders);
    if (v == FC_FUSED)
        CHECK_MSG(calls >= 1 && calls <= fused_max, "%s %s fused runs %d kernels (%d reorders)", bn, ps, impl.nkernels,
                  impl.nreorders);
    else
        CHECK_MSG(c->o->exact_kernels ? calls == nops : calls >= nops, "%s %s %s runs %d kernels (%d reorders)", bn, ps,
                  vn, impl.nkernels, impl.nreorders);
    /* poison reaches the output; one run overwrites all of it (a variant that adds to
     * its output, in place: poison puts its input back, finite, the same each time) */
    const bool in_place = c->b->in_place && c->b->in_place(c->state, v);
    CHECK(c->b->poison(c->state, v, &e) == 0);
    CHECK(c->b->output(c->state, v, out, &e) == 0);
    if (in_place) {
        CHECK_MSG(isfinite(out[0]) && isfinite(out[n - 1]), "%s %s %s: in place, poison left no input", bn, ps, vn);
        CHECK(c->b->run(c->state, v, &e) == 0);
        CHECK(c->b->poison(c->state, v, &e) == 0);
        CHECK(c->b->output(c->state, v, again, &e) == 0);
        CHECK_MSG(!memcmp(out, again, n * sizeof *out), "%s %s %s: in place, poison did not put the input back", bn, ps,
                  vn);
    } else
        CHECK_MSG(isnan(out[0]) && isnan(out[n - 1]), "%s %s: poison did not reach the output", bn, ps);
    if (c->b->run(c->state, v, &e) != 0 || c->b->output(c->state, v, out, &e) != 0) {
        CHECK_MSG(0, "%s %s %s run: %s", bn, ps, vn, e.msg);
        return;
    }
    fc_check chk;
    fc_check_output(c->ref, out, n, c->tol, &chk);
    CHECK_MSG(chk.passed, "%s %s %s (seed %llu): %s [%s]", bn, ps, vn, seed, chk.reason, impl.name);
    if (!chk.passed)
        printf("  rel_err %.3g (tol %.3g) max_abs %.3g nonfinite %zu\n", chk.rel_err, c->tol, chk.max_abs_err,
               chk.nonfinite);
    /* a second run gives the same answer (no state carried between runs, but the
     * input an in-place variant adds to, put back) */
    if (in_place) CHECK(c->b->poison(c->state, v, &e) == 0);
    CHECK(c->b->run(c->state, v, &e) == 0);
    CHECK(c->b->output(c->state, v, again, &e) == 0);
    double rd = fc_rel_diff(again, out, n);
    CHECK_MSG(rd <= c->tol * 0.1, "%s %s %s not repeatable: %g", bn, ps, vn, rd);
    if (!c->o->graph || !c->o->dev->graph_create) return;
    /* replayed from a graph of two captured calls (of one, in place) */
    void *graph = NULL;
    fc_backend_call la = {c->b, c->state};
    CHECK(c->b->poison(c->state, v, &e) == 0);
    if (c->o->dev->graph_create(c->o->devctx, fc_backend_launch, &la, v, in_place ? 1 : 2, &graph, &e) != 0) {
        CHECK_MSG(0, "%s %s %s graph capture: %s", bn, ps, vn, e.msg);
        return;
    }
    CHECK(c->o->dev->graph_launch(c->o->devctx, graph, &e) == 0);
    CHECK(c->b->output(c->state, v, again, &e) == 0);
    c->o->dev->graph_destroy(graph);
    fc_check_output(c->ref, again, n, c->tol, &chk);
    CHECK_MSG(chk.passed, "%s %s %s graph replay (seed %llu): %s", bn, ps, vn, seed, chk.reason);
}

/* One problem on one backend: setup, both variants, teardown. */
static void check_problem(const fc_conf_opts *o, const fc_backend *b, const fc_problem *p, fc_conf_result *r)
{
    char ps[256];
    fc_problem_string(p, ps, sizeof ps);
    fc_err e = {{0}};
    uint64_t seed = fc_seed_mix(o->seed, (uint64_t)p->pat->id * 131 + (uint64_t)p->dtype * 7 + strlen(ps));
    fc_workload w;
    if (fc_workload_create(p, seed, 0, &w, &e) != 0) {
        CHECK_MSG(0, "%s: %s", ps, e.msg);
        return;
    }
    w.cold = o->cold;
    fc_reference ref;
    fc_reference_build(p, &w, seed, &ref);
    if (b->device_bytes) {
        size_t need = 0;
        CHECK_MSG(b->device_bytes(p, &need, &e) == 0 && need > 0, "%s %s: device_bytes: %s", b->name, ps, e.msg);
    }
    /* the problem's tolerance over this reference's nonzero values: wider on the tiny
     * shapes (m = 1, k = 1, n = 4), whose few outputs can all cancel (precision.c) */
    conf_case c = {o, b, p, ps, &w, &ref, fc_reference_tolerance(p, &ref), NULL};
    int rc = b->setup(p, &w, o->devctx, &c.state, &e);
    if (rc != 0) {
        if (o->library_may_refuse && fc_conf_library_refusal(p, rc, e.msg)) {
            printf("REFUSED by the library: %s %s: %s\n", b->name, ps, e.msg);
            r->refused++;
        } else {
            CHECK_MSG(0, "%s %s setup (seed %llu): %s", b->name, ps, (unsigned long long)o->seed, e.msg);
        }
    } else {
        /* the control variant, where the backend has one, is checked like the others */
        int nv = b->has_control && b->has_control(c.state) ? FC_MAX_VARIANTS : FC_NVARIANTS;
        float *out[FC_MAX_VARIANTS] = {NULL};
        float *again = fc_xmalloc(w.out_n * 4);
        for (int v = 0; v < nv; v++) {
            out[v] = fc_xmalloc(w.out_n * 4);
            check_variant(&c, (fc_variant)v, out[v], again);
            r->checked++;
        }
        r->controls += nv > FC_NVARIANTS;
        double d = fc_rel_diff(out[FC_FUSED], out[FC_UNFUSED], w.out_n);
        CHECK_MSG(d <= 2 * c.tol, "%s %s: fused vs unfused %g (tol %g)", b->name, ps, d, 2 * c.tol);
        for (int v = 0; v < FC_MAX_VARIANTS; v++) free(out[v]);
        free(again);
    }
    if (c.state) b->teardown(c.state);
    fc_reference_free(&ref);
    fc_workload_free(&w);
}

/* Every pattern the shape parses for (its family's), in every dtype asked. */
static void check_shape(const fc_conf_opts *o, const fc_backend *b, const char *shape, int *per_pattern,
                        fc_conf_result *r)
{
    int parsed = 0;
    fc_err first = {{0}};
    for (int pi = 0; pi < FC_NPATTERNS; pi++) {
        fc_problem p;
        fc_err e;
        if (fc_problem_parse(shape, &fc_patterns[pi], &p, &e) != 0) { /* another family's shape */
            if (!first.msg[0]) first = e;
            continue;
        }
        parsed++;
        for (int di = 0; di < (o->dtypes ? o->ndtypes : FC_NDTYPES); di++) {
            p.dtype = o->dtypes ? o->dtypes[di] : (fc_dtype)di;
            char why[256] = "";
            if (!b->supports(&p, why, sizeof why)) {
                CHECK_MSG(why[0], "%s gives no reason for not supporting %s", b->name, fc_patterns[pi].name);
                r->unsupported++;
                continue;
            }
            int before = r->checked;
            check_problem(o, b, &p, r);
            per_pattern[pi] += r->checked - before;
        }
    }
    CHECK_MSG(parsed > 0, "shape '%s' is no pattern's problem (%s)", shape, first.msg);
}

void fc_conformance(const fc_conf_opts *o, fc_conf_result *r)
{
    memset(r, 0, sizeof *r);
    int failures = t_failures;
    const char *const *list = o->shapes ? o->shapes : o->quick ? quick_shapes : shapes;
    size_t nshapes = o->shapes ? o->nshapes : o->quick ? FC_ARRAY_LEN(quick_shapes) : FC_ARRAY_LEN(shapes);
    int per_pattern[FC_NPATTERNS] = {0};
    for (int k = 0; k < FC_NBACKENDS; k++) {
        const fc_backend *b = fc_builtin.backend[k];
        if (!b || strcmp(b->device, o->device) || !name_listed(o->backends, b->name)) continue;
        char why[256] = "";
        if (!b->available(why, sizeof why)) {
            CHECK_MSG(0, "%s is built but not available on this %s: %s", b->name, o->device, why);
            continue;
        }
        r->backends++;
        int before = r->checked;
        for (size_t s = 0; s < nshapes; s++) check_shape(o, b, list[s], per_pattern, r);
        printf("%s: %d pattern x shape x dtype x variant combinations checked\n", b->name, r->checked - before);
        CHECK_MSG(r->checked > before, "%s checked nothing", b->name);
    }
    CHECK_MSG(r->backends >= 1, "no backend of device '%s' checked", o->device);
    /* with every backend and the whole list, every pattern ran somewhere, but those the
     * device is known to lack, which ran nowhere */
    for (int pi = 0; pi < FC_NPATTERNS && !o->backends && !o->shapes && !o->quick; pi++) {
        const char *name = fc_patterns[pi].name;
        if (o->unimplemented && name_listed(o->unimplemented, name))
            CHECK_MSG(per_pattern[pi] == 0, "pattern '%s' is listed as unimplemented on %s but ran", name, o->device);
        else
            CHECK_MSG(per_pattern[pi] > 0, "no %s backend checked pattern '%s'", o->device, name);
    }
    r->failures = t_failures - failures;
}
