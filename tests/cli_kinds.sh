#!/usr/bin/env bash
# Every document fusecal writes has a kind and a schema (src/core/kind.h): what
# info, check and compare write validates against its kind's schema with both
# validators; `validate` names each kind; report, compare and check take a
# results folder's files as they are (other kinds skipped with one line on
# stderr, info documents shown in the report); a file that is no fusecal
# document stays an error.
. "$(dirname "$0")/lib.sh"

mk() { "$PYTHON" "$TESTS/make_records.py" "$@" || bad "make_records.py $*"; }
py_valid() { # KIND FILE...: python's validator accepts them against schemas/KIND.schema.json
    local kind=$1
    shift
    if "$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/$kind.schema.json" "$@" 2>"$WORK/perr"; then
        ok "python jsonschema: $kind: $*"
    else bad "python jsonschema: $kind: $* $(head -3 "$WORK/perr")"; fi
}
cd "$WORK" || exit 1
LB="linear_bias:m=64,k=64,n=64,dtype=fp32"
LR="linear_bias_relu:m=64,k=64,n=64,dtype=fp32"

# ---- a results folder as 'fusecal info' and 'fusecal run' leave it, with the other kinds beside
mkdir -p res/m
expect 0 "info --format json" -- "$FUSECAL" info --format json --no-measure
cp "$WORK/out" res/m/info.json
mk res/m/quick-1.json "$LB@cpu.openblas:1.2,1.3,1.4" "$LR@cpu.openblas:1.0,1.1,1.2"
mk res/m/quick-2.json "$LB@cpu.openblas:1.25,1.35,1.45" "$LR@cpu.openblas:0.9,1.0,1.1"
cp "$SRC/results/thresholds.example.json" res/m/thresholds.json
expect 0 "compare --format json" -- "$FUSECAL" compare res/m/quick-1.json res/m/quick-2.json --format json
cp "$WORK/out" res/m/compare.json
expect 0 "check --format json" -- "$FUSECAL" check --baseline res/m/quick-1.json res/m/quick-2.json --format json
cp "$WORK/out" res/m/check.json
cp "$SRC/patterns/sweeps.json" res/m/sweeps.json

