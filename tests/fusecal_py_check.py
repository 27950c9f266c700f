#!/usr/bin/env python3
"""python/fusecal.py against the C code on the same files: the answers it reads
from a calibration document for measured problems, and from `fusecal predict
--format json` for the others, must be the C output's; its canonical problem
strings the C ones; its dims' defaults those `fusecal list patterns` prints; its
network summary the predict document's summary.

    fusecal_py_check.py FUSECAL SRC CALIBRATION.json PROBLEM...

Prints one line per check, "N passed, M failed"; exit 1 when one failed."""
import json
import math
import os
import subprocess
import sys

FUSECAL, SRC, CAL, PROBLEMS = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, os.path.join(SRC, "python"))
import fusecal  # noqa: E402

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}")
    else:
        failed += 1
        print(f"FAIL {what}")


def close(a, b):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def same_answer(py, c):
    """An Answer against one entry of the C document's predictions."""
    if py.source != c["source"] or py.decision != c["decision"] or py.backend != c["backend"]:
        return False
    if py.machine != c["machine"] or py.problem != c["problem"]:
        return False
    if c["source"] == "unknown":
        return py.unfused_ms is None
    sp = c["speedup"]
    return (close(py.unfused_ms, c["unfused_ms"]) and close(py.fused_ms, c["fused_ms"]) and
            close(py.speedup, sp["ratio"]) and close(py.ci95[0], sp["ci95"][0]) and
            close(py.ci95[1], sp["ci95"][1]) and close(py.threshold, c["threshold"]) and
            close(py.control_ms, c.get("control_ms")))


doc = fusecal.predict([CAL], PROBLEMS, fusecal=FUSECAL)
check(doc["schema"] == "fusecal-predict" and doc["kind"] == "predictions", "fusecal.predict runs the command")
rows = doc["predictions"]
check(len(rows) == len(PROBLEMS) * len({(r["machine"], r["backend"]) for r in rows}), "a row per problem and backend")

# canonical strings
for q in PROBLEMS:
    c = next(r["problem"] for r in rows if r["query"] == q)
    check(fusecal.canonical(q) == c, f"canonical('{q}') is C's '{c}'")

# defaults: `fusecal list patterns --format json` prints "n,c,h,w,k,r=3,s=3,stride=1,pad=0"
listed = json.loads(subprocess.run([FUSECAL, "list", "patterns", "--format", "json"], capture_output=True,
                                   text=True, check=True).stdout)["patterns"]
check({p["name"] for p in listed} == set(fusecal.PATTERNS), "the module knows every pattern")
for p in listed:
    mine = ",".join(n if d is None else f"{n}={d}" for n, d in fusecal.DIMS.get(p["name"], []))
    check(mine == p["dims"], f"{p['name']}: dims and defaults '{mine}'")

# measured answers from the calibration document alone
cal = fusecal.load(CAL)
check({(r["machine"], r["backend"]) for r in rows} == set(cal.pairs), "the same machines and backends")
measured = [r for r in rows if r["source"] == "measured"]
check(len(measured) > 0, "some problems are measured")
for r in measured:
    a = cal.answer(r["query"], r["backend"], r["machine"])
    check(same_answer(a, r), f"measured {r['problem']} on {r['backend']}: {a.decision} {a.speedup}")

# every answer with the predict document added
cal.add(doc)
check(any(r["source"] == "predicted" for r in rows), "some problems are predicted")
for r in rows:
    a = cal.answer(r["query"], r["backend"], r["machine"])
    check(same_answer(a, r), f"{r['source']} {r['problem']} on {r['backend']}: {a.decision}")
    if r["source"] != "unknown":
        check(cal.decision(r["query"], r["backend"]) == r["decision"] and
              cal.speedup(r["query"], r["backend"]) == (r["speedup"]["ratio"], *r["speedup"]["ci95"]),
              f"decision() and speedup() of {r['problem']} on {r['backend']}")

# without a backend: the fastest fused form of those with an answer
for q in PROBLEMS:
    known = [r for r in rows if r["query"] == q and r["source"] != "unknown"]
    want = min(known, key=lambda r: r["fused_ms"])["decision"] if known else "unknown"
    check(cal.decision(q) == want, f"decision('{q}') without a backend: {want}")

