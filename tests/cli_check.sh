#!/usr/bin/env bash
# fusecal check end to end: synthetic baselines and current results with known
# speedup intervals drive every verdict and exit code; the markdown, JUnit XML
# and JSON outputs; thresholds files; bad input; --run, --confirm and progress.
. "$(dirname "$0")/lib.sh"

mk() { "$PYTHON" "$TESTS/make_records.py" "$@" || bad "make_records.py $*"; }
LB="linear_bias:m=8,k=8,n=8,dtype=fp32"
LR="linear_bias_relu:m=64,k=64,n=64,dtype=fp32"
CV="conv_bn_relu:n=1,c=8,h=8,w=8,k=8,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"
cd "$WORK" || exit 1

mk base.json "$LB@cpu.openblas:1.20,1.30,1.40" "$LR@cpu.openblas:1.50,1.60,1.70" "$CV@cpu.onednn:1.10,1.20,1.30"
schema_valid base.json
chk() { expect "$1" "$2" -- "$FUSECAL" check --baseline base.json "${@:3}"; }
verdict_of() { pyq "$1" "[r['verdict'] for r in d['records_checked'] if r['problem'].startswith('$2')][0]"; }

# ---- every verdict, with its exit code
mk pass.json "$LB@cpu.openblas:1.18,1.28,1.38" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 0 "pass" pass.json
if grep -q '^## fusecal check: PASS' "$WORK/out" && grep -q '| pass | linear_bias |' "$WORK/out"; then ok "markdown says PASS"; else bad "markdown: $(head -3 "$WORK/out")"; fi

mk improved.json "$LB@cpu.openblas:1.60,1.70,1.80" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 0 "improved passes" improved.json --format json
check_eq "improved verdict" "$(verdict_of out linear_bias:)" improved

mk regressed.json "$LB@cpu.openblas:0.90,1.00,1.10" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 1 "regressed fails" regressed.json --junit junit.xml --markdown summary.md --format json
check_eq "regressed verdict" "$(verdict_of out linear_bias:)" regressed
check_eq "json result" "$(pyq out "d['result'], d['exit_code'], d['counts']['regressed'], d['counts']['pass']")" "fail 1 1 2"
if grep -q '| \*\*regressed\*\* | linear_bias | cpu.openblas |' summary.md; then ok "markdown file marks the regression"; else bad "summary.md: $(cat summary.md)"; fi
check_eq "JUnit is well-formed XML, one testcase per record, the failure typed" "$("$PYTHON" - junit.xml <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall('.//testcase')
fails = [c.find('failure').get('type') for c in cases if c.find('failure') is not None]
print(root.tag, len(cases), root.get('failures'), fails)
PY
)" "testsuites 3 1 ['regressed']"
chk 0 "a tolerance that covers the drop" regressed.json --tolerance 0.5

mk within.json "$LB@cpu.openblas:1.10,1.16,1.19" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 0 "below the baseline but within the tolerance passes" within.json --format json
check_eq "within tolerance: pass" "$(verdict_of out linear_bias:)" pass

mk inconclusive.json "$LB@cpu.openblas:0.95,1.05,1.30" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 0 "inconclusive passes" inconclusive.json --junit junit2.xml --format json
check_eq "inconclusive verdict" "$(verdict_of out linear_bias:)" inconclusive
check_eq "JUnit shows inconclusive as skipped" "$("$PYTHON" -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print(r.get('skipped'), r.get('failures'), len(r.findall('.//skipped')))" junit2.xml)" "1 0 1"
chk 1 "inconclusive fails with --strict" inconclusive.json --strict --junit junit3.xml
check_eq "strict JUnit: a failure" "$("$PYTHON" -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print(r.get('failures'), [f.get('type') for f in r.iter('failure')])" junit3.xml)" "1 ['inconclusive']"

mk failed.json "$LB@cpu.openblas:1,1,1:failed" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 1 "failed verification fails" failed.json --format json
check_eq "failed-verification verdict" "$(verdict_of out linear_bias:)" failed-verification