# ---- each kind: fusecal's validator names it, python's agrees with its schema
expect 0 "validate every kind" -- "$FUSECAL" validate res/m/*.json
for kv in info:info quick-1:calibration thresholds:thresholds compare:compare check:check sweeps:catalogue; do
    f=${kv%%:*}
    k=${kv#*:}
    if grep -qx "res/m/$f.json: valid $k file" "$WORK/out"; then ok "validate: $f.json is a $k document"
    else bad "validate: $f.json not named $k: $(grep "$f.json" "$WORK/out")"; fi
done
py_valid info res/m/info.json
py_valid check res/m/check.json
py_valid compare res/m/compare.json
check_eq "the kinds say their kind" "$(pyq res/m/info.json "d['schema'], d['schema_version']") $(pyq res/m/check.json "d['schema']") $(pyq res/m/compare.json "d['schema']")" \
    "fusecal-info 1 fusecal-check fusecal-compare"
# each schema can fail: a document missing its kind's required member is refused by both validators
pyq res/m/info.json "json.dump({k: v for k, v in d.items() if k != 'host'}, open('nohost.json', 'w'))" >/dev/null
expect 1 "validate: an info document without host" -- "$FUSECAL" validate nohost.json
err_says "nohost.json" "does not match schemas/info.schema.json" "host"
if "$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/info.schema.json" nohost.json 2>/dev/null; then
    bad "python accepts an info document without host"; else ok "python refuses an info document without host"; fi
pyq res/m/check.json "json.dump(dict(d, result='maybe'), open('badcheck.json', 'w'))" >/dev/null
expect 1 "validate: a check summary with an unknown result" -- "$FUSECAL" validate badcheck.json
err_says "badcheck.json" "does not match schemas/check.schema.json" "/result"
pyq res/m/info.json "json.dump(dict(d, schema_version=9), open('info9.json', 'w'))" >/dev/null
expect 1 "validate: a newer info document" -- "$FUSECAL" validate info9.json
err_says "info9.json" "info schema version 9 is newer"
echo '{"name": "not fusecal"}' >other.json
expect 1 "validate: a JSON file of no fusecal kind" -- "$FUSECAL" validate other.json
err_says "other.json" "not a fusecal document"

# ---- report takes the folder as it is
expect 0 "report of a results folder" -- "$FUSECAL" report res/m/*.json -o folder.html
for f in compare check sweeps thresholds; do
    if grep -q "^fusecal: note: skipped res/m/$f.json: " "$WORK/err"; then ok "report skips $f.json with a note"
    else bad "report: no note for $f.json: $(cat "$WORK/err")"; fi
done
check_eq "report: one line per skipped file, one for the page" "$(grep -c '' "$WORK/err")" 5
if grep -q "wrote folder.html (4 records from 2 calibrations, and the hosts of the info documents)" "$WORK/err"; then
    ok "report: the calibrations drawn, the info document used"; else bad "report: $(tail -1 "$WORK/err")"; fi
if grep -q '<h3>res/m/info.json</h3>' folder.html && grep -q 'by fusecal info' folder.html; then
    ok "report: the info document's host block"; else bad "report: no host block for info.json"; fi
# info.json as older fusecal wrote it (no schema member): recognised by its shape, still shown
pyq res/m/info.json "json.dump({k: d[k] for k in ('tool', 'host', 'ceilings')}, open('res/m/info.json', 'w'))" >/dev/null
expect 0 "report: an info document without a schema member" -- "$FUSECAL" report res/m/*.json -o folder2.html
if grep -q '<h3>res/m/info.json</h3>' folder2.html; then ok "report: the older info document shown"; else bad "older info.json not shown"; fi
expect 1 "validate: the older info document lacks its kind" -- "$FUSECAL" validate res/m/info.json
err_says "res/m/info.json" "missing required member 'schema'"
# a newer fusecal's kind is skipped; a file of no fusecal kind is an error, naming it
echo '{"schema": "fusecal-future", "schema_version": 1}' >res/m/net.json
expect 0 "report: a kind this fusecal does not read" -- "$FUSECAL" report res/m/*.json -o folder3.html
if grep -q "skipped res/m/net.json: a 'fusecal-future' document, a kind this fusecal does not read" "$WORK/err"; then
    ok "report: names the unknown kind"; else bad "report: $(cat "$WORK/err")"; fi
cp other.json res/m/other.json
expect 2 "report: a file that is no fusecal document" -- "$FUSECAL" report res/m/*.json -o folder4.html
err_says "res/m/other.json" "not a fusecal document"
rm res/m/other.json res/m/net.json
expect 2 "report: no calibration among the files" -- "$FUSECAL" report res/m/info.json res/m/check.json -o none.html
check_eq "report: a note per skipped file, then the error" "$(tail -1 "$WORK/err")" \
    "fusecal: error: nothing to draw: no calibration document among the 2 files given"

# ---- compare: the two calibrations among the files
expect 0 "compare with the folder's other files" -- "$FUSECAL" compare res/m/*.json --format json
check_eq "compare: A and B are the calibrations" "$(pyq "$WORK/out" "d['a'], d['b'], len(d['rows'])")" \
    "res/m/quick-1.json res/m/quick-2.json 2"
check_eq "compare: a note per skipped file" "$(grep -c '^fusecal: note: skipped' "$WORK/err")" 5
mk res/m/quick-3.json "$LB@cpu.openblas:1.2,1.3,1.4"
expect 2 "compare: three calibrations" -- "$FUSECAL" compare res/m/*.json
check_eq "compare: says how many" "$(tail -1 "$WORK/err")" \
    "fusecal: error: compare needs two calibration documents, A and B; the files given hold 3"
rm res/m/quick-3.json

# ---- check: one current calibration among the files
expect 0 "check: current results beside other documents" -- "$FUSECAL" check --baseline res/m/quick-1.json \
    res/m/info.json res/m/quick-2.json res/m/thresholds.json --format json
check_eq "check: the current file" "$(pyq "$WORK/out" "d['current']['file']")" "res/m/quick-2.json"
if grep -q "skipped res/m/thresholds.json: .*(pass it with --thresholds)" "$WORK/err"; then
    ok "check: a thresholds document among the files points at --thresholds"; else bad "check: $(cat "$WORK/err")"; fi

finish
