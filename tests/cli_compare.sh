#!/usr/bin/env bash
# fusecal compare on two synthetic files: matched rows with both intervals,
# B/A changes, decision flips, the geometric-mean row, unmatched records, where
# threshold crossings moved, the three formats, pairing by problem across
# backends, and bad input.
. "$(dirname "$0")/lib.sh"

mk() { "$PYTHON" "$TESTS/make_records.py" "$@" || bad "make_records.py $*"; }
LB="linear_bias:m=8,k=8,n=8,dtype=fp32"
LR="linear_bias_relu:m=64,k=64,n=64,dtype=fp32"
GE="linear_bias_gelu:m=32,k=32,n=32,dtype=fp32"
CV="conv_bn_relu:n=1,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"
cd "$WORK" || exit 1

# A: speedups 2 and 8 (both fuse: yes); B: 4 and 4, and the first flips nothing,
# a third record goes from yes to no; each side has one record the other lacks
mk a.json --hostname machine-a "$LB@cpu.openblas:1.9,2.0,2.1" "$LR@cpu.openblas:7.9,8.0,8.1" \
    "$GE@cpu.openblas:1.5,1.6,1.7" "$CV@cpu.onednn:1.2,1.3,1.4"
mk b.json --hostname machine-b --cpu-model "Other CPU" "$LB@cpu.openblas:3.9,4.0,4.1" "$LR@cpu.openblas:3.9,4.0,4.1" \
    "$GE@cpu.openblas:0.9,1.0,1.05" "attention:b=1,h=2,s=64,d=64,causal=0,dtype=fp32@cpu.openblas:1.1,1.2,1.3"

expect 0 "compare, text" -- "$FUSECAL" compare a.json b.json
txt=$WORK/out
for s in "A: a.json" "B: b.json" "note: different device: cpu model 'Test CPU 9000' (A) vs 'Other CPU' (B)" \
    "geometric mean (3)" "1 flip" "only in A (1):" "$CV on cpu.onednn" "only in B (1):"; do
    if grep -qF -- "$s" "$txt"; then ok "text has: $s"; else bad "text lacks: $s"; fi
done
if grep -E '^linear_bias_gelu .*yes -> no +FLIP$' "$txt" >/dev/null; then ok "the flip is marked on its row"; else bad "flip row: $(grep gelu "$txt")"; fi
if grep -E '^linear_bias +cpu.openblas .*2\.000x \[1\.900, 2\.100\] +4\.000x \[3\.900, 4\.100\] +2\.000x \*' "$txt" >/dev/null; then
    ok "row: both intervals, B/A and * for non-overlapping intervals"; else bad "row: $(grep '^linear_bias ' "$txt")"; fi

expect 0 "compare, json" -- "$FUSECAL" compare a.json b.json --format json
check_eq "json rows, flips, unmatched" "$(pyq "$WORK/out" "len(d['rows']), d['flips'], [x['backend'] for x in d['only_a']], len(d['only_b'])")" "3 1 ['cpu.onednn'] 1"
# geometric mean of (2, 8, 1.6) and (4, 4, 1.0): the test computes it independently
check_eq "json geometric means" "$(pyq "$WORK/out" "round(d['geomean']['speedup_a'], 4), round(d['geomean']['speedup_b'], 4), round(d['geomean']['speedup_change'], 4)")" \
    "$("$PYTHON" -c "import math; g=lambda v: round(math.exp(sum(map(math.log,v))/len(v)),4); print(g([2,8,1.6]), g([4,4,1.0]), g([2,0.5,1/1.6]))")"
check_eq "json row shift" "$(pyq "$WORK/out" "[r['shift'] for r in d['rows']]")" "['higher', 'lower', 'lower']"

expect 0 "compare, markdown to a file" -- "$FUSECAL" compare a.json b.json --format md -o cmp.md
if grep -q '^| pattern | backend | dtype |' cmp.md && grep -q '^| geometric mean (3) |' cmp.md && grep -q '^### only in A (1):' cmp.md; then
    ok "markdown table"; else bad "markdown: $(cat cmp.md)"; fi
check_eq "markdown rows" "$(grep -c '^| linear' cmp.md)" 3

# a threshold crossing along m (k, n fixed) that moves: between m=8 and 32 in A, 32 and 128 in B
X="linear_bias:k=256,n=256,dtype=fp32"
mk xa.json "$X,m=8@cpu.onednn:1.9,2.0,2.1" "$X,m=32@cpu.onednn:0.75,0.8,0.85"
mk xb.json "$X,m=8@cpu.onednn:1.9,2.0,2.1" "$X,m=32@cpu.onednn:1.4,1.5,1.6" "$X,m=128@cpu.onednn:0.75,0.8,0.85"
expect 0 "compare, crossings" -- "$FUSECAL" compare xa.json xb.json
if grep -qE '^  linear_bias cpu.onednn fp32 along m \(k=256,n=256\): falls below 1.1x: m ~ 1[0-9.]+ -> m ~ [0-9.]+ \(B/A' "$WORK/out"
then ok "text: where the crossing moved"; else bad "crossings: $(tail -3 "$WORK/out")"; fi
expect 0 "compare, crossings as json" -- "$FUSECAL" compare xa.json xb.json --format json
# log-linear interpolation of log speedup over log m, computed here independently
check_eq "json: crossing points along m" \
    "$(pyq "$WORK/out" "[(c['dim'], c['direction'], round(c['a']['crossing']['at'], 3), round(c['b']['crossing']['at'], 3)) for c in d['crossings']]")" \
    "$("$PYTHON" -c "