mk missing.json "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 1 "a missing record fails" missing.json --format json
check_eq "missing verdict" "$(pyq out "[r['verdict'] for r in d['records_checked']]")" "['missing', 'pass', 'pass']"
mk skipped.json "$LB@cpu.openblas:1,1,1:skipped" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 1 "a record the baseline measured and the library declines now counts as missing" skipped.json --format json
check_eq "skipped now: missing" "$(verdict_of out linear_bias:)" missing
check_eq "skipped now: why" "$(pyq out "[r['why'] for r in d['records_checked'] if r['verdict'] == 'missing'][0]")" \
    "skipped now, ok in the baseline: needs 80.00 GiB of cpu memory, 20.00 GiB available"
# declined in both (or with no baseline): skipped, which passes, its reason the note
expect 0 "a record skipped in the baseline and now passes" -- \
    "$FUSECAL" check --baseline skipped.json skipped.json --format json --junit junit_skip.xml
check_eq "skipped in both: verdict, count, result" \
    "$(pyq out "[r['verdict'] for r in d['records_checked'] if r['problem'].startswith('linear_bias:')][0], d['counts']['skipped'], d['failing'], d['result']")" \
    "skipped 1 0 pass"
check_eq "skipped: the reason is its note" "$(pyq out "[r['why'] for r in d['records_checked'] if r['verdict'] == 'skipped'][0]")" \
    "skipped: needs 80.00 GiB of cpu memory, 20.00 GiB available"
if grep -q "check passed: .*1 skipped" "$WORK/err"; then ok "the summary line counts it"; else bad "summary: $(cat "$WORK/err")"; fi
if "$PYTHON" -c "import jsonschema" >/dev/null 2>&1; then
    if "$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/check.schema.json" out 2>"$WORK/verr"; then ok "a check document with skipped is schema-valid"
    else bad "check document: $(cat "$WORK/verr")"; fi
fi
check_eq "JUnit: skipped, not failed" "$("$PYTHON" -c "import sys,xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); print(r.get('skipped'), r.get('failures'), [c.find('skipped').get('message')[:8] for c in r.iter('testcase') if c.find('skipped') is not None])" junit_skip.xml)" "1 0 ['skipped:']"
expect 0 "a skipped record with thresholds alone passes" -- "$FUSECAL" check --thresholds "$SRC/results/thresholds.example.json" skipped.json --format json --strict
check_eq "thresholds alone: skipped" "$(verdict_of out linear_bias:)" skipped

mk disjoint.json "linear_bias_gelu:m=8,k=8,n=8,dtype=fp32@cpu.openblas:1.2,1.3,1.4"
chk 1 "empty intersection" disjoint.json
err_says "no current record matches the baseline 'base.json'" "3 missing" "$LB on cpu.openblas" "$CV on cpu.onednn"

# ---- thresholds
cat >th.json <<'JSON'
{"schema": "fusecal-thresholds", "schema_version": 1,
 "defaults": {"min_speedup": 1.0},
 "rules": [{"pattern": "linear_bias_relu", "min_speedup": 1.8},
           {"pattern": "conv_*", "layout": "nhwc", "min_speedup": 1.25}]}
JSON
expect 0 "validate recognises a thresholds file" -- "$FUSECAL" validate th.json "$SRC/results/thresholds.example.json"
if grep -q 'th.json: valid thresholds file' "$WORK/out"; then ok "validate names the kind"; else bad "validate: $(cat "$WORK/out")"; fi
"$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/thresholds.schema.json" th.json "$SRC/results/thresholds.example.json" \
    && ok "python jsonschema accepts the thresholds files" || bad "python jsonschema rejects a thresholds file"
chk 1 "below the minimum speedup fails" pass.json --thresholds th.json --format json
check_eq "below-threshold verdict" "$(verdict_of out linear_bias_relu:)" below-threshold
check_eq "straddling the minimum is inconclusive" "$(verdict_of out conv_bn_relu:)" inconclusive
check_eq "limits named" "$(pyq out "[(r['min_speedup'], r['min_speedup_from']) for r in d['records_checked'] if r['pattern']=='linear_bias'][0]")" "(1, 'defaults')"
expect 1 "thresholds alone, no baseline" -- "$FUSECAL" check --thresholds th.json pass.json --quiet
expect 0 "thresholds alone, all above" -- "$FUSECAL" check --thresholds "$SRC/results/thresholds.example.json" pass.json --quiet

