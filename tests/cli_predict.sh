#!/usr/bin/env bash
# fusecal predict on a synthetic calibration: measured, predicted and unknown
# answers in text and JSON, the JSON against schemas/predict.schema.json (with
# python3-jsonschema), --validate, the exit codes, bad input (one line, exit 2),
# and python/fusecal.py against the C output on the same file.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1

schema_ok() { # FILE: valid against the predict schema
    if "$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/predict.schema.json" "$1" 2>"$WORK/verr"; then
        ok "schema-valid: $1"
    else bad "schema-invalid: $1 $(head -3 "$WORK/verr")"; fi
}

# A ladder of linear_bias_relu problems on two backends whose speedup falls with
# size, and three conv_bn_relu records (too few for the model). And a ladder of
# linear_bias problems on cpu.openblas with a control: the whole speedup about 1.5x
# the fusion split's (the fused form's implementation), which decides and falls
# with size from 1.3 to 1.04.
mapfile -t recs < <("$PYTHON" - <<'EOF'
for backend, base in (("cpu.openblas", 1.0), ("cpu.onednn", 0.6)):
    for kn in (256, 1024):
        for m in (16, 32, 64, 128, 256, 512, 1024):
            r = 1 + base * 8.0 / (m ** 0.5 * (kn / 256) ** 0.5)
            print(f"linear_bias_relu:m={m},k={kn},n={kn},dtype=fp32@{backend}:{r * 0.98:.4f},{r:.4f},{r * 1.02:.4f}")
for m in (16, 32, 64, 128, 256, 512, 1024):
    f = 1 + 0.3 / (m / 16) ** 0.5
    print(f"linear_bias:m={m},k=1024,n=1024,dtype=fp32@cpu.openblas:{1.5 * f * 0.98:.4f},{1.5 * f:.4f},{1.5 * f * 1.02:.4f}:ok:fusion={f:.4f}")
for h in (14, 28, 56):
    print(f"conv_bn_relu:n=1,c=64,h={h},w={h},k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32@cpu.onednn:1.0,1.05,1.1")
EOF
)
"$PYTHON" "$TESTS/make_records.py" cal.json "${recs[@]}" || bad "make_records.py"
"$PYTHON" "$TESTS/make_records.py" none.json "linear_bias:m=8,k=8,n=8,dtype=fp32@cpu.openblas:1,1.1,1.2:failed" ||
    bad "make_records.py"
MEASURED="linear_bias_relu:m=64,k=1024,n=1024"
INSIDE="linear_bias_relu:m=96,k=512,n=512"
FAR="linear_bias_relu:m=65536,k=8192,n=8192"
CONV="conv_bn_relu:n=1,c=64,h=40,w=40,k=64,pad=1"
CTL_MEASURED="linear_bias:m=64,k=1024,n=1024"
CTL_INSIDE="linear_bias:m=96,k=1024,n=1024"

# ---- text (the conv problem has an answer on no backend: exit 1)
expect 1 "predict, text" -- "$FUSECAL" predict cal.json -p "$MEASURED" --problem "$INSIDE" -p "$CONV"
for s in "machine: Test CPU 9000 (ci-host, 2 threads, warm cache)" \
    "linear_bias_relu:m=64,k=1024,n=1024,dtype=fp32" "cpu.openblas  measured" "cpu.onednn    predicted" \
    "nearest: linear_bias_relu:m=128,k=256,n=256,dtype=fp32" "3 records of conv_bn_relu fp32 nhwc; the model needs 4" \
    "no record of conv_bn_relu fp32 nhwc" "summary, each problem once:"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "text has: $s"; else bad "text lacks: $s"; fi
done

# ---- JSON
expect 1 "predict, json to a file" -- "$FUSECAL" predict cal.json -p "$MEASURED" -p "$INSIDE" -p "$CONV" \
    --format json -o pred.json
schema_ok pred.json
check_eq "sources per problem and backend" \
    "$(pyq pred.json "[(p['backend'][4:], p['source']) for p in d['predictions']]")" \
    "[('openblas', 'measured'), ('onednn', 'measured'), ('openblas', 'predicted'), ('onednn', 'predicted'), ('openblas', 'unknown'), ('onednn', 'unknown')]"
check_eq "query and canonical problem" "$(pyq pred.json "d['predictions'][2]['query'], d['predictions'][2]['problem']")" \
    "$INSIDE linear_bias_relu:m=96,k=512,n=512,dtype=fp32"
check_eq "a predicted speedup inside its interval, with a decision by the threshold" \
    "$(pyq pred.json "[(p['speedup']['ci95'][0] <= p['speedup']['ratio'] <= p['speedup']['ci95'][1]) and p['decision'] == ('yes' if p['speedup']['ci95'][0] > p['threshold'] else 'no' if p['speedup']['ci95'][1] < p['threshold'] else 'inconclusive') for p in d['predictions'] if p['source'] == 'predicted']")" \
    "[True, True]"
