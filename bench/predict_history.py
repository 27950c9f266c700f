#!/usr/bin/env python3
"""fusecal predict --validate on every committed version of the standard calibrations,
not only the newest: how far the model's figures move from one sweep of a machine to
the next (the machine's state during a sweep moves its records, and with them the
held-out errors and decisions).

    bench/predict_history.py [--fusecal build/fusecal] [--last N] [--repo DIR]
                             [--json OUT] [RESULTS_DIR...]

For each results folder (default: every results/*/ with a standard.json at HEAD),
the last N commits that wrote its standard.json (default 8), newest first: the
sweep's date and the fusecal revision that made it, its records, the model's median
and p90 latency errors (unfused / fused), its decisions reproduced of those decided,
contradicted and left inconclusive, rerun95 coverage, and how many of its decided
records the sweep before decided alike (the same problem and backend measured
again: how far a sweep's decisions reproduce at all, the yardstick beside the
model's); then per folder the decisions pooled over its sweeps and the range of the
per-sweep figure. Each version is validated by the fusecal given, so every row is
today's model on that sweep's records. --json writes the rows and totals as JSON.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True, text=True).stdout


def versions(repo, path, last):
    out = git(repo, "log", "--diff-filter=AM", "--format=%H %cs", f"-{last}", "--", path)
    return [line.split() for line in out.splitlines() if line.strip()]


def validate(fusecal, doc_text):
    """predict --validate's JSON on a calibration document given as text"""
    with tempfile.TemporaryDirectory() as tmp:
        cal = os.path.join(tmp, "standard.json")
        with open(cal, "w") as f:
            f.write(doc_text)
        p = subprocess.run([fusecal, "predict", "--validate", cal, "--format", "json"], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
        return json.loads(p.stdout)


def row_of(commit, date, doc, pv):
    v = pv["validation"]
    m = v["model"]
    dec = m["decisions"]
    err = m["abs_rel_error"]
    return {
        "commit": commit[:12],
        "date": date,
        "revision": (doc.get("tool") or {}).get("git_revision", "?"),
        "records": v["records"],
        "predicted": m["predicted"],
        "unfused_median": err["unfused_ms"]["median"],
        "unfused_p90": err["unfused_ms"]["p90"],
        "fused_median": err["fused_ms"]["median"],
        "fused_p90": err["fused_ms"]["p90"],
        "decided": dec["decided"],
        "reproduced": dec["reproduced"],
        "contradicted": dec["contradicted"],
        "inconclusive": dec["inconclusive"],
        "coverage": m.get("coverage"),
    }


def remeasured(doc, before):
    """Of the records doc decided (yes or no) whose problem and backend the sweep
    before also measured: how many, and how many it decided alike (a re-measurement's
    agreement with the sweep)."""
    prev = {(r.get("problem"), r.get("backend")): r.get("decision") for r in before.get("records", [])}
    decided = same = 0
    for r in doc.get("records", []):
        key = (r.get("problem"), r.get("backend"))
        if r.get("decision") in ("yes", "no") and key in prev:
            decided += 1
            same += prev[key] == r["decision"]
    return decided, same


def pct(x):
    return f"{100 * x:5.1f}" if x is not None else "    -"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fusecal", default="build/fusecal")
    ap.add_argument("--last", type=int, default=8)
    ap.add_argument("--repo", default=".")
    ap.add_argument("--json")
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    if a.last < 1:
        sys.exit("predict_history.py: --last takes a positive count")
    fusecal = os.path.abspath(a.fusecal)
    if not os.access(fusecal, os.X_OK):
        sys.exit(f"predict_history.py: no fusecal binary at {a.fusecal}")
    try:
        git(a.repo, "rev-parse", "--git-dir")
    except (subprocess.CalledProcessError, FileNotFoundError):
        sys.exit(f"predict_history.py: {a.repo} is not a git repository")
    dirs = a.dirs
    if not dirs:
        listed = git(a.repo, "ls-tree", "-r", "--name-only", "HEAD", "--", "results")
        dirs = sorted(os.path.dirname(p) for p in listed.split() if p.count("/") == 2 and p.endswith("/standard.json"))
    if not dirs:
        sys.exit("predict_history.py: no standard.json in the repository's history")
    out = {"fusecal": fusecal, "folders": []}
    for d in dirs:
        path = os.path.join(d.rstrip("/"), "standard.json")
        every = versions(a.repo, path, a.last + 1)  # and the sweep before the oldest, if any
        vs = every[:a.last]
        if not vs:
            sys.exit(f"predict_history.py: no commit changed {path}")
        print(f"{path}: the last {len(vs)} version{'s' if len(vs) != 1 else ''}")
        print("  commit        date        made by           records  unfused error %  fused error %   decisions"
              "                                      rerun95   the sweep before")
        print("                                                       median   p90    median   p90")
        rows = []
        texts = [git(a.repo, "show", f"{c}:{path}") for c, _ in every]
        docs = [json.loads(t) for t in texts]
        for i, (commit, date) in enumerate(vs):
            doc = docs[i]
            try:
                pv = validate(fusecal, texts[i])
            except (RuntimeError, ValueError) as e:
                print(f"  {commit[:12]}  {date}  not validated: {e}")
                continue
            r = row_of(commit, date, doc, pv)
            if i + 1 < len(docs):
                r["before_decided"], r["before_same"] = remeasured(doc, docs[i + 1])
            rows.append(r)
            agree = r["reproduced"] / r["decided"] if r["decided"] else None
            line = (f"  {r['commit']}  {date}  {r['revision']:<18}{r['records']:5d}  "
                    f"{pct(r['unfused_median'])}  {pct(r['unfused_p90'])}   {pct(r['fused_median'])}  "
                    f"{pct(r['fused_p90'])}   {r['reproduced']:4d} of {r['decided']:4d} ({pct(agree)} %), "
                    f"{r['contradicted']} contra, {r['inconclusive']:3d} inc  {pct(r['coverage'])} %")
            if r.get("before_decided"):
                line += (f"   {r['before_same']:4d} of {r['before_decided']:4d} "
                         f"({pct(r['before_same'] / r['before_decided'])} %)")
            print(line)
        tot = {k: sum(r[k] for r in rows) for k in ("decided", "reproduced", "contradicted", "inconclusive")}
        each = [r["reproduced"] / r["decided"] for r in rows if r["decided"]]
        if each:
            print(f"  pooled over {len(rows)} sweep{'s' if len(rows) != 1 else ''}: {tot['reproduced']} of "
                  f"{tot['decided']} decisions reproduced ({pct(tot['reproduced'] / tot['decided']).strip()} %), "
                  f"{tot['contradicted']} contradicted; per sweep {pct(min(each)).strip()}-{pct(max(each)).strip()} %")
        bd, bs = sum(r.get("before_decided", 0) for r in rows), sum(r.get("before_same", 0) for r in rows)
        if bd:
            tot["before_decided"], tot["before_same"] = bd, bs
            print(f"  the sweep before, on the same problems: {bs} of {bd} decisions the same "
                  f"({pct(bs / bd).strip()} %)")
        print()
        out["folders"].append({"path": path, "sweeps": rows, "pooled": tot})
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
