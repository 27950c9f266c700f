"""fusecal.py - fusecal's answers for a graph partitioner, from Python.

Standard library only, no build step: copy this file next to your code, or put
python/ on sys.path. It reads the documents fusecal writes and answers, for a
problem on a backend, whether fusing pays (decision), by how much (speedup) and
what fusing a list of sites saves (network_summary):

    import fusecal
    cal = fusecal.load("results/cpu-amd-epyc-2c/standard.json", "predict.json")
    cal.decision("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,pad=1")         # 'no'
    cal.speedup("linear_bias_relu:m=512,k=1024,n=1024", "cpu.onednn")  # (1.032, 1.024, 1.048)
    cal.network_summary([("conv_bn_relu:n=1,c=64,h=56,w=56,k=64,pad=1", 4),
                         ("linear_bias:m=1,k=512,n=1000", 1)])
    cal.network_summary("patterns/networks/resnet50.json")   # a network file's sites
    fusecal.load("resnet50.json").network_summary()          # what `run --network` wrote

Two kinds of document:
  - calibration documents ("schema": "fusecal-calibration", from `fusecal run`):
    each record with status ok answers for its problem (source "measured");
  - predict documents ("schema": "fusecal-predict", kind "predictions", from
    `fusecal predict --format json`): the model's answers (source "predicted" or
    "unknown") for problems nobody measured. `predict()` runs the command.

It reads the fields the C code reads (record: problem, backend, status,
threshold, decision, decided_by, speedup, speedup_graph or speedup_split.fusion
(the one decided_by names), variants.<v>.bytes,
variants.<v>.latency_ms.median, flops, roofline ceilings; host: hostname,
devices.cpu.model or devices.cuda.name; settings: threads, cache) and only the
fields schemas/predict.schema.json marks stable. A later document's answer for
the same problem, machine and backend replaces an earlier one's, as in C.
"""

import json
import re
import subprocess
from collections import namedtuple

__all__ = ["Answer", "Calibration", "canonical", "load", "network_sites", "predict"]

# pattern -> family; each pattern's dims in the order problem strings print them,
# with their defaults (None: required). tests/cli_predict.sh checks them against
# `fusecal list patterns --format json`.
_FAMILY_PATTERNS = {
    "linear": ("linear_bias", "linear_bias_relu", "linear_bias_gelu", "linear_residual_relu", "linear_swiglu",
               "gelu_linear"),
    "conv": ("conv_relu", "conv_bn", "conv_bn_relu", "dwconv_bn_relu", "conv_bn_add_relu"),
    "attention": ("qk_scale", "qk_softmax", "attention"),
    "norm": ("add_layernorm", "add_rmsnorm", "qk_norm_rope"),
}
PATTERNS = {pat: fam for fam, pats in _FAMILY_PATTERNS.items() for pat in pats}
_FAMILY_DIMS = {
    "linear": [("m", None), ("k", None), ("n", None)],
    "conv": [("n", None), ("c", None), ("h", None), ("w", None), ("k", None), ("r", 3), ("s", 3),
             ("stride", 1), ("pad", 0), ("g", 1)],
    "attention": [("b", None), ("h", None), ("hkv", "h"), ("s", None), ("skv", "s"), ("d", None), ("causal", 0)],
    "norm": [("m", None), ("n", None)],
}
DIMS = {pat: _FAMILY_DIMS[fam] for pat, fam in PATTERNS.items()}
DIMS["qk_norm_rope"] = [("m", None), ("h", None), ("d", None)]


def _shown(pattern, name, dims):
    """Whether a dim is printed: the conv family's g only where it is not implied
    (not 1, and not the depthwise pattern's c) - pattern_conv.c's conv_shown."""
    if PATTERNS[pattern] == "conv" and name == "g":
        return dims["g"] != 1 and pattern != "dwconv_bn_relu"
    return True


def _default(pattern, name, given):
    """A dim's default where it follows another dim (dwconv_bn_relu's g is c; attention's
    hkv is h and skv is s, named as their default: pattern_attention.c's FC_DIM_FOLLOWS)."""
    if pattern == "dwconv_bn_relu" and name == "g":
        return given.get("c")
    default = dict(DIMS[pattern])[name]
    return given.get(default) if isinstance(default, str) else default


LAYOUT = {"conv": "nhwc"}  # families with a layout, and its default
LAYOUTS = ("nchw", "nhwc")
DTYPES = ("fp32", "tf32", "bf16", "fp16")