# ---- another device or library version: said in the summary
mk moved.json --cpu-model "Other CPU 1" --onednn 3.1.0 --hostname other \
    "$LB@cpu.openblas:1.18,1.28,1.38" "$LR@cpu.openblas:1.55,1.62,1.69" "$CV@cpu.onednn:1.12,1.22,1.32"
chk 0 "another machine" moved.json
for s in "different device: cpu model 'Test CPU 9000' (baseline) vs 'Other CPU 1' (current)" \
    "different library version: onednn '2.6.3' (baseline) vs '3.1.0' (current)" "different host"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "summary: $s"; else bad "summary lacks: $s"; fi
done

# ---- bad input: one line naming the file and the problem, exit 2
printf '{"schema": "fusecal-calibration", "schema_version": 2, "records": [' >trunc.json
chk 2 "baseline not JSON" pass.json --baseline trunc.json; err_says "bad baseline" "trunc.json" "truncated"
echo '{"schema": "fusecal-calibration", "schema_version": 2, "records": []}' >noschema.json
chk 2 "baseline fails its schema" pass.json --baseline noschema.json; err_says "noschema.json" "does not match" "calibration.schema.json"
"$PYTHON" -c 'import json; d = json.load(open("base.json")); d["settings"]["rounds"] = 4.4e89; json.dump(d, open("huge.json", "w"))'
chk 2 "baseline with a number out of range" pass.json --baseline huge.json; err_says "huge.json" "/settings/rounds" "maximum"
mk v3.json --schema-version 3 "$LB@cpu.openblas:1.2,1.3,1.4"
chk 2 "baseline of a newer schema version" pass.json --baseline v3.json; err_says "v3.json" "schema version 3 is newer"
chk 2 "missing baseline file" pass.json --baseline nope.json; err_says "cannot open 'nope.json'"
mk upside.json "$LB@cpu.openblas:1.20,1.30,1.40" "$LR@cpu.openblas:1.69,1.62,1.55"
chk 2 "an interval upside down" upside.json; err_says "upside.json" "record 1 ($LR on cpu.openblas)" "speedup.ci95 has its low end above its high end"
chk 2 "current results not JSON" trunc.json; err_says "bad current results" "trunc.json"
echo '{"schema": "fusecal-thresholds", "schema_version": 1, "rules": [' >tt.json
chk 2 "thresholds not JSON" pass.json --thresholds tt.json; err_says "bad thresholds file" "tt.json" "truncated"
echo '{"schema": "fusecal-thresholds", "schema_version": 1, "rules": [{"pattern": "linear_bias"}]}' >ts.json
chk 2 "thresholds fail their schema" pass.json --thresholds ts.json; err_says "ts.json" "does not match" "thresholds.schema.json"
echo '{"schema": "fusecal-thresholds", "schema_version": 3}' >tv.json
chk 2 "thresholds of a newer schema version" pass.json --thresholds tv.json; err_says "tv.json" "schema version 3 is newer"
echo '{"schema": "fusecal-thresholds", "schema_version": 1, "rules": [{"pattern": "lnear_*", "min_speedup": 1}]}' >tp.json
chk 2 "thresholds naming no pattern" pass.json --thresholds tp.json; err_says "tp.json" "pattern 'lnear_*' matches no pattern"
chk 2 "a calibration file as thresholds" pass.json --thresholds base.json; err_says "base.json" "not a fusecal thresholds file"
expect 1 "validate rejects a bad thresholds file" -- "$FUSECAL" validate ts.json; err_says "ts.json" "does not match"

# ---- usage errors
expect 2 "no baseline or thresholds" -- "$FUSECAL" check pass.json; err_says "--baseline" "--thresholds"
chk 2 "no current results" ; err_says "a file, or --run"
chk 2 "a file and --run" pass.json --run; err_says "not both"
expect 2 "--run without a baseline" -- "$FUSECAL" check --thresholds th.json --run; err_says "--run" "--baseline"
chk 2 "--confirm without --run" pass.json --confirm 2; err_says "--confirm" "needs --run"
chk 2 "bad --confirm" --run --confirm 0; err_says "bad value for --confirm: '0'"
chk 2 "bad --tolerance" pass.json --tolerance 1.5; err_says "bad value for --tolerance: '1.5'"
chk 2 "unknown format" pass.json --format xml; err_says "unknown format 'xml'"
chk 2 "two current calibrations" pass.json pass.json; err_says "check takes one current calibration document" "hold 2"
chk 2 "unwritable JUnit file" pass.json --junit /nonexistent-dir/j.xml; err_says "cannot write '/nonexistent-dir/j.xml'"
chk 2 "unknown option" pass.json --frob; err_says "unknown option '--frob'"
expect 0 "check --help" -- "$FUSECAL" check --help
expect 0 "help check" -- "$FUSECAL" help check

