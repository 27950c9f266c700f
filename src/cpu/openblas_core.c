/* openblas_core.c — see openblas_core.h. */
#include "openblas_core.h"
#include "cpuinfo.h"

#include <cblas.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>

/* OpenBLAS's x86 cores without AVX2 (openblas_get_corename's names). */
static bool pre_avx2_core(const char *name)
{
    static const char *const old[] = {"Katmai",      "Coppermine", "Northwood",    "Prescott",   "Banias",
                                      "Atom",        "Core2",      "Penryn",       "Dunnington", "Nehalem",
                                      "Sandybridge", "Opteron",    "Opteron_SSE3", "Barcelona",  "Bobcat",
                                      "Bulldozer",   "Piledriver", "Steamroller"};
    for (size_t i = 0; i < sizeof old / sizeof old[0]; i++)
        if (!strcasecmp(name, old[i])) return true;
    return false;
}

const char *fc_openblas_core_for(const char *chosen, const char *flags, const char *vendor)
{
    if (!chosen || !pre_avx2_core(chosen)) return NULL;
    if (!fc_cpu_flag(flags, "avx2") || !fc_cpu_flag(flags, "fma")) return NULL;
    bool avx512 = fc_cpu_flag(flags, "avx512f") && fc_cpu_flag(flags, "avx512bw") && fc_cpu_flag(flags, "avx512vl") &&
                  fc_cpu_flag(flags, "avx512dq") && fc_cpu_flag(flags, "avx512cd");
    if (avx512 && fc_cpu_flag(flags, "avx512_bf16")) return "Cooperlake";
    if (avx512) return "SkylakeX";
    bool amd = vendor && (!strcasecmp(vendor, "AuthenticAMD") || !strcasecmp(vendor, "HygonGenuine"));
    return amd ? "Zen" : "Haswell";
}

void fc_openblas_core_check(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE")) return; /* the user's choice, or this program's after the exec */
    fc_cpu_id id;
    fc_host_cpu_id(&id);
    const char *chosen = openblas_get_corename();
    const char *to = fc_openblas_core_for(chosen, id.flags, id.vendor);
    if (!to) return;
    if (setenv("FUSECAL_OPENBLAS_DETECTED", chosen, 1) == 0 && setenv("OPENBLAS_CORETYPE", to, 1) == 0)
        execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* the exec failed: OpenBLAS's own choice stands */
    unsetenv("FUSECAL_OPENBLAS_DETECTED");
}

const char *fc_openblas_core_detected(void)
{
    const char *d = getenv("FUSECAL_OPENBLAS_DETECTED");
    return d && d[0] && getenv("OPENBLAS_CORETYPE") ? d : NULL;
}