# each dim's range where it is not 1..2^31-1 (pattern_<family>.c's dims tables)
_I32 = 2**31 - 1
_RANGES = {
    "conv": {"r": (1, 4096), "s": (1, 4096), "stride": (1, 4096), "pad": (0, 4096)},
    "attention": {"d": (1, 4096), "causal": (0, 1)},
    "qk_norm_rope": {"h": (1, 65536), "d": (2, 65536)},
}
_INTEGER = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]+")  # what strtoll reads whole: blanks, a sign, digits


def _range(pattern, name):
    r = _RANGES.get(pattern) if pattern in _RANGES else _RANGES.get(PATTERNS[pattern], {})
    return r.get(name, (1, _I32))


def _family_check(pattern, d):
    """The pattern's own rules on its dims (pattern_<family>.c's check): the reason, or None."""
    family, big = PATTERNS[pattern], 2**64 // 16  # a buffer of more elements overflows size_t
    too_large = f"problem '{pattern}' is too large: its buffers overflow size_t"
    if family == "linear":
        gn = 2 * d["n"] if pattern == "linear_swiglu" else d["n"]
        if d["m"] * gn > big:
            return too_large
        return f"problem '{pattern}' is too large: its GEMM's 2n = {gn} columns exceed 2^31 - 1" if gn > _I32 else None
    if family == "conv":
        hp, wp = d["h"] + 2 * d["pad"], d["w"] + 2 * d["pad"]
        if d["r"] > hp or d["s"] > wp:
            return f"filter {d['r']}x{d['s']} is larger than the padded input {hp}x{wp}"
        if d["pad"] >= d["r"] or d["pad"] >= d["s"]:
            return f"padding {d['pad']} must be smaller than the filter"
        if pattern == "dwconv_bn_relu":
            if d["k"] != d["c"]:
                return f"pattern '{pattern}' is depthwise: k must equal c (got c={d['c']}, k={d['k']})"
            g = d["c"] if d["g"] == 1 else d["g"]
            if g != d["c"]:
                return f"pattern '{pattern}' is depthwise: g must equal c (got c={d['c']}, g={g})"
        else:
            g = d["g"]
        if d["c"] % g or d["k"] % g:
            return f"groups 'g={g}' must divide c={d['c']} and k={d['k']}"
        p, q = (hp - d["r"]) // d["stride"] + 1, (wp - d["s"]) // d["stride"] + 1
        crs = d["c"] * d["r"] * d["s"]
        if max(d["n"] * d["c"] * d["h"] * d["w"], d["k"] * (d["c"] // g) * d["r"] * d["s"], d["n"] * d["k"] * p * q,
               crs * p * q) > big or crs > _I32:
            return too_large
        return None
    if family == "attention":
        if d["causal"] and pattern == "qk_scale":
            return f"causal=1 needs a softmax; pattern '{pattern}' has none"
        if d["hkv"] > d["h"] or d["h"] % d["hkv"]:
            return f"hkv={d['hkv']} does not divide h={d['h']} (each key/value head serves h/hkv query heads)"
        if d["causal"] and d["skv"] < d["s"]:
            return f"causal=1 needs skv >= s (skv={d['skv']}, s={d['s']})"
        if max(d["b"] * d["h"] * d["s"] * d["d"], d["b"] * d["hkv"] * d["skv"] * d["d"],
               d["b"] * d["h"] * d["s"] * d["skv"]) > big:
            return too_large
        return None
    if pattern == "qk_norm_rope":
        if d["d"] % 2:
            return f"d={d['d']} must be even: the rotary embedding pairs the halves of a head"
        if d["h"] * d["d"] > _I32:
            return f"problem '{pattern}' is too large: h·d = {d['h'] * d['d']} is above {_I32}"
        return too_large if d["m"] * d["h"] * d["d"] > big else None
    return too_large if d["m"] * d["n"] > big else None

Answer = namedtuple("Answer", "problem machine backend source decision unfused_ms fused_ms speedup ci95 "
                              "threshold reason nearest control_ms", defaults=(None,))
Answer.__doc__ = """One problem on one machine and backend. source: 'measured', 'predicted' or
'unknown'; decision: 'yes', 'no', 'inconclusive' or 'unknown'; unfused_ms,
fused_ms, speedup, ci95 (low, high) and threshold are None when unknown. speedup is
the one the decision is made on: unfused_ms / fused_ms, or control_ms / fused_ms where
control_ms is not None (the fused form changes more than the fusion, and a control was
measured: the record's decided_by is "fusion")."""


def canonical(problem):
    """The canonical problem string fusecal's records carry: every dim (defaults
    filled in) in the family's order, then layout= (conv) and dtype=. Refuses (with
    ValueError) what fusecal refuses: an unknown pattern, key, dtype or layout, a
    dim given twice, missing, not an integer or out of its range, and a pattern's
    own rules (pattern.c's fc_problem_parse)."""
    pattern, _, body = problem.partition(":")
    if pattern not in PATTERNS:
        raise ValueError(f"unknown pattern '{pattern}' in problem '{problem}'")
    family = PATTERNS[pattern]
    if body.startswith(",") or ",," in body or body.endswith(","):
        raise ValueError(f"bad token '' (empty) in problem '{problem}'")
    given, dims = {}, {}
    for tok in filter(None, body.split(",")):
        key, eq, val = tok.partition("=")
        if not eq or not key or not val:
            raise ValueError(f"bad token '{tok}' in problem '{problem}': expected k=v")
        key = key.lower()
        if key == "dtype" and val not in DTYPES:
            raise ValueError(f"unknown dtype '{val}' in problem '{problem}'")
        if key == "layout" and family not in LAYOUT:
            raise ValueError(f"pattern '{pattern}' has no layout in problem '{problem}'")
        if key == "layout" and val not in LAYOUTS:
            raise ValueError(f"unknown layout '{val}' (valid: {', '.join(LAYOUTS)}) in problem '{problem}'")
        if key in ("dtype", "layout"):
            given[key] = val  # a later one replaces it, as in C
            continue
        if key not in dict(DIMS[pattern]):
            raise ValueError(f"unknown key '{key}' in problem '{problem}'")
        if key in dims:
            raise ValueError(f"'{key}' given twice in problem '{problem}'")
        if not _INTEGER.fullmatch(val) or not -2**63 <= int(val) < 2**63:
            raise ValueError(f"bad value '{key}={val}' in problem '{problem}': not an integer")
        dims[key] = int(val)
    for name, _ in DIMS[pattern]:
        if name not in dims:
            default = _default(pattern, name, dims)
            if default is None:
                raise ValueError(f"problem '{problem}' lacks dimension '{name}'")
            dims[name] = default
        lo, hi = _range(pattern, name)
        if not lo <= dims[name] <= hi:
            raise ValueError(f"dimension '{name}={dims[name]}' out of range for pattern '{pattern}' ({lo}..{hi})")
    dims = {n: dims[n] for n, _ in DIMS[pattern]}
    why = _family_check(pattern, dims)
    if why:
        raise ValueError(f"{why} in problem '{problem}'")
    out = [f"{n}={v}" for n, v in dims.items() if _shown(pattern, n, dims)]
    if family in LAYOUT:
        out.append("layout=" + given.get("layout", LAYOUT[family]))
    out.append("dtype=" + given.get("dtype", "fp32"))
    return f"{pattern}:{','.join(out)}"


def _machine_name(doc, device):
    """What the C code calls a machine (predict.c, machine_name)."""
    host, settings = doc.get("host", {}), doc.get("settings", {})
    devices = host.get("devices", {})
    hostname = host.get("hostname") or "unknown host"
    cache = "cold" if settings.get("cache") == "cold" else "warm"
    if device == "cuda":
        gpu = devices.get("cuda", {}).get("name") or "unknown GPU"
        return f"{gpu} ({hostname}, {cache} cache)"
    c = devices.get("cpu", {})
    cpu = c.get("model") or "unknown CPU"
    fm = f", family {c['family']} model {c['model_number']}" if "family" in c and "model_number" in c else ""
    isa = (c.get("kernels") or {}).get("isa")
    isa = f", {isa[:32]} kernels" if isa else ""
    return f"{cpu} ({hostname}{fm}{isa}, {int(settings.get('threads', 0))} threads, {cache} cache)"


def _usable(r):
    """A record the C model uses: ok, not measured beside another fusecal run
    (environment.contended), both latencies, ceilings and counts."""
    v = r.get("variants", {})
    roof = r.get("roofline", {})
    try:
        return (r.get("status") == "ok" and not (r.get("environment") or {}).get("contended") and
                v["unfused"]["latency_ms"]["median"] > 0 and
                v["fused"]["latency_ms"]["median"] > 0 and roof.get("ceiling_gflops", 0) > 0 and
                roof.get("ceiling_gbs", 0) > 0 and r.get("flops", 0) > 0 and v["unfused"]["bytes"] > 0 and
                v["fused"]["bytes"] > 0)
    except (KeyError, TypeError):
        return False


def _record_answer(machine, r):
    by = r.get("decided_by")
    sp = r["speedup_graph"] if by == "graph" else r["speedup_split"]["fusion"] if by == "fusion" else r["speedup"]
    v = r["variants"]
    # the latencies of the timing that decided: graph replays' where they did
    lat = "latency_graph_ms" if by == "graph" and all("latency_graph_ms" in v[k] for k in ("unfused", "fused")) \
        else "latency_ms"
    return Answer(r["problem"], machine, r["backend"], "measured", r["decision"],
                  v["unfused"][lat]["median"], v["fused"][lat]["median"], sp["ratio"],
                  tuple(sp["ci95"]), r["threshold"], "a record of this problem", (),
                  v["control"]["latency_ms"]["median"] if by == "fusion" else None)


def _predicted_answer(p):
    known = p["source"] != "unknown"
    sp = p.get("speedup", {})
    return Answer(p["problem"], p["machine"], p["backend"], p["source"], p["decision"],
                  p.get("unfused_ms"), p.get("fused_ms"), sp.get("ratio"),
                  tuple(sp["ci95"]) if known else None, p.get("threshold"), p.get("reason", ""),
                  tuple(p.get("nearest", ())), p.get("control_ms"))


class Calibration:
    """Answers from calibration and predict documents (see the module's doc)."""

    def __init__(self):
        self._answers = {}  # (problem, machine, backend) -> Answer, in the order first seen
        self.pairs = []     # (machine, backend) with an answer, in the order first seen
        self.networks = []  # the "network" blocks of calibration documents (run --network)

    def add(self, doc):
        """Adds a parsed document."""
        kind = doc.get("schema")
        if kind == "fusecal-calibration":
            for r in doc.get("records", []):
                if _usable(r):
                    self._put(_record_answer(_machine_name(doc, r["device"]), r))
            if "network" in doc:
                self.networks.append(doc["network"])
        elif kind == "fusecal-predict" and doc.get("kind") == "predictions":
            for p in doc.get("predictions", []):
                self._put(_predicted_answer(p))
        else:
            raise ValueError(f"not a fusecal calibration or predictions document (schema '{kind}')")
        return self

    def add_file(self, path):
        with open(path) as f:
            return self.add(json.load(f))

    def _put(self, a):
        key = (a.problem, a.machine, a.backend)
        if key in self._answers and self._answers[key].source != "unknown" and a.source == "unknown":
            return  # a later unknown never hides an answer
        self._answers[key] = a
        if (a.machine, a.backend) not in self.pairs:
            self.pairs.append((a.machine, a.backend))

    def answers(self, problem):
        """Every machine's and backend's answer for a problem (unknown ones made up
        for the pairs nothing answers)."""
        p = canonical(problem)
        out = []
        for machine, backend in self.pairs:
            a = self._answers.get((p, machine, backend))
            out.append(a or Answer(p, machine, backend, "unknown", "unknown", None, None, None, None, None,
                                   "neither measured nor predicted in the documents loaded", ()))
        return out

    def answer(self, problem, backend=None, machine=None):
        """The answer on one backend (and machine). Without a backend: of the
        backends with an answer, the one whose fused form is fastest (the one a
        deployment of the fused chain would use); unknown when none has one."""
        cands = [a for a in self.answers(problem)
                 if (backend is None or a.backend == backend) and (machine is None or a.machine == machine)]
        known = [a for a in cands if a.source != "unknown"]
        if known:
            return min(known, key=lambda a: a.fused_ms)
        if cands:
            return cands[0]
        return Answer(canonical(problem), machine, backend, "unknown", "unknown", None, None, None, None, None,
                      "no document names this backend", ())

    def decision(self, problem, backend=None, machine=None):
        """'yes', 'no', 'inconclusive' or 'unknown'."""
        return self.answer(problem, backend, machine).decision

    def speedup(self, problem, backend=None, machine=None):
        """(ratio, low, high) of the speedup the decision is made on (unfused/fused, or
        control/fused: Answer) with the 95 % interval, or None."""
        a = self.answer(problem, backend, machine)
        return None if a.source == "unknown" else (a.speedup, a.ci95[0], a.ci95[1])

    def network_summary(self, sites=None):
        """What fusing the sites saves, per machine and backend, as the C summary
        computes it: sites are (problem, multiplicity) or (problem, multiplicity,
        name), or a network file (a path or a parsed one: see network_sites); a
        yes site saves multiplicity x (unfused_ms - fused_ms) per inference
        (control_ms in place of unfused_ms where the answer has one), its
        interval bounds multiplicity x unfused_ms x (1 - 1/speedup) at the
        interval's ends, added up site by site. Returns a list of dicts with the
        fields of the predict document's summary, plus 'sites_detail'.

        With no sites: the summaries `fusecal run --network` wrote into the
        calibration documents loaded, as written (schemas/calibration.schema.json
        $defs/network_summary: saving_ms, saving_ci95 over the passes (interval_method), losing,
        per_site, ...), each with 'network': the network's name, batch and seq."""
        if sites is None:
            return [dict(s, network={k: net.get(k) for k in ("name", "batch", "seq")})
                    for net in self.networks for s in net["summaries"]]
        if isinstance(sites, (str, dict)):
            sites = network_sites(sites)
        out = []
        for machine, backend in self.pairs:
            s = {"machine": machine, "backend": backend, "sites": 0, "known": 0, "unfused_ms": 0.0,
                 "saving_ms": 0.0, "saving_ci95": [0.0, 0.0], "fuse": [], "losing": [], "sites_detail": []}
            for site in sites:
                problem, mult = site[0], float(site[1])
                a = self.answer(problem, backend, machine)
                s["sites"] += 1
                s["sites_detail"].append({"name": site[2] if len(site) > 2 else None, "problem": a.problem,
                                          "multiplicity": mult, "answer": a})
                if a.source == "unknown":
                    continue
                s["known"] += 1
                s["unfused_ms"] += mult * a.unfused_ms
                if a.ci95[1] < 1:
                    s["losing"].append(a.problem)
                if a.decision != "yes":
                    continue
                s["fuse"].append(a.problem)
                base = a.control_ms if a.control_ms is not None else a.unfused_ms
                # as predict.c's summarize_one: measured, the record's latencies; predicted, the
                # speedup's (it carries the model's local correction); the interval holds the point
                pt = mult * (base - a.fused_ms if a.source == "measured" else base * (1 - 1 / a.speedup))
                s["saving_ms"] += pt
                s["saving_ci95"][0] += min(pt, mult * base * (1 - 1 / a.ci95[0]))
                s["saving_ci95"][1] += max(pt, mult * base * (1 - 1 / a.ci95[1]))  # 1 / inf is 0
            out.append(s)
        return out


def network_sites(source):
    """A network's unique sites as (problem, multiplicity, names) with the
    problems canonical: from a network file (patterns/networks/*.json, at the size
    it is written at; `fusecal predict --network NAME --batch N` rewrites sizes)
    or from the "network" block of a calibration document. source is a path or a
    parsed document."""
    doc = source
    if isinstance(source, str):
        with open(source) as f:
            doc = json.load(f)
    if doc.get("schema") == "fusecal-calibration":
        summaries = doc.get("network", {}).get("summaries", [])
        if not summaries:
            raise ValueError("the calibration document holds no network summary (run --network writes one)")
        return [(s["problem"], s["multiplicity"], ", ".join(s["names"])) for s in summaries[0]["per_site"]]
    if doc.get("schema") != "fusecal-network":
        raise ValueError(f"not a fusecal network file (schema '{doc.get('schema')}')")
    merged, named = {}, {}
    for s in doc["sites"]:
        p = canonical(s["problem"])
        mult, names = merged.get(p, (0, []))
        merged[p] = (mult + s["multiplicity"], names + s["names"])
    for i, s in enumerate(doc["sites"]):
        for name in s["names"]:
            if name in named:  # as network.c: a layer named twice would count twice
                raise ValueError(f"site {i}: name '{name}' " +
                                 ("given twice" if named[name] == i else f"also names site {named[name]}"))
            named[name] = i
    return [(p, m, ", ".join(n)) for p, (m, n) in merged.items()]


def load(*paths):
    """A Calibration from calibration and predict documents, later ones first in
    precedence."""
    cal = Calibration()
    for p in paths:
        cal.add_file(p)
    return cal


def predict(calibrations, problems, fusecal="fusecal"):
    """Runs `fusecal predict --format json` on the calibration files for the
    problems and returns the predict document (a dict). Exit status 1 (a problem
    unknown everywhere) is an answer too; 2 raises."""
    cmd = [fusecal, "predict", *calibrations, "--format", "json"]
    for p in problems:
        cmd += ["--problem", p]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd[:2])}: {r.stderr.strip()}")
    return json.loads(r.stdout)
