#!/usr/bin/env python3
"""Writes synthetic fusecal calibration documents with known speedup intervals,
for the tests of check, compare and report. Every document it writes is checked
against schemas/calibration.schema.json with python3-jsonschema (unless it is
asked for a broken one).

    make_records.py OUT.json [options] RECORD...

RECORD is PROBLEM@BACKEND:LO,RATIO,HI[:STATUS[:fusion=F]], e.g.
    linear_bias:m=64,k=64,n=64,dtype=fp32@cpu.openblas:1.20,1.30,1.40
STATUS is ok (default), failed (verification failed) or skipped. fusion=F adds a
control variant whose time over the fused one's is F (the fusion split, with an
interval as wide as the speedup's, relative to it), and the decision is made on it
(decided_by: fusion).

    --preset sweep     adds size ladders of several patterns, backends and dtypes
                       whose speedup falls through the threshold (for the report)
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "schemas", "calibration.schema.json")

FAMILY = {
    "linear_bias": ("linear", 1), "linear_bias_relu": ("linear", 2), "linear_bias_gelu": ("linear", 2),
    "linear_residual_relu": ("linear", 3), "conv_relu": ("conv", 1), "conv_bn": ("conv", 1),
    "conv_bn_relu": ("conv", 2), "conv_bn_add_relu": ("conv", 3), "qk_scale": ("attention", 1), "qk_softmax": ("attention", 2),
    "attention": ("attention", 3),
}
DSIZE = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2}


def parse_problem(p):
    pat, rest = p.split(":", 1)
    dims, dtype, layout = {}, "fp32", None
    for kv in rest.split(","):
        k, v = kv.split("=")
        if k == "dtype":
            dtype = v
        elif k == "layout":
            layout = v
        else:
            dims[k] = int(v)
    fam = FAMILY[pat][0]
    if fam == "conv" and layout is None:
        layout = "nhwc"
    return pat, fam, dims, dtype, layout or "none"


def cost(pat, fam, d, dtype):
    """FLOPs, unfused bytes, fused bytes (rough, like fusecal counts them)."""
    es = DSIZE[dtype]
    extra = FAMILY[pat][1]
    if fam == "linear":
        m, k, n = d["m"], d["k"], d["n"]
        flops = 2.0 * m * k * n + extra * m * n
        fused = es * (m * k + n * k + n + m * n)
        return flops, fused + extra * 2 * es * m * n, fused
    if fam == "conv":
        stride, pad = d.get("stride", 1), d.get("pad", 0)
        p = (d["h"] + 2 * pad - d["r"]) // stride + 1
        q = (d["w"] + 2 * pad - d["s"]) // stride + 1
        out = d["n"] * d["k"] * p * q
        flops = 2.0 * out * d["c"] * d["r"] * d["s"] + extra * out
        fused = es * (d["n"] * d["c"] * d["h"] * d["w"] + d["k"] * d["c"] * d["r"] * d["s"] + out)
        return flops, fused + extra * 2 * es * out, fused
    b, h, s, dd = d["b"], d["h"], d["s"], d["d"]
    flops = 4.0 * b * h * s * s * dd + extra * b * h * s * s
    fused = es * 4 * b * h * s * dd
    return flops, fused + extra * 2 * es * b * h * s * s, fused


def stats(ms):
    return {"n": 30, "median": ms, "mean": ms * 1.01, "min": ms * 0.97, "max": ms * 1.08, "p10": ms * 0.98,
            "p90": ms * 1.04, "stdev": ms * 0.02, "rsd": 0.02}


def check(passed=True):
    return {"passed": passed, "trusted": passed, "rel_err": 1e-7 if passed else 0.5, "max_abs_err": 1e-6 if passed else 3.0,
            "nonfinite": 0, "zero_fraction": 0.0, "stable_after_timing": True}


def record(problem, backend, lo, ratio, hi, status="ok", threshold=1.1, ceil=(100.0, 20.0), fusion=None):
    pat, fam, dims, dtype, layout = parse_problem(problem)
    flops, b_unf, b_fus = cost(pat, fam, dims, dtype)
    device = backend.split(".")[0]
    peak, bw = ceil
    fused_ms = max(flops / (peak * 0.6e9), b_fus / (bw * 0.7e9)) * 1e3 + 0.002
    unfused_ms = fused_ms * ratio
    variants = {}
    forms = [("unfused", unfused_ms, b_unf, 1 + FAMILY[pat][1]), ("fused", fused_ms, b_fus, 1)]
    if fusion is not None:
        forms.append(("control", fused_ms * fusion, b_unf, 1 + FAMILY[pat][1]))
    for name, ms, by, kern in forms:
        inten = flops / by
        v = {"impl": f"synthetic {name} <{backend}> & co", "kernels": kern, "fallback": False, "bytes": by,
             "peak_intermediate_bytes": 0 if name == "fused" else by / 4, "intensity_flop_per_byte": inten,
             "bound": "memory" if inten * bw < peak else "compute"}
        if status == "ok":
            g = flops / (ms * 1e-3) / 1e9
            v.update({"latency_ms": stats(ms), "batch": 4, "stop_rule": "precision", "samples_at_stop": 30,
                      "sampled_s": 0.05, "gflops": g, "gbs": by / (ms * 1e-3) / 1e9,
                      "pct_peak_flops": 100 * g / peak, "pct_peak_bandwidth": 100 * by / (ms * 1e-3) / 1e9 / bw,
                      "pct_roofline": 100 * g / min(peak, inten * bw), "over_ceiling": False,
                      "verification": check()})
        variants[name] = v
    r = {"pattern": pat, "family": fam, "device": device, "backend": backend, "dtype": dtype, "layout": layout,
         "dims": dims, "problem": problem, "status": status, "threshold": threshold, "flops": flops,
         "memory": {"bytes_unfused": b_unf, "bytes_fused": b_fus, "traffic_reduction": 1 - b_fus / b_unf,
                    "peak_intermediate_bytes_unfused": b_unf / 4, "peak_intermediate_bytes_fused": 0},
         "roofline": {"ceiling_gflops": peak, "ceiling_gbs": bw, "machine_balance_flop_per_byte": peak / bw},
         "verification": {"passed": status == "ok", "reference": "float64", "tolerance": 1e-5, "checked": 4096,
                          "sampled": False, "fused_vs_unfused_rel_diff": 0, "reference_ms": 0.1},
         "variants": variants, "prepare_ms": 0, "setup_ms": 0.2,
         "environment": {"before": {"loadavg1": 0.1}, "after": {"loadavg1": 0.1}, "throttled": False},
         "seed": "42"}
    if status == "ok":
        dlo, dhi = lo, hi
        if fusion is not None:
            dlo, dhi = fusion * lo / ratio, fusion * hi / ratio
        r.update({"decision": "yes" if dlo > threshold else "no" if dhi < threshold else "inconclusive",
                  "fusion_pattern": pat, "unfused_latency_ms": unfused_ms, "fused_latency_ms": fused_ms,
                  "speedup_factor": ratio, "memory_reduction": 1 - b_fus / b_unf,
                  "unfused_gflops": variants["unfused"]["gflops"], "fused_gflops": variants["fused"]["gflops"],
                  "speedup": {"ratio": ratio, "ci95": [lo, hi], "method": "synthetic"},
                  "margin": max(dlo / threshold - 1, 1 - dhi / threshold),
                  "decided_by": "eager" if fusion is None else "fusion",
                  "rounds": 3, "stop_rule": "precision",
                  "per_round": [{"median_ms": {"unfused": unfused_ms, "fused": fused_ms}, "ratio": ratio, "pairs": 10,
                                 "batch": {"unfused": 4, "fused": 4}}] * 3})
        if fusion is not None:
            c = fused_ms * fusion
            r["speedup_split"] = {"implementation": {"ratio": ratio / fusion, "ci95": [lo / fusion, hi / fusion]},
                                  "fusion": {"ratio": fusion, "ci95": [dlo, dhi]}}
            r["per_round"] = [{"median_ms": {"unfused": unfused_ms, "fused": fused_ms, "control": c}, "ratio": ratio,
                               "pairs": 10, "batch": {"unfused": 4, "fused": 4, "control": 4}}] * 3
    elif status == "failed":
        r.update({"decision": "none", "reason": "verification failed (fused): rel err 0.5 > tol 1e-05 <&>"})
        r["variants"]["fused"]["verification"] = check(False)
    else:
        r.update({"decision": "none", "reason": "needs 80.00 GiB of cpu memory, 20.00 GiB available"})
    return r


def preset_sweep():
    """Size ladders, each along one dimension with the others fixed, where fusion
    stops paying as problems grow."""
    out = []
    for backend, base in (("cpu.openblas", 2.4), ("cpu.onednn", 3.0)):
        for i, m in enumerate((32, 64, 128, 256, 512, 1024, 2048)):
            ratio = base / (1 + 0.45 * i)
            w = 0.06 * ratio
            out.append((f"linear_bias_relu:m={m},k=512,n=512,dtype=fp32", backend, ratio - w, ratio, ratio + w))
            out.append((f"linear_bias_gelu:m={m},k=512,n=512,dtype=fp32", backend, ratio * 0.95, ratio * 1.1, ratio * 1.3))
    for i, n in enumerate((1, 2, 4, 8, 16)):
        ratio = 1.6 - 0.15 * i
        out.append((f"conv_bn_relu:n={n},c=64,h=28,w=28,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32",
                    "cpu.onednn", ratio * 0.93, ratio, ratio * 1.07))
    for i, s in enumerate((128, 256, 512, 1024, 2048, 4096)):
        ratio = 1.3 + 0.9 * i
        out.append((f"attention:b=4,h=16,s={s},d=64,causal=0,dtype=bf16", "cuda.custom", ratio * 0.9, ratio, ratio * 1.1))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("records", nargs="*")
    ap.add_argument("--preset", choices=["sweep"])
    ap.add_argument("--hostname", default="ci-host")
    ap.add_argument("--cpu-model", default="Test CPU 9000")
    ap.add_argument("--gpu", default=None)
    ap.add_argument("--onednn", default="2.6.3")
    ap.add_argument("--tool-version", default="0.1.0")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cache", default="warm")
    ap.add_argument("--threshold", type=float, default=1.1)
    ap.add_argument("--min-time", type=float, default=0.01, help="settings: the stopping rule's minimum seconds")
    ap.add_argument("--max-time", type=float, default=0.05, help="settings: the stopping rule's maximum seconds")
    ap.add_argument("--schema-version", type=int, default=2)
    ap.add_argument("--no-validate", action="store_true")
    a = ap.parse_intermixed_args()

    specs = []
    for s in a.records:
        head, ci = s.rsplit("@", 1)
        backend, nums, *st = ci.split(":")
        lo, ratio, hi = map(float, nums.split(","))
        fusion = float(st[1].split("=", 1)[1]) if len(st) > 1 and st[1].startswith("fusion=") else None
        specs.append((head, backend, lo, ratio, hi, st[0] if st else "ok", fusion))
    if a.preset == "sweep":
        specs += [(p, b, lo, r, hi, "ok", None) for p, b, lo, r, hi in preset_sweep()]
    recs = [record(p, b, lo, r, hi, st, a.threshold, (1000.0, 900.0) if b.startswith("cuda") else (100.0, 20.0), fu)
            for p, b, lo, r, hi, st, fu in specs]
    devices = {"cpu": {"model": a.cpu_model, "cores": 2, "threads": a.threads}}
    ceilings = {"cpu": {"gflops": {"fp32": 100.0}, "bandwidth_gbs": 20.0, "method": "synthetic <ceilings> & more"}}
    if a.gpu or any(r["device"] == "cuda" for r in recs):
        devices["cuda"] = {"name": a.gpu or "Test GPU"}
        ceilings["cuda"] = {"gflops": {"fp32": 50000.0, "bf16": 700000.0}, "bandwidth_gbs": 3000.0,
                            "launch_us": 2.5, "method": "synthetic"}
    ok = [r for r in recs if r["status"] == "ok"]
    doc = {
        "schema": "fusecal-calibration", "schema_version": a.schema_version,
        "tool": {"name": "fusecal", "version": a.tool_version, "git_revision": "0123456789ab"},
        "created_utc": "2026-01-02T03:04:05Z", "complete": True, "elapsed_s": 12.5,
        "argv": ["fusecal", "run", "--synthetic"],
        "host": {"hostname": a.hostname, "os": "Linux", "devices": devices,
                 "libraries": {"cjson": "1.7.15", "onednn": {"version": a.onednn, "cpu_runtime": "openmp"},
                               "openblas": {"config": "OpenBLAS 0.3.21 USE_OPENMP", "threads": a.threads}}},
        "ceilings": ceilings,
        "settings": {"sweep": "custom", "cache": a.cache, "threads": a.threads, "threshold": "catalogue",
                     "seed": "42", "stop": {"min_samples": 5, "min_time_s": a.min_time, "max_noise": 0.005,
                                            "max_time_s": a.max_time, "max_samples": 200000},
                     "target_sample_s": 0.002, "graph": False, "rounds": 3,
                     "max_time_total_s": 0, "max_memory_bytes": 0},
        "summary": {"records": len(recs), "ok": len(ok), "failed": sum(r["status"] == "failed" for r in recs),
                    "skipped": sum(r["status"] == "skipped" for r in recs),
                    "fuse_yes": sum(r["decision"] == "yes" for r in ok), "fuse_no": sum(r["decision"] == "no" for r in ok),
                    "inconclusive": sum(r["decision"] == "inconclusive" for r in ok),
                    "fallback_variants": 0, "untrusted_variants": 0, "over_ceiling_variants": 0},
        "records": recs,
    }
    if not a.no_validate and a.schema_version == 2:
        import jsonschema
        with open(SCHEMA) as f:
            schema = json.load(f)
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
        for e in errors[:5]:
            print(f"make_records.py: {a.out}: {'/'.join(map(str, e.path))}: {e.message}", file=sys.stderr)
        if errors:
            return 1
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
