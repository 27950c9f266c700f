#!/usr/bin/env python3
"""Compares two calibration documents of the same sweep made in separate runs
(bench/repeatability.sh): interval coverage of the other run's speedup (the one each
record's decision was made on: spd), decision flips, speedup changes, run times, and
the honesty checks of each run."""
import json
import math
import statistics
import sys

# Student's t 0.975 quantiles by degrees of freedom (beyond the table: 1.96 + 2.4/df)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 20: 2.086, 30: 2.042}


def spd(r):
    """The speedup a record's decision was made on (decided_by): the fusion split's
    where a control was measured, the graph replays' where launch-bound, else the
    eager unfused/fused one."""
    by = r.get("decided_by")
    return r["speedup_split"]["fusion"] if by == "fusion" else r["speedup_graph"] if by == "graph" else r["speedup"]


def t975(df):
    return T975.get(df, 1.96 + 2.4 / df)


def rounds_se(r):
    """The standard error of a record's log speedup from its rounds alone
    (speedup.rounds95, or ci95 when nothing widened it)."""
    sp = spd(r)
    lo, hi = sp.get("rounds95", sp["ci95"])
    return math.log(hi / lo) / 2 / t975(max(1, r["rounds"] - 1))


def run_level_sd(pairs):
    """Maximum-likelihood sd of the run-level effect: the log ratio of two runs'
    speedups is normal with variance se_a^2 + se_b^2 + 2 s^2."""
    best, best_ll = 0.0, -math.inf
    for i in range(0, 1001):
        s = i * 0.0001
        ll = 0.0
        for d, va in pairs:
            v = va + 2 * s * s
            ll += -0.5 * (math.log(v) + d * d / v)
        if ll > best_ll:
            best, best_ll = s, ll
    return best


def at_sigma(r, sigma):
    """(ratio, log half-width of ci95) a record would have had with run-level sd
    sigma: the rounds' own half-width and 1.96 sigma in quadrature (fc_interval_runs)."""
    sp = spd(r)
    lo, hi = sp.get("rounds95", sp["ci95"])
    h = math.log(hi / lo) / 2
    return sp["ratio"], math.sqrt(h * h + (1.959964 * sigma) ** 2)


def decide(ratio, half, threshold):
    if ratio * math.exp(-half) > threshold:
        return "yes"
    if ratio * math.exp(half) < threshold:
        return "no"
    return "inconclusive"


def sigma_row(ra, rb, common, sigma):
    """Re-run coverage, hard and soft flips of the pair at run-level sd sigma."""
    cov = hard = soft = 0
    for k in common:
        (xa, ha), (xb, hb) = at_sigma(ra[k], sigma), at_sigma(rb[k], sigma)
        d = abs(math.log(xb / xa))
        cov += (d <= math.sqrt(2) * ha) + (d <= math.sqrt(2) * hb)
        da, db = decide(xa, ha, ra[k]["threshold"]), decide(xb, hb, rb[k]["threshold"])
        if da != db:
            if "inconclusive" in (da, db):
                soft += 1
            else:
                hard += 1
    return cov, hard, soft


def load(path):
    with open(path) as f:
        return json.load(f)


def ok_records(doc):
    return {(r["problem"], r["backend"]): r for r in doc["records"] if r["status"] == "ok"}


