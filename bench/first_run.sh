#!/usr/bin/env bash
# What a newcomer's first run of one small problem costs, with the defaults:
#   bench/first_run.sh [N]      (N runs of each kind, default 3)
# Times `fusecal run --shape linear_bias_relu:m=512,k=1024,n=1024` (every CPU
# backend) N times from an empty ceilings cache (the ceilings measured first, as
# on a machine's first run) and N times from a filled one (a later run within the
# hour), and prints each wall time with the records' stop rules and rounds. Run it
# on a quiet machine: the load average is printed first.
set -euo pipefail
cd "$(dirname "$0")/.."
fusecal=$(realpath "${FUSECAL:-build/fusecal}")
n=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
one() { # LABEL: one timed run, its wall time and what stopped each record
    local t0 t1
    t0=$(date +%s.%N)
    "$fusecal" run --shape linear_bias_relu:m=512,k=1024,n=1024 --out "$work/run.json" --quiet
    t1=$(date +%s.%N)
    python3 - "$1" "$t0" "$t1" "$work/run.json" <<'PY'
import json, sys
label, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
d = json.load(open(path))
recs = ", ".join(f"{r['backend']}: {r.get('rounds')} rounds, {r.get('stop_rule')}" for r in d["records"])
print(f"{label:16s} {t1 - t0:6.2f} s  ({recs})")
PY
}
for i in $(seq "$n"); do
    rm -rf "$XDG_CACHE_HOME"
    one "empty cache $i"
done
for i in $(seq "$n"); do one "filled cache $i"; done
