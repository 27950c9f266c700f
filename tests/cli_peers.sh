#!/usr/bin/env bash
# Two fusecal runs measuring at once: the second warns, its records say they were
# contended, a second run (or check --run) given the first's output is refused, the first's file is
# removed when it ends, and a file left by a run that died is neither counted nor
# kept. (lib.sh gives every test its own TMPDIR,
# so the runs of tests running alongside are not counted here.)
. "$(dirname "$0")/lib.sh"

runs=$TMPDIR/fusecal-runs
one=(--shape linear_bias:m=64,k=64,n=64 --backend cpu.openblas --max-time 0.2 --min-time 0.1)

# alone: nothing contended, no warning, and its file gone when it ends
expect 0 "a run alone" -- "$FUSECAL" run "${one[@]}" --out "$WORK/alone.json"
schema_valid "$WORK/alone.json"
check_eq "alone: not contended, no other run counted" \
    "$(pyq "$WORK/alone.json" "[(r['environment']['contended'], r['environment']['before']['fusecal_runs'], r['environment']['after']['fusecal_runs']) for r in d['records']]")" \
    "[(False, 0, 0)]"
check_eq "alone: no warning" "$(grep -c 'other fusecal run' "$WORK/err")" 0
check_eq "alone: its file removed at the end" "$(ls "$runs" | wc -l)" 0

# a long run in the background (ended by SIGINT below, long before its 300 s);
# once its file is there, a short one beside it
"$FUSECAL" run --shape linear_bias:m=256,k=256,n=256 --backend cpu.openblas --max-time 300 --min-time 300 \
    --one-process --out "$WORK/long.json" --quiet 2>"$WORK/long.err" &
long=$!
trap 'kill "$long" 2>/dev/null; rm -rf "$WORK"' EXIT # not left running if a check below stops the script
deadline=$((SECONDS + 120))
while [ ! -e "$runs/$long" ] && kill -0 "$long" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
check_eq "the long run left its file, its pid and start time in it" \
    "$(cut -d' ' -f1 "$runs/$long" 2>/dev/null)" "$long"
expect 0 "a run beside it" -- "$FUSECAL" run "${one[@]}" --out "$WORK/beside.json"
schema_valid "$WORK/beside.json"
check_eq "beside: contended, the other run counted before and after" \
    "$(pyq "$WORK/beside.json" "[(r['environment']['contended'], r['environment']['before']['fusecal_runs'], r['environment']['after']['fusecal_runs']) for r in d['records']]")" \
    "[(True, 1, 1)]"
if grep -q "1 other fusecal run is measuring on this machine (pid $long)" "$WORK/err"; then ok "beside: warned, naming the other run"
else bad "beside: no warning naming pid $long: $(cat "$WORK/err")"; fi
if grep -q "another fusecal run was measuring on this machine" "$WORK/err"; then ok "beside: the record's warning"
else bad "beside: no record warning: $(cat "$WORK/err")"; fi
# a run given the long run's output (here by other paths to it) is refused before it
# measures or saves: one error line naming that run, and the long run's file untouched
before=$(cat "$WORK/long.json" 2>/dev/null | md5sum)
mkdir "$WORK/sub"
expect 2 "a run writing another run's output" -- "$FUSECAL" run "${one[@]}" --out "$WORK/sub/../long.json"
err_says "is being written by another fusecal run (pid $long)"
ln -s long.json "$WORK/link.json"
expect 2 "a run writing another run's output through a link" -- "$FUSECAL" run "${one[@]}" --out "$WORK/link.json"
err_says "is being written by another fusecal run (pid $long)"
expect 2 "a check --run writing another run's output" -- \
    "$FUSECAL" check --baseline "$WORK/alone.json" --run --out "$WORK/long.json" --format json
err_says "is being written by another fusecal run (pid $long)"
check_eq "the other run's output untouched" "$(cat "$WORK/long.json" 2>/dev/null | md5sum)" "$before"
check_eq "the refused runs' files removed" "$(ls "$runs" | wc -l)" 1
kill -INT "$long"
wait "$long"
check_eq "the interrupted long run removed its file" "$([ -e "$runs/$long" ] && echo kept || echo removed)" removed

# and a run given the output of a check --run that is measuring (its baseline's
# settings: 300 s a variant) is refused alike
python3 - "$WORK/alone.json" "$WORK/slowbase.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["settings"]["stop"].update(min_time_s=300, max_time_s=300)
json.dump(d, open(sys.argv[2], "w"))
PY
"$FUSECAL" check --baseline "$WORK/slowbase.json" --run --out "$WORK/checked.json" --quiet >/dev/null 2>&1 &
chk=$!
trap 'kill "$chk" 2>/dev/null; rm -rf "$WORK"' EXIT
deadline=$((SECONDS + 120))
while [ ! -e "$runs/$chk" ] && kill -0 "$chk" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.05; done
expect 2 "a run writing a live check --run's output" -- "$FUSECAL" run "${one[@]}" --out "$WORK/checked.json"
err_says "is being written by another fusecal run (pid $chk)"
kill -INT "$chk"
wait "$chk"
check_eq "the interrupted check ended as interrupted" "$?" 130

# a file left by a run that died (a pid no process has) and one whose pid was
# reused (this shell's pid, another start time): neither counted, both removed
echo "999999999 12345" >"$runs/999999999"
echo "$$ 1" >"$runs/$$"
expect 0 "a run with stale files about" -- "$FUSECAL" run "${one[@]}" --out "$WORK/stale.json"
check_eq "stale files not counted" "$(pyq "$WORK/stale.json" "d['records'][0]['environment']['contended']")" False
check_eq "stale files removed" "$(ls "$runs" | wc -l)" 0

# the report says so for a contended record
expect 0 "report of the contended run" -- "$FUSECAL" report "$WORK/beside.json" -o "$WORK/beside.html"
if grep -q "another fusecal run measured on the machine at the same time" "$WORK/beside.html"; then
    ok "the report notes the contended record"
else bad "the report does not note the contended record"; fi

# check notes records measured beside another run, in either document
"$FUSECAL" check --baseline "$WORK/alone.json" "$WORK/beside.json" >"$WORK/check1.md" 2>/dev/null
if grep -q "1 current record was measured beside another fusecal run" "$WORK/check1.md"; then
    ok "check notes the contended current record"
else bad "check does not note the contended current record: $(grep -i note "$WORK/check1.md")"; fi
"$FUSECAL" check --baseline "$WORK/beside.json" "$WORK/stale.json" >"$WORK/check2.md" 2>/dev/null
check_eq "check notes the contended baseline record, not the current one" \
    "$(grep -c "1 baseline record was measured beside" "$WORK/check2.md") $(grep -c "current record.* beside" "$WORK/check2.md")" "1 0"

finish
