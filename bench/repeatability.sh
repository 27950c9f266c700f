#!/usr/bin/env bash
# Repeatability of fusecal's verdicts on this machine: the quick sweep of every
# pattern twice, in separate processes, with different seeds, minutes apart, then
# a summary (bench/repeatability.py): how often each record's 95 % interval holds
# the other run's speedup (both directions), decisions that flip yes <-> no (hard)
# or to/from inconclusive (soft), the median |change| of the speedups, each run's
# wall time, records decided on fewer samples than the minimum, ceiling flags and
# the cpu.openblas speedup splits.
#   bench/repeatability.sh [OUTDIR]     (default results/$(bench/machine.sh))
#   FUSECAL_GAP=120  seconds between the runs (default 120)
#   FUSECAL_SWEEP=quick   the sweep (default quick)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/common.sh
bench_out "${1:-}"
gap=${FUSECAL_GAP:-120}
sweep=${FUSECAL_SWEEP:-quick}

for i in 1 2; do
    [ "$i" = 2 ] && sleep "$gap"
    start=$(date +%s.%N)
    run "$fusecal" run --device cpu --sweep "$sweep" --seed "$i" --out "$out/$sweep-$i.json" --quiet
    echo "$sweep-$i: $(echo "$(date +%s.%N) - $start" | bc) s wall" | tee -a "$out/repeatability-wall.txt"
done
note "python3 bench/repeatability.py $out/$sweep-1.json $out/$sweep-2.json > $out/REPEATABILITY.md"
python3 bench/repeatability.py "$out/$sweep-1.json" "$out/$sweep-2.json" | tee "$out/REPEATABILITY.md"
