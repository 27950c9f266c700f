#!/usr/bin/env bash
# Two builds of fusecal on the same problems in one sitting: the builds take turns,
# round after round, so that the host's drift over the minutes falls on both alike
# (on a shared VM a kernel change measured in two sittings an hour apart says more
# about the neighbours than about the change).
#   bench/ab_builds.sh OLD_FUSECAL NEW_FUSECAL OUTDIR ROUNDS 'RUN ARGS...'
# e.g. bench/ab_builds.sh /tmp/old/build/fusecal build/fusecal /tmp/ab 3 \
#        '--shape add_layernorm:m=14592,n=768 --max-time 3'
# Two builds differ in where their code lies as well: on the AMD EPYC VM the fp32
# decode kernel, its instructions unchanged, ran 0.90x in a build whose functions had
# moved by 16 bytes (ab-decode-dpbf16.txt). To measure a kernel's choice alone, give
# both sides one binary with the choice switched at run time (OLD may be a script
# that sets the switch and execs it).
# Writes OUTDIR/{old,new}-R.json (each round's records) and OUTDIR/ab.txt: per
# problem, backend and variant, each build's median latency in every round, the
# medians of the rounds, and new / old.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 5 ] || {
    echo "usage: bench/ab_builds.sh OLD_FUSECAL NEW_FUSECAL OUTDIR ROUNDS 'RUN ARGS...'" >&2
    exit 2
}
old=$1 new=$2 out=$3 rounds=$4 args=$5
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
    for b in old new; do
        bin=$old
        [ $b = new ] && bin=$new
        # shellcheck disable=SC2086 # the run arguments are words
        "$bin" run $args --seed "$r" --quiet --out "$out/$b-$r.json"
    done
done
python3 - "$out" "$rounds" "$old" "$new" <<'PY' | tee "$out/ab.txt"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
lat = {}  # (problem, backend, variant) -> build -> [ms per round]
rev = {}
for b in ("old", "new"):
    for r in range(1, rounds + 1):
        doc = json.load(open(f"{out}/{b}-{r}.json"))
        rev[b] = doc["tool"]["git_revision"]
        for rec in doc["records"]:
            for v, x in rec["variants"].items():
                if "latency_ms" in x:
                    lat.setdefault((rec["problem"], rec["backend"], v), {}).setdefault(b, []).append(
                        x["latency_ms"]["median"])
print(f"old {sys.argv[3]} ({rev['old']}), new {sys.argv[4]} ({rev['new']}); {rounds} rounds, the builds in turn; "
      "median latency (ms) per round")
for (p, be, v), d in sorted(lat.items()):
    o, n = d.get("old", []), d.get("new", [])
    if not o or not n:
        continue
    mo, mn = statistics.median(o), statistics.median(n)
    print(f"{p} {be} {v}: old {' '.join(f'{x:.3f}' for x in o)} | new {' '.join(f'{x:.3f}' for x in n)} | "
          f"medians {mo:.3f} -> {mn:.3f} ({mn / mo:.2f}x)")
PY
