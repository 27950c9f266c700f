/* test_peak.c — the CPU's arithmetic-peak loops (src/cpu/cpu_peak.h): which loop a
 * CPU's flags choose, and, on each loop this host can run, that it does the
 * multiply-adds it is counted for (its result against the same chains computed one
 * lane at a time in scalar arithmetic). Loops the host lacks are named and skipped. */
#include "cpu_peak.h"
#include "cpuinfo.h"
#include "test.h"
#include "util.h"

#include <math.h>

static void loop_per_flags(void)
{
    char why[256] = "";
    CHECK(fc_peak_isa_for("sse4_2 avx avx2 fma", FC_FP32, why, sizeof why) == FC_PEAK_AVX2);
    CHECK(fc_peak_isa_for("avx2 fma avx512f avx512bw", FC_FP32, why, sizeof why) == FC_PEAK_AVX512);
    CHECK(fc_peak_isa_for("avx2 fma avx512f avx512_bf16", FC_BF16, why, sizeof why) == FC_PEAK_AVX512_BF16);
    CHECK(fc_peak_isa_for("avx2 avx", FC_FP32, why, sizeof why) == -1 && strstr(why, "fma"));
    CHECK(fc_peak_isa_for("avx2 fma", FC_BF16, why, sizeof why) == -1 && strstr(why, "avx512_bf16"));
    /* AMX runs bf16 past any vector loop: not measured rather than understated */
    CHECK(fc_peak_isa_for("avx512f avx512_bf16 amx_tile amx_bf16", FC_BF16, why, sizeof why) == -1 &&
          strstr(why, "AMX"));
    CHECK(fc_peak_isa_for("avx2 fma", FC_FP16, why, sizeof why) == -1 && strstr(why, "fp16"));
    /* FLOPs an iteration: chains x lanes x 2 (bf16: two products a lane) */
    CHECK(fc_peak_flops_per_iter(FC_PEAK_AVX2) == fc_peak_chains(FC_PEAK_AVX2) * 8 * 2);
    CHECK(fc_peak_flops_per_iter(FC_PEAK_AVX512) == fc_peak_chains(FC_PEAK_AVX512) * 16 * 2);
    CHECK(fc_peak_flops_per_iter(FC_PEAK_AVX512_BF16) == fc_peak_chains(FC_PEAK_AVX512_BF16) * 16 * 4);
}

static bool host_runs(fc_peak_isa isa)
{
    fc_cpu_id id;
    fc_host_cpu_id(&id);
    char why[256];
    if (isa == FC_PEAK_AVX512_BF16) return fc_cpu_flag(id.flags, "avx512_bf16") && fc_cpu_flag(id.flags, "avx512f");
    if (isa == FC_PEAK_AVX512) return fc_cpu_flag(id.flags, "avx512f");
    return fc_peak_isa_for(id.flags, FC_FP32, why, sizeof why) >= 0 && fc_cpu_flag(id.flags, "avx2");
}

/* fp32: every lane of chain c runs a = fma(a, x, y) from a = c; bf16: a += x*y + x*y
 * with x and y exact in bf16 and every partial sum exact in fp32 */
static void loops_do_their_work(void)
{
    for (int isa = 0; isa < FC_NPEAK_ISAS; isa++) {
        if (!host_runs((fc_peak_isa)isa)) {
            printf("     (%s: not on this CPU)\n", fc_peak_isa_name((fc_peak_isa)isa));
            continue;
        }
        const int chains = fc_peak_chains((fc_peak_isa)isa), lanes = isa == FC_PEAK_AVX2 ? 8 : 16;
        for (long iters = 0; iters <= 1000; iters += 333) {
            double want = 0;
            float x = isa == FC_PEAK_AVX512_BF16 ? 1.5f : 0.999f, y = isa == FC_PEAK_AVX512_BF16 ? 0.25f : 1e-3f;
            for (int c = 0; c < chains; c++) {
                float a = (float)c;
                for (long i = 0; i < iters; i++) a = isa == FC_PEAK_AVX512_BF16 ? a + x * y + x * y : fmaf(a, x, y);
                want += (double)a * lanes;
            }
            double got = fc_peak_loop((fc_peak_isa)isa, iters, x, y);
            CHECK_MSG(got == want, "%s, %ld iterations: %.9g, scalar %.9g", fc_peak_isa_name((fc_peak_isa)isa), iters,
                      got, want);
        }
    }
}

/* the measurement names its loop, or why there is none, and gives 0 then */
static void measured_peak_says_what_ran(void)
{
    char how[256];
    double fp32 = fc_cpu_peak_gflops(FC_FP32, how, sizeof how);
    if (host_runs(FC_PEAK_AVX2) || host_runs(FC_PEAK_AVX512))
        CHECK_MSG(fp32 > 0 && isfinite(fp32) && strstr(how, "vfmadd231ps") && strstr(how, "threads") &&
                      !strstr(how, "non-finite"),
                  "%g: %s", fp32, how);
    CHECK(fc_cpu_peak_gflops(FC_FP16, how, sizeof how) == 0 && strstr(how, "fp16"));
}

int main(int argc, char **argv)
{
    static const t_case cases[] = {T(loop_per_flags), T(loops_do_their_work), T(measured_peak_says_what_ran)};
    return t_run(cases, FC_ARRAY_LEN(cases), argc, argv);
}