# ---- --run: the baseline's problems measured now, with its settings
# (the CIs are wide enough that no real machine regresses against them; a
# backend no build has is missing, and says why)
mk runbase.json "$LB@cpu.openblas:0.01,1.0,100" "$LR@cpu.openblas:0.01,1.0,100"
chk 0 "--run re-measures the baseline" --baseline runbase.json --run --out measured.json --format json
schema_valid measured.json
check_eq "measured the baseline's problems and settings" \
    "$(pyq measured.json "sorted(r['problem'] for r in d['records']), d['settings']['stop']['max_time_s'], d['settings']['rounds']")" \
    "['$LB', '$LR'] 0.05 3"
check_eq "json: measured now" "$(pyq out "d['current']['measured_now'], d['counts']['pass']")" "True 2"
if grep -q '^\[1/2\] linear_bias cpu.openblas m=8,k=8,n=8: .* fuse=.*; check: pass$' "$WORK/err" && grep -q '^\[2/2\]' "$WORK/err"; then
    ok "progress: plain lines when stderr is not a terminal"; else bad "progress lines: $(cat "$WORK/err")"; fi
if command -v script >/dev/null 2>&1; then # a terminal: one live line, redrawn in place
    TERM=xterm script -qec "'$FUSECAL' check --baseline runbase.json --run --out tty.json" /dev/null >tty.log 2>&1
    check_eq "on a terminal: exit 0" "$?" 0
    if grep -qE $'\r\033\\[K(pass [0-9]+/[0-9]+ )?\\[2/2\\] linear_bias_relu cpu.openblas' tty.log; then ok "on a terminal: a live progress line"
    else bad "no live line: $(od -c tty.log | head -5)"; fi
    check_eq "on a terminal: records saved" "$(pyq tty.json "len(d['records'])")" 2
fi
"$FUSECAL" check --baseline runbase.json --run --out piped.json 2>&1 | head -c 10 >/dev/null
check_eq "a display closed early (pipe) costs no record and no exit code" "${PIPESTATUS[0]} $(pyq piped.json "len(d['records'])")" "0 2"
expect 2 "run --resume of a check --run document" -- "$FUSECAL" run --resume measured.json --dry-run
err_says "cannot resume 'measured.json': it was written by 'fusecal check', not 'fusecal run'"
chk 0 "--run --quiet" --baseline runbase.json --run --quiet
check_eq "quiet: nothing on stdout or stderr" "$(cat "$WORK/out" "$WORK/err" | wc -c)" 0
# no worker process for the third pass: one error line saying why, the records
# closed by then in the file
FUSECAL_FAULT=spawn-pass-2 chk 2 "--run with no worker for a pass" --baseline runbase.json --run --out sp.json --quiet
err_says "fusecal: error: cannot start a worker process"
check_eq "--run: records closed before the failure saved" "$(pyq sp.json "len(d['records']), d['complete']")" "2 False"

# a baseline backend this build lacks (or, where all are built, one this machine cannot run) is missing
"$FUSECAL" list backends --format json >backends.json
gone=$(pyq backends.json "next((b['name'] for b in d['backends'] if not b['built']), '')")
want="not measured here: backend '$gone' is not in this build"
if [ -z "$gone" ]; then
    gone=$(pyq backends.json "next((b['name'] for b in d['backends'] if not b['usable']), '')")
    want="not measured here: "