def covers(r, x, field="ci95"):
    lo, hi = spd(r).get(field, spd(r)["ci95"])
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
    # the state check (README: the machine's state); absent from documents older than it
    st = [r for r in recs if "state" in r]
    if st:
        held = [r for r in st if r["state"].get("withheld")]
        moved = sum(1 for r in st if r["state"]["span"] >= 2)
        out.append(f"  - the machine's state: a deciding variant's round medians spanned 2x or more in {moved} of "
                   f"{len(st)} records; decisions withheld: {len(held)}")
        out += [f"    - {r['backend']} {r['problem']}: the interval said {r['state']['withheld']}, "
                f"{r['speedup']['ratio']:.3f} [{r['speedup']['ci95'][0]:.3f}, {r['speedup']['ci95'][1]:.3f}]; "
                f"{r['state']['span_variant']} span {r['state']['span']:.2f}x, "
                f"{r['state']['rounds_against']} of {r['rounds']} rounds against" for r in held]
    return out


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    ra, rb = ok_records(a), ok_records(b)
    common = sorted(set(ra) & set(rb))
    cov_ab = sum(covers(ra[k], spd(rb[k])["ratio"]) for k in common)
    cov_ba = sum(covers(rb[k], spd(ra[k])["ratio"]) for k in common)
    rcov = sum(covers(ra[k], spd(rb[k])["ratio"], "rerun95") + covers(rb[k], spd(ra[k])["ratio"], "rerun95")
               for k in common)
    hard = [k for k in common if {ra[k]["decision"], rb[k]["decision"]} == {"yes", "no"}]
    soft = [k for k in common if ra[k]["decision"] != rb[k]["decision"] and k not in hard]
    overlap = sum(max(spd(ra[k])["ci95"][0], spd(rb[k])["ci95"][0]) <=
                  min(spd(ra[k])["ci95"][1], spd(rb[k])["ci95"][1]) for k in common)
    delta = [abs(spd(rb[k])["ratio"] / spd(ra[k])["ratio"] - 1) for k in common]
    width = [ (spd(r)["ci95"][1] - spd(r)["ci95"][0]) / (2 * spd(r)["ratio"])
              for d in (ra, rb) for r in d.values()]
    cpu = a["host"]["devices"]["cpu"]
    n = len(common)
    if n == 0:
        sys.exit(f"{sys.argv[1]} and {sys.argv[2]} have no ok record in common")
    print(f"# Repeatability: {cpu.get('model')} ({cpu.get('vendor', '')}, family {cpu.get('family', '?')} "
          f"model {cpu.get('model_number', '?')}), {cpu.get('cores')} cores, {cpu.get('threads')} threads\n")
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
        print(f"  - {k[1]} {k[0]}: {ra[k]['decision']} {spd(ra[k])['ratio']:.3f} "
              f"[{spd(ra[k])['ci95'][0]:.3f}, {spd(ra[k])['ci95'][1]:.3f}] -> {rb[k]['decision']} "
              f"{spd(rb[k])['ratio']:.3f} [{spd(rb[k])['ci95'][0]:.3f}, {spd(rb[k])['ci95'][1]:.3f}]")
    print(f"- |change of speedup|: median {100 * statistics.median(delta):.2f} %, p90 "
          f"{100 * statistics.quantiles(delta, n=10)[-1]:.2f} %, max {100 * max(delta):.2f} %")
    print(f"- interval half-width / speedup: median {100 * statistics.median(width):.2f} %, p90 "
          f"{100 * statistics.quantiles(width, n=10)[-1]:.2f} %")
    decided = sum(r["decision"] != "inconclusive" for d in (ra, rb) for r in d.values())
    print(f"- decided records (yes or no): {decided} of {2 * n}")
    pairs = [(math.log(spd(rb[k])["ratio"] / spd(ra[k])["ratio"]),
              rounds_se(ra[k]) ** 2 + rounds_se(rb[k]) ** 2) for k in common]
    used = {a["settings"].get("run_noise", 0), b["settings"].get("run_noise", 0)}
    print(f"- run-level sd of a log speedup these two runs imply (maximum likelihood over {n} records, beyond what "
          f"the rounds see): {100 * run_level_sd(pairs):.2f} %; the runs used `--run-noise` "
          f"{' and '.join(f'{100 * u:.2f} %' for u in sorted(used))}")
    print("\n## At other run-level sd\n")
    print("Recomputed from each record's rounds interval (`rounds95`): what `--run-noise` would have given.\n")
    print("| run-level sd | re-run coverage | hard flips | soft flips |")
    print("| ---: | ---: | ---: | ---: |")
    for sigma in (0, 0.01, 0.015, 0.025, 0.035, 0.05):
        cov, hard_s, soft_s = sigma_row(ra, rb, common, sigma)
        print(f"| {100 * sigma:.1f} % | {100 * cov / (2 * n):.1f} % | {hard_s} | {soft_s} ({100 * soft_s / n:.1f} %) |")
    print("\n## Each run\n")
    for name, d in (("run 1", a), ("run 2", b)):
        print("\n".join(honesty(name, d)))


if __name__ == "__main__":
    main()
