#!/usr/bin/env python3
"""Compares two calibration documents of the same sweep made in separate runs
(bench/repeatability.sh): interval coverage of the other run's speedup, decision
flips, speedup changes, run times, and the honesty checks of each run."""
import json
import statistics
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def ok_records(doc):
    return {(r["problem"], r["backend"]): r for r in doc["records"] if r["status"] == "ok"}


def covers(r, x, field="ci95"):
    lo, hi = r["speedup"].get(field, r["speedup"]["ci95"])
    return lo <= x <= hi


def honesty(name, doc):
    """Lines about one run: minimums, ceilings, splits."""
    s = doc["settings"]
    stop = s["stop"]
    recs = [r for r in doc["records"] if r["status"] == "ok"]
    min_pairs = max(2, -(-stop["min_samples"] // s["rounds"]))
    short = [r for r in recs if r["decision"] != "inconclusive" and
             (r["rounds"] < s["rounds"] or any(p["pairs"] < min_pairs for p in r["per_round"]))]
    over = [(r, v) for r in recs for v, vv in r["variants"].items() if vv.get("over_ceiling")]
    unflagged = [(r, v) for r in recs for v, vv in r["variants"].items()
                 if not vv.get("over_ceiling") and max(vv.get("pct_peak_flops", 0), vv.get("pct_peak_bandwidth", 0),
                                                       vv.get("pct_roofline", 0)) > 100]
    lin = [r for r in recs if r["backend"] == "cpu.openblas" and r["family"] == "linear"]
    split = [r for r in lin if "speedup_split" in r and "control" in r["variants"]]
    rules = {}
    for r in recs:
        rules[r["stop_rule"]] = rules.get(r["stop_rule"], 0) + 1
    ceil = doc["ceilings"].get("cpu", {})
    out = [f"- {name}: {len(doc['records'])} records ({len(recs)} ok), {doc['elapsed_s']:.1f} s, "
           f"complete={str(doc['complete']).lower()}; stop rules {rules}; rounds per record "
           f"{min(r['rounds'] for r in recs)}-{max(r['rounds'] for r in recs)} (median "
           f"{statistics.median(r['rounds'] for r in recs):g})",
           f"  - records decided (yes/no) below the minimum ({s['rounds']} rounds of {min_pairs} tuples): {len(short)}",
           f"  - variants above 100 % of a ceiling: {len(over)} flagged, {len(unflagged)} unflagged; ceilings: "
           f"sgemm {ceil.get('gflops', {}).get('fp32', 0):.1f} GFLOP/s, bandwidth {ceil.get('bandwidth_gbs', 0):.1f} GB/s "
           f"({ceil.get('method', '')[:60]}...)",
           f"  - cpu.openblas linear records with the control variant and the split: {len(split)} of {len(lin)}"]
    return out


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ra, rb = ok_records(a), ok_records(b)
    common = sorted(set(ra) & set(rb))
    cov_ab = sum(covers(ra[k], rb[k]["speedup"]["ratio"]) for k in common)
    cov_ba = sum(covers(rb[k], ra[k]["speedup"]["ratio"]) for k in common)
    rcov = sum(covers(ra[k], rb[k]["speedup"]["ratio"], "rerun95") + covers(rb[k], ra[k]["speedup"]["ratio"], "rerun95")
               for k in common)
    hard = [k for k in common if {ra[k]["decision"], rb[k]["decision"]} == {"yes", "no"}]
    soft = [k for k in common if ra[k]["decision"] != rb[k]["decision"] and k not in hard]
    overlap = sum(max(ra[k]["speedup"]["ci95"][0], rb[k]["speedup"]["ci95"][0]) <=
                  min(ra[k]["speedup"]["ci95"][1], rb[k]["speedup"]["ci95"][1]) for k in common)
    delta = [abs(rb[k]["speedup"]["ratio"] / ra[k]["speedup"]["ratio"] - 1) for k in common]
    width = [ (r["speedup"]["ci95"][1] - r["speedup"]["ci95"][0]) / (2 * r["speedup"]["ratio"])
              for d in (ra, rb) for r in d.values()]
    cpu = a["host"]["devices"]["cpu"]
    n = len(common)
    if n == 0:
        sys.exit(f"{sys.argv[1]} and {sys.argv[2]} have no ok record in common")
    print(f"# Repeatability: {cpu.get('model')} ({cpu.get('vendor', '')}, family {cpu.get('family', '?')}), "
          f"{cpu.get('cores')} cores, {cpu.get('threads')} threads\n")
    print(f"Runs: `{' '.join(a['argv'])}` and `{' '.join(b['argv'])}`, started {a['created_utc']} and "
          f"{b['created_utc']}; fusecal {a['tool']['version']} ({a['tool']['git_revision']}).\n")
    print("## Between the runs\n")
    print(f"- records in both runs: {n}")
    print(f"- coverage: run 1's interval holds run 2's speedup in {cov_ab}/{n} ({100 * cov_ab / n:.1f} %); "
          f"run 2's holds run 1's in {cov_ba}/{n} ({100 * cov_ba / n:.1f} %); both directions "
          f"{100 * (cov_ab + cov_ba) / (2 * n):.1f} %. A 95 % confidence interval of the speedup holds "
          f"another run's estimate less often than 95 % even when honest (the difference of two estimates "
          f"has twice the variance of one: about 83-88 % with 5-10 rounds)")
    print(f"- re-run coverage: each record's `rerun95` (the interval for another run's estimate, sqrt(2) wider "
          f"on the log scale) holds the other run's speedup in {rcov}/{2 * n} ({100 * rcov / (2 * n):.1f} %, "
          f"both directions; 95 % when the rounds capture what changes between runs)")
    print(f"- intervals that overlap: {overlap}/{n}")
    print(f"- hard decision flips (yes <-> no): {len(hard)}" + "".join(f"\n  - {k[1]} {k[0]}: {ra[k]['decision']} -> {rb[k]['decision']}" for k in hard))
    print(f"- soft flips (to or from inconclusive): {len(soft)} ({100 * len(soft) / n:.1f} % of records)")
    for k in soft:
        print(f"  - {k[1]} {k[0]}: {ra[k]['decision']} {ra[k]['speedup']['ratio']:.3f} "
              f"[{ra[k]['speedup']['ci95'][0]:.3f}, {ra[k]['speedup']['ci95'][1]:.3f}] -> {rb[k]['decision']} "
              f"{rb[k]['speedup']['ratio']:.3f} [{rb[k]['speedup']['ci95'][0]:.3f}, {rb[k]['speedup']['ci95'][1]:.3f}]")
    print(f"- |change of speedup|: median {100 * statistics.median(delta):.2f} %, p90 "
          f"{100 * statistics.quantiles(delta, n=10)[-1]:.2f} %, max {100 * max(delta):.2f} %")
    print(f"- interval half-width / speedup: median {100 * statistics.median(width):.2f} %, p90 "
          f"{100 * statistics.quantiles(width, n=10)[-1]:.2f} %")
    decided = sum(r["decision"] != "inconclusive" for d in (ra, rb) for r in d.values())
    print(f"- decided records (yes or no): {decided} of {2 * n}")
    print("\n## Each run\n")
    for name, d in (("run 1", a), ("run 2", b)):
        print("\n".join(honesty(name, d)))


if __name__ == "__main__":
    main()