check_eq "the measured answer is the record's" \
    "$(pyq pred.json "d['predictions'][0]['speedup']['ratio'], d['predictions'][0]['nearest']")" \
    "$(pyq cal.json "next(r['speedup']['ratio'] for r in d['records'] if r['problem'] == 'linear_bias_relu:m=64,k=1024,n=1024,dtype=fp32' and r['backend'] == 'cpu.openblas'), []")"
# the control class: answers on the fusion split, with the control's time
expect 0 "predict, the control class" -- "$FUSECAL" predict cal.json -p "$CTL_MEASURED" -p "$CTL_INSIDE" --format json \
    -o ctl.json
schema_ok ctl.json
check_eq "the measured control answer is the record's split" \
    "$(pyq ctl.json "[(p['control_ms'], p['speedup']['ratio']) for p in d['predictions'] if p['backend'] == 'cpu.openblas' and p['source'] == 'measured']")" \
    "$(pyq cal.json "[(r['variants']['control']['latency_ms']['median'], r['speedup_split']['fusion']['ratio']) for r in d['records'] if r['problem'] == 'linear_bias:m=64,k=1024,n=1024,dtype=fp32']")"
check_eq "the predicted control answer: the fusion split (1.12 by the ladder's law), not the whole speedup (1.68)" \
    "$(pyq ctl.json "[(p['source'], 'control_ms' in p, 1.0 < p['speedup']['ratio'] < 1.25, p['control_ms'] < p['unfused_ms']) for p in d['predictions'] if p['backend'] == 'cpu.openblas' and p['problem'].startswith('linear_bias:m=96')]")" \
    "[('predicted', True, True, True)]"
expect 0 "every problem answered somewhere: exit 0" -- "$FUSECAL" predict cal.json -p "$MEASURED" -p "$INSIDE"
check_eq "summary per backend" "$(pyq pred.json "[(s['backend'], s['sites'], s['known']) for s in d['summary']]")" \
    "[('cpu.openblas', 3, 2), ('cpu.onednn', 3, 2)]"

# far beyond the measured span: unknown everywhere, exit 1, the document still written
expect 1 "a problem unknown on every backend" -- "$FUSECAL" predict cal.json -p "$INSIDE" -p "$FAR" --format json -o far.json
schema_ok far.json
check_eq "refused with the reason" "$(pyq far.json "[p['decision'] for p in d['predictions'] if p['query'] == '$FAR']")" \
    "['unknown', 'unknown']"
if grep -q "above the measured" far.json; then ok "the reason names the span"; else bad "no span in: $(grep reason far.json)"; fi

# ---- validate
expect 0 "validate, text" -- "$FUSECAL" predict --validate cal.json
for s in "leave-one-out over 38 records" "uncalibrated roofline" "unfused latency error" "decisions reproduced" \
    "not predicted: conv_bn_relu"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "validate text has: $s"; else bad "validate text lacks: $s"; fi
done
expect 0 "validate, json" -- "$FUSECAL" predict --validate cal.json --format json -o val.json
schema_ok val.json
check_eq "validation rows and figures" \
    "$(pyq val.json "d['kind'], d['validation']['records'], len(d['validation']['rows']), d['validation']['model']['decisions']['decided'] == d['validation']['roofline']['decisions']['decided']")" \
    "validation 38 38 True"
# a class of two records: the roofline's interval from one other record is unbounded yet
# a number (the committed standard calibration has two nchw conv_bn_relu records per backend)
expect 0 "validate the committed standard calibration, json" -- "$FUSECAL" predict --validate \
    "$SRC/results/cpu-amd-epyc-f26m2-2c/standard.json" --format json -o std.json
schema_ok std.json
check_eq "the standard calibration: p90 fused latency error below 35 %" \
    "$(pyq std.json "d['validation']['model']['abs_rel_error']['fused_ms']['p90'] < 0.35")" "True"
check_eq "the model beats the uncalibrated roofline on fused latency" \
    "$(pyq val.json "d['validation']['model']['abs_rel_error']['fused_ms']['median'] < d['validation']['roofline']['abs_rel_error']['fused_ms']['median']")" "True"

# ---- bad input: one line, exit 2
expect 2 "no calibration" -- "$FUSECAL" predict -p "$INSIDE"
err_says "predict needs a calibration file"
expect 2 "neither --problem nor --validate" -- "$FUSECAL" predict cal.json
err_says "predict needs --problem P, --network or --validate"
expect 2 "both" -- "$FUSECAL" predict cal.json --validate -p "$INSIDE"
err_says "--problem, --network and --validate exclude each other"
expect 2 "a bad problem" -- "$FUSECAL" predict cal.json -p "linear_bias_relu:m=8,k=8"
err_says "bad --problem 'linear_bias_relu:m=8,k=8'"
expect 2 "an unknown pattern" -- "$FUSECAL" predict cal.json -p "nonesuch:m=8"
err_says "bad --problem 'nonesuch:m=8'"
expect 2 "a missing file" -- "$FUSECAL" predict nonesuch.json -p "$INSIDE"
err_says "bad input" "nonesuch.json"
expect 2 "not a calibration" -- "$FUSECAL" predict "$SRC/patterns/linear.json" -p "$INSIDE"
err_says "bad input" "linear.json"
expect 2 "no measured record" -- "$FUSECAL" predict none.json -p "$INSIDE"
err_says "no measured record in none.json"
expect 2 "a bad format" -- "$FUSECAL" predict cal.json -p "$INSIDE" --format xml
err_says "xml"
expect 2 "an unwritable output" -- "$FUSECAL" predict cal.json -p "$INSIDE" -o /nonexistent/dir/p.json
err_says "/nonexistent/dir/p.json"