import math
def at(a, ra, b, rb, th=1.1):
    t = math.log(ra / th) / (math.log(ra / th) - math.log(rb / th))
    return round(math.exp(math.log(a) + t * (math.log(b) - math.log(a))), 3)
print([('m', 'falls', at(8, 2.0, 32, 0.8), at(32, 1.5, 128, 0.8))])")"

# CPU against GPU: no pairs by (problem, backend); by problem they pair
mk gpu.json --gpu "Test GPU" "$LB@cuda.cublas:2.9,3.0,3.1" "$LR@cuda.cublas:1.0,1.1,1.2"
expect 1 "different backends do not pair by default" -- "$FUSECAL" compare a.json gpu.json
err_says "no record of 'a.json' matches one of 'gpu.json'" "--by problem"
expect 0 "--by problem pairs them" -- "$FUSECAL" compare a.json gpu.json --by problem --format json
check_eq "pairs across backends" "$(pyq "$WORK/out" "[(r['a']['backend'], r['b']['backend']) for r in d['rows']]")" \
    "[('cpu.openblas', 'cuda.cublas'), ('cpu.openblas', 'cuda.cublas')]"
expect 0 "--by problem, text has both backend columns" -- "$FUSECAL" compare a.json gpu.json --by problem
if grep -q 'A backend  *B backend' "$WORK/out"; then ok "backend columns"; else bad "header: $(head -5 "$WORK/out")"; fi
# several backends on each side: each record pairs once, with its own backend where
# the other side has it, else with one left over
mk two_a.json "$LB@cpu.openblas:1.9,2.0,2.1" "$LB@cpu.onednn:1.4,1.5,1.6"
mk two_b.json "$LB@cpu.onednn:1.4,1.5,1.6" "$LB@cuda.cublas:2.9,3.0,3.1" "$LB@cpu.openblas:1.9,2.0,2.1"
expect 0 "--by problem with several backends" -- "$FUSECAL" compare two_a.json two_b.json --by problem --format json
check_eq "each record once, its own backend first" \
    "$(pyq "$WORK/out" "[(r['a']['backend'], r['b']['backend']) for r in d['rows']], [x['backend'] for x in d['only_b']]")" \
    "[('cpu.openblas', 'cpu.openblas'), ('cpu.onednn', 'cpu.onednn')] ['cuda.cublas']"

# a record with a control (the fused form changes its implementation too): compared on
# its fusion split, as check judges it. The whole speedup held at 1.6 while the split
# fell from 1.3 to 1.0: the row must show the splits, B/A 0.769 and a lower shift.
mk ctla.json "$LB@cpu.openblas:1.50,1.60,1.70:ok:fusion=1.30"
mk ctlb.json "$LB@cpu.openblas:1.50,1.60,1.70:ok:fusion=1.00"
expect 0 "compare, control records" -- "$FUSECAL" compare ctla.json ctlb.json
if grep -E '^linear_bias +cpu.openblas .*1\.300x \[[0-9.]+, [0-9.]+\] fusion +1\.000x \[[0-9.]+, [0-9.]+\] fusion +0\.769x \*' "$WORK/out" >/dev/null; then
    ok "control row: the fusion splits and their B/A"; else bad "control row: $(grep '^linear_bias ' "$WORK/out")"; fi
expect 0 "compare, control records, json" -- "$FUSECAL" compare ctla.json ctlb.json --format json
cp "$WORK/out" ctl-compare.json
check_eq "json: the splits, the change and shift of the split" \
    "$(pyq ctl-compare.json "'%.3f %.3f %.3f %.3f %s' % (d['rows'][0]['a']['speedup'], d['rows'][0]['a']['speedup_fusion'], d['rows'][0]['b']['speedup_fusion'], d['rows'][0]['speedup_change'], d['rows'][0]['shift'])")" \
    "1.600 1.300 1.000 0.769 lower"
"$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/compare.schema.json" ctl-compare.json 2>verr && ok "control compare: schema" ||
    bad "control compare: schema: $(cat verr)"

# bad input and usage
printf '{"schema": "fusecal-calibration", "schema_version": 2,' >trunc.json
expect 2 "A not JSON" -- "$FUSECAL" compare trunc.json b.json; err_says "bad input" "trunc.json" "truncated"
mk v9.json --schema-version 9 "$LB@cpu.openblas:1,1,1"
expect 2 "B of a newer schema version" -- "$FUSECAL" compare a.json v9.json; err_says "bad input" "v9.json" "newer"
echo '{"schema": "fusecal-calibration", "schema_version": 2}' >bad.json
expect 2 "B fails its schema" -- "$FUSECAL" compare a.json bad.json; err_says "bad.json" "does not match"
expect 2 "one file" -- "$FUSECAL" compare a.json; err_says "two calibration files"
expect 2 "unknown --by" -- "$FUSECAL" compare a.json b.json --by shape; err_says "unknown --by 'shape'"
expect 2 "unknown format" -- "$FUSECAL" compare a.json b.json --format html; err_says "unknown format 'html'"
expect 2 "unwritable -o" -- "$FUSECAL" compare a.json b.json -o /nonexistent-dir/x.md; err_says "cannot write"
expect 0 "compare --help" -- "$FUSECAL" compare --help

finish