# the network summary of the problems, once each, is the C summary
summary = cal.network_summary([(q, 1) for q in PROBLEMS])
check(len(summary) == len(doc["summary"]), "a summary per machine and backend")
for c in doc["summary"]:
    py = next(s for s in summary if s["machine"] == c["machine"] and s["backend"] == c["backend"])
    ok = all(py[k] == c[k] for k in ("sites", "known", "fuse", "losing"))
    ok = ok and all(close(py[k], c[k]) for k in ("unfused_ms", "saving_ms"))
    ok = ok and all(math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(py["saving_ci95"], c["saving_ci95"]))
    check(ok, f"summary on {c['backend']}: saving {py['saving_ms']:.4g} ms, fuse {len(py['fuse'])}")

# bad problems are refused with the reason
for bad in ("nonesuch:m=1", "linear_bias:m=1,k=2", "linear_bias:m=1,k=2,n=3,foo=4", "linear_bias:m=1,k=2,n=3,dtype=fp64"):
    try:
        fusecal.canonical(bad)
        check(False, f"canonical('{bad}') refused")
    except ValueError as e:
        check(True, f"canonical('{bad}') refused: {e}")

# what C refuses python refuses, what C takes python writes as C does: layouts,
# integers as strtoll reads them, dims' ranges, empty tokens, the patterns' rules
EDGES = [
    "conv_bn:n=1,c=8,h=8,w=8,k=8,layout=NCHW", "conv_bn:n=1,c=8,h=8,w=8,k=8,layout=none",
    "conv_bn:n=1,c=8,h=8,w=8,k=8,layout=nchw", "linear_bias:m=1,k=2,n=3,layout=nchw",
    "linear_bias:m=1,k=2,n=3,dtype=fp32,dtype=bf16", "linear_bias:m=1,k=2,n=3,dtype= fp32",
    "linear_bias:m= 1,k=2,n=3", "linear_bias:m=1 ,k=2,n=3", "linear_bias:m=+1,k=2,n=3", "linear_bias:M=1,k=2,n=3",
    "linear_bias:m=0x10,k=2,n=3", "linear_bias:m=1_0,k=2,n=3", "linear_bias:m=99999999999999999999,k=2,n=3",
    "linear_bias:m=1,k=2,n=3,", "linear_bias:,m=1,k=2,n=3", "linear_bias:m=1,,k=2,n=3",
    "linear_bias:m=0,k=2,n=3", "linear_bias:m=2147483648,k=2,n=3", "linear_bias:m=2147483647,k=1,n=2147483647",
    "linear_swiglu:m=1,k=1,n=1073741824",
    "attention:b=1,h=2,s=4,d=8,causal=2", "attention:b=1,h=2,s=4,d=8,causal=1", "qk_scale:b=1,h=2,s=4,d=8,causal=1",
    "attention:b=1,h=2,s=4,skv=2,d=8,causal=1", "attention:b=1,h=6,hkv=4,s=4,d=8", "attention:b=1,h=4,s=4,d=4097",
    "attention:b=2147483647,h=2147483647,s=2147483647,d=64",
    "conv_bn:n=1,c=8,h=8,w=8,k=8,pad=3", "conv_bn:n=1,c=8,h=1,w=8,k=8", "conv_bn:n=1,c=8,h=8,w=8,k=8,r=0",
    "conv_bn:n=1,c=8,h=8,w=8,k=8,g=3", "conv_bn:n=1,c=8,h=8,w=8,k=8,g=2", "conv_bn:n=1,c=8,h=8,w=8,k=8,stride=5000",
    "dwconv_bn_relu:n=1,c=8,h=8,w=8,k=8,g=1", "dwconv_bn_relu:n=1,c=8,h=8,w=8,k=8,g=4",
    "dwconv_bn_relu:n=1,c=8,h=8,w=8,k=16", "conv_bn:n=2147483647,c=2147483647,h=8,w=8,k=8",
    "add_layernorm:m=2147483647,n=2147483647", "qk_norm_rope:m=4,h=2,d=3", "qk_norm_rope:m=4,h=65537,d=64",
    "qk_norm_rope:m=4,h=65536,d=65536", "qk_norm_rope:m=4,h=2,d=64,n=5",
]
for q in EDGES:
    r = subprocess.run([FUSECAL, "predict", CAL, "--problem", q, "--format", "json"], capture_output=True, text=True)
    c = None if r.returncode == 2 else json.loads(r.stdout)["predictions"][0]["problem"]
    try:
        py = fusecal.canonical(q)
    except ValueError:
        py = None
    check(py == c, f"canonical('{q}'): {'refused' if c is None else c}, as C")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