# ---- bench/predict_history.py: the validation of each committed version of a
# folder's standard.json, newest first, each row what predict --validate says of it
# (the later version: the linear_bias_relu ladders alone)
"$PYTHON" "$TESTS/make_records.py" cal2.json "${recs[@]:0:28}" || bad "make_records.py"
HIST="$WORK/hist"
{ mkdir -p "$HIST/results/m" && git -C "$HIST" init -q && git -C "$HIST" config user.email t@t.invalid &&
    git -C "$HIST" config user.name t && cp cal.json "$HIST/results/m/standard.json" && git -C "$HIST" add -A &&
    git -C "$HIST" commit -qm one && cp cal2.json "$HIST/results/m/standard.json" && git -C "$HIST" commit -qam two; } ||
    bad "a history repository"
expect 0 "predict_history.py" -- "$PYTHON" "$SRC/bench/predict_history.py" --repo "$HIST" --fusecal "$FUSECAL" \
    --json hist.json
if grep -qF "results/m/standard.json: the last 2 versions" "$WORK/out" && grep -qF "pooled over 2 sweeps" "$WORK/out"; then
    ok "history text names the folder and the two sweeps"
else bad "history text: $(head -3 "$WORK/out")"; fi
"$FUSECAL" predict --validate cal.json --format json -o v1.json || bad "validate cal.json"
"$FUSECAL" predict --validate cal2.json --format json -o v2.json || bad "validate cal2.json"
dec() { pyq "$1" "(d['validation']['model']['decisions']['reproduced'], d['validation']['model']['decisions']['decided'])"; }
check_eq "history rows, newest first, as predict --validate says" \
    "$(pyq hist.json "[(s['reproduced'], s['decided']) for s in d['folders'][0]['sweeps']]")" "[$(dec v2.json), $(dec v1.json)]"
check_eq "the two versions differ" "$(dec v1.json | grep -c "$(dec v2.json)")" "0"
# the later version's records were measured alike in the earlier one: every decided
# one found there with its decision; the earliest has no sweep before it
check_eq "the sweep before, on the same problems" \
    "$(pyq hist.json "[(s.get('before_decided'), s.get('before_same')) for s in d['folders'][0]['sweeps']]")" \
    "[($(pyq v2.json "d['validation']['model']['decisions']['decided']"), $(pyq v2.json "d['validation']['model']['decisions']['decided']")), (None, None)]"
check_eq "pooled decisions" "$(pyq hist.json "d['folders'][0]['pooled']['decided']")" \
    "$(($(pyq v1.json "d['validation']['model']['decisions']['decided']") + $(pyq v2.json "d['validation']['model']['decisions']['decided']")))"
expect 0 "predict_history.py --last 1" -- "$PYTHON" "$SRC/bench/predict_history.py" --repo "$HIST" \
    --fusecal "$FUSECAL" --last 1 results/m
if grep -qF "pooled over 1 sweep:" "$WORK/out"; then ok "--last 1: one sweep"; else bad "--last 1: $(tail -2 "$WORK/out")"; fi
expect 1 "predict_history.py --last 0" -- "$PYTHON" "$SRC/bench/predict_history.py" --repo "$HIST" --last 0
err_says "--last takes a positive count"
expect 1 "predict_history.py, not a repository" -- "$PYTHON" "$SRC/bench/predict_history.py" --repo "$WORK/nonesuch" \
    --fusecal "$FUSECAL"
err_says "is not a git repository"
expect 1 "predict_history.py, a folder never committed" -- "$PYTHON" "$SRC/bench/predict_history.py" --repo "$HIST" \
    --fusecal "$FUSECAL" results/other
err_says "no commit changed results/other/standard.json"

# ---- python/fusecal.py reads what the C code reads
if "$PYTHON" "$TESTS/fusecal_py_check.py" "$FUSECAL" "$SRC" cal.json "$MEASURED" "$INSIDE" "$CONV" \
    "linear_bias_relu:m=16,k=256,n=256" "linear_bias_relu:m=700,k=1024,n=1024,dtype=fp32" "$FAR" \
    "$CTL_MEASURED" "$CTL_INSIDE" >py.log 2>&1; then
    ok "python/fusecal.py agrees with fusecal predict ($(tail -1 py.log))"
else
    bad "python/fusecal.py: $(grep -E 'FAIL|Error|error' py.log | head -5)"
fi
finish