fi
if [ -n "$gone" ]; then
    mk runmiss.json "$LB@cpu.openblas:0.01,1.0,100" "$LB@$gone:0.01,1.0,100"
    chk 1 "--run: a backend not runnable here ($gone) is missing" --baseline runmiss.json --run --format json
    check_eq "missing, and why" \
        "$(pyq out "[(r['verdict'], r['why'].startswith(\"$want\")) for r in d['records_checked'] if r['backend']=='$gone'][0]")" \
        "('missing', True)"
else
    ok "every backend is built and usable here: none to be missing"
fi

mk runfast.json "$LB@cpu.openblas:1e6,1e6,1e6"
chk 1 "--confirm re-measures a regression before failing" --baseline runfast.json --run --confirm 2 --format json
check_eq "confirmed twice" "$(pyq out "[(r['verdict'], r['first_verdict'], len(r['confirmations']), r['confirmed']) for r in d['records_checked']][0]")" \
    "('regressed', 'regressed', 2, 2)"
if grep -q 're-measuring 1 failing record (2 of 2)' "$WORK/err"; then ok "confirmation progress"; else bad "no confirmation progress: $(cat "$WORK/err")"; fi

# an interrupted --run (rounds in worker processes, one round of every problem a
# pass; a record is kept once it has two rounds). A real SIGINT to fusecal alone,
# sent as the second pass begins: that pass stops, no record has two rounds, so
# none is kept and every baseline record is missing; exit 130.
mk slowbase.json --min-time 1 --max-time 2 "$LB@cpu.openblas:0.01,1.0,100" "$LR@cpu.openblas:0.01,1.0,100" \
    "linear_bias_gelu:m=8,k=8,n=8,dtype=fp32@cpu.openblas:0.01,1.0,100"
"$FUSECAL" check --baseline slowbase.json --run --out part.json --format json >"$WORK/out" 2>"$WORK/err" &
pid=$!
deadline=$((SECONDS + 300)) # however slow the machine (sanitizers, a parallel ctest)
while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ] && ! grep -q '^pass 2:' "$WORK/err"; do sleep 0.05; done
kill -INT "$pid"
wait "$pid"
check_eq "interrupted --run exits 130" "$?" 130
check_eq "the summary says so, every record missing" \
    "$(pyq "$WORK/out" "d['interrupted'], d['result'], d['counts']['missing']")" "True interrupted 3"
schema_valid part.json
check_eq "the saved document is marked incomplete, no record with one round" \
    "$(pyq part.json "d['complete'], len(d['records'])")" "False 0"
# the signal at a known point, through the fault hook: as the third pass begins,
# every record has two rounds; each is kept (stop rule "interrupted") and judged
FUSECAL_FAULT=sigint-pass-2 "$FUSECAL" check --baseline slowbase.json --run --out part2.json --format json \
    >"$WORK/out" 2>"$WORK/err"
check_eq "interrupted in the third pass exits 130" "$?" 130
check_eq "the summary says so, every record judged" \
    "$(pyq "$WORK/out" "d['interrupted'], d['result'], d['counts']['missing'], len(d['records_checked'])")" \
    "True interrupted 0 3"
schema_valid part2.json
check_eq "the records kept with their two rounds, the document incomplete" \
    "$(pyq part2.json "d['complete'], sorted({(r['stop_rule'], r['rounds']) for r in d['records']}), len(d['records'])")" \
    "False [('interrupted', 2)] 3"

# ---- a record with a control: judged on its fusion split (control/fused), in the
# baseline as in the current results; the whole speedup (1.6x) did not move
mk ctlbase.json "$LB@cpu.openblas:1.50,1.60,1.70:ok:fusion=1.30"
mk ctlcur.json "$LB@cpu.openblas:1.50,1.60,1.70:ok:fusion=1.00"
expect 1 "a fusion split that fell, the whole speedup unchanged: regressed" -- \
    "$FUSECAL" check --baseline ctlbase.json ctlcur.json --format json
check_eq "regressed on the fusion split, which the output gives" \
    "$(pyq "$WORK/out" "[(r['verdict'], r['baseline']['speedup'], r['current']['speedup']) for r in d['records_checked']]")" \
    "[('regressed', 1.3, 1)]"
expect 0 "the fusion split unchanged: pass" -- "$FUSECAL" check --baseline ctlbase.json ctlbase.json
if grep -qF "(fusion)" "$WORK/out"; then ok "the markdown names the fusion split"; else bad "markdown: $(head -5 "$WORK/out")"; fi

finish
