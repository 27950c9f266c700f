#!/usr/bin/env bash
# Never lose measured work: interrupts, --resume, --append, the total-time guard,
# and injected faults (a failing library call marks its record, later problems run).
. "$(dirname "$0")/lib.sh"

shapes=(--shape m=64,k=64,n=64 --shape m=96,k=64,n=32 --shape m=128,k=32,n=64 --shape m=40,k=40,n=40)
slow=(--max-time 0.4 --min-time 0.3 --pattern linear_bias,linear_bias_relu --backend cpu.openblas --seed 77)
total=$(( ${#shapes[@]} / 2 * 2 ))
out=$WORK/part.json

# SIGINT in the middle of a sweep (rounds in worker processes, one round of every
# problem per pass): the signal comes, through the fault hook, as the third pass
# begins, so every record has two of its three rounds; exit 130, every record
# kept with the rounds it has, stop rule "interrupted", undecided below the
# minimum of rounds, complete=false, and --resume measures them again.
FUSECAL_FAULT=sigint-pass-2 "$FUSECAL" run "${shapes[@]}" "${slow[@]}" --out "$out" --quiet 2>"$WORK/int.err"
rc=$?
check_eq "interrupted run exits 130" "$rc" 130
[ "$rc" = 130 ] || sed 's/^/    /' "$WORK/int.err"
schema_valid "$out"
check_eq "interrupted document is incomplete" "$(pyq "$out" "d['complete']")" False
check_eq "every record kept, closed early with two rounds" \
    "$(pyq "$out" "len(d['records']), sorted({(r['stop_rule'], r['rounds']) for r in d['records']})")" \
    "$total [('interrupted', 2)]"
check_eq "closed early below the minimum: undecided" \
    "$(pyq "$out" "all(r['decision'] == 'inconclusive' for r in d['records'])")" True
check_eq "records kept are whole" "$(pyq "$out" "all(r['status']=='ok' for r in d['records'])")" True

# the same by a real signal from outside, measuring in one process (records close
# one after the other there): sent once the first record is in the file
"$FUSECAL" run "${shapes[@]}" "${slow[@]}" --one-process --out "$WORK/one.json" --quiet 2>"$WORK/int1.err" &
pid=$!
# (waits for the first record however slow the machine is: under sanitizers and a
# parallel ctest it can take well over ten seconds)
deadline=$((SECONDS + 300))
while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    if [ -s "$WORK/one.json" ] && [ "$(pyq "$WORK/one.json" "len(d['records'])" 2>/dev/null)" -ge 1 ] 2>/dev/null; then break; fi
    sleep 0.05
done
kill -INT "$pid"
wait "$pid"
rc=$?
check_eq "interrupted one-process run exits 130" "$rc" 130
[ "$rc" = 130 ] || sed 's/^/    /' "$WORK/int1.err"
schema_valid "$WORK/one.json"
check_eq "interrupted one-process document is incomplete, records whole" \
    "$(pyq "$WORK/one.json" "d['complete'], len(d['records']) >= 1, all(r['status']=='ok' for r in d['records'])")" "False True True"

# --append of other problems keeps the records an interrupt closed early: only a
# run that measures their problem on their backend again replaces them
cp "$out" "$WORK/app.json"
expect 0 "append other problems to an interrupted file" -- "$FUSECAL" run --append "$WORK/app.json" \
    --shape m=8,k=8,n=8 --pattern linear_bias --backend cpu.openblas --max-time 0.4 --min-time 0.3 --quiet
check_eq "interrupted records kept beside the new one" \
    "$(pyq "$WORK/app.json" "len(d['records']), sum(r['stop_rule'] == 'interrupted' for r in d['records']), d['complete']")" \
    "$((total + 1)) $total False"

# a resume that stops early keeps every record the file had: the one it measured
# again replaces its early one in place, the others stay (here the total-time
# guard stops it after a job at most; then a signal in its third pass)
expect 0 "resume stopped by the total-time guard" -- "$FUSECAL" run --resume "$out" --max-time-total 0.001 --quiet
check_eq "no record lost to a resume stopped early" \
    "$(pyq "$out" "len(d['records']), len({(r['problem'], r['backend']) for r in d['records']}), d['complete']")" \
    "$total $total False"
FUSECAL_FAULT=sigint-pass-2 "$FUSECAL" run --resume "$out" --quiet 2>"$WORK/int2.err"
check_eq "interrupted resume exits 130" "$?" 130
check_eq "interrupted resume: each problem once, none lost" \
    "$(pyq "$out" "len(d['records']), len({(r['problem'], r['backend']) for r in d['records']}), d['complete']")" \
    "$total $total False"
schema_valid "$out"

# --resume finishes it: same command, same seed, nothing measured twice
expect 0 "resume" -- "$FUSECAL" run --resume "$out" --quiet
schema_valid "$out"
check_eq "resumed document complete" "$(pyq "$out" "d['complete']")" True
check_eq "every problem once" "$(pyq "$out" "len(d['records']), len({(r['problem'], r['backend']) for r in d['records']})")" "$total $total"
check_eq "history records the resume" "$(pyq "$out" "d['history'][0]['argv'][1:3]")" "['run', '--resume']"
expect 0 "resume of a complete file measures nothing" -- "$FUSECAL" run --resume "$out" --quiet
check_eq "still $total records" "$(pyq "$out" "len(d['records'])")" "$total"
expect 2 "--resume takes no measuring options" -- "$FUSECAL" run --resume "$out" --pattern linear_bias
err_says "give no other measuring options"

# --append adds new problems, skips measured ones, refuses other settings
expect 0 "append" -- "$FUSECAL" run --append "$out" --shape m=64,k=64,n=64 --shape m=8,k=8,n=8 \
    --pattern linear_bias --backend cpu.openblas --max-time 0.4 --min-time 0.3 --quiet
check_eq "one new record" "$(pyq "$out" "len(d['records'])")" "$((total + 1))"
schema_valid "$out"
expect 2 "append with other settings" -- "$FUSECAL" run --append "$out" --shape m=8,k=8,n=9 --pattern linear_bias \
    --backend cpu.openblas --max-time 0.4 --min-time 0.3 --threads 1
err_says "settings differ" "thread count"
expect 2 "append to a broken file" -- "$FUSECAL" run --append "$TESTS/lib.sh" --shape m=8,k=8,n=9
err_says "cannot continue"

# a second signal exits at once; the file is whole or untouched
"$FUSECAL" run "${shapes[@]}" "${slow[@]}" --out "$WORK/twice.json" --quiet 2>/dev/null &
pid=$!
catching "$pid" || bad "the run never caught SIGINT and SIGTERM"
sleep 0.8
kill -INT "$pid"; sleep 0.05; kill -INT "$pid"
wait "$pid"
check_eq "second signal exits 130" "$?" 130
if [ ! -e "$WORK/twice.json" ] || "$FUSECAL" validate "$WORK/twice.json" >/dev/null 2>&1; then ok "file whole or absent"; else bad "file broken after two signals"; fi
if ls -a "$WORK" | grep -q '\.tmp'; then bad "temp file left behind"; else ok "no temp file left"; fi

# signalled SIG FILE: a run writing FILE, sent SIG once it catches its signals and
# has measured a while; returns the run's exit status
signalled() {
    "$FUSECAL" run "${shapes[@]}" "${slow[@]}" --out "$2" --quiet 2>/dev/null &
    local pid=$!
    catching "$pid" || bad "the run never caught SIGINT and SIGTERM"
    sleep 1.2
    kill "-$1" "$pid"
    wait "$pid"
}

# SIGTERM behaves like SIGINT
signalled TERM "$WORK/term.json"
check_eq "SIGTERM exits 130" "$?" 130

# SIGHUP (the terminal closed) too; but a run started under nohup goes on
signalled HUP "$WORK/hup.json"
check_eq "SIGHUP exits 130" "$?" 130
check_eq "SIGHUP: the document saved, incomplete" "$(pyq "$WORK/hup.json" "d['complete']")" False
nohup "$FUSECAL" run --shape m=64,k=64,n=64 --pattern linear_bias --backend cpu.openblas --max-time 0.4 --min-time 0.3 \
    --out "$WORK/nohup.json" --quiet >/dev/null 2>&1 &
pid=$!
catching "$pid" || bad "the run never caught SIGINT and SIGTERM"
kill -HUP "$pid"
wait "$pid"
check_eq "under nohup SIGHUP is ignored: the run ends as usual" "$?" 0
check_eq "under nohup: the document complete" "$(pyq "$WORK/nohup.json" "d['complete']")" True

# the total-time guard ends a sweep cleanly
expect 0 "--max-time-total" -- "$FUSECAL" run "${shapes[@]}" "${slow[@]}" --max-time-total 0.5 --out "$WORK/tt.json" --quiet
check_eq "time-limited document incomplete" "$(pyq "$WORK/tt.json" "d['complete'], len(d['records']) < $total")" "False True"
schema_valid "$WORK/tt.json"

# no worker process for a pass (a fault in its third; too few file descriptors from
# the start): one error line saying why, exit 2, and the records closed by then
# (two rounds each, as an interrupt leaves them) in the file
FUSECAL_FAULT=spawn-pass-2 expect 2 "no worker for a pass" -- "$FUSECAL" run --shape m=8,k=8,n=8 --shape m=8,k=8,n=16 \
    --pattern linear_bias --backend cpu.openblas "${FAST[@]}" --rounds 4 --no-bandwidth-beside --out "$WORK/sp.json" --quiet
err_says "fusecal: error: cannot start a worker process"
check_eq "records closed before the failure are saved" \
    "$(pyq "$WORK/sp.json" "d['complete'], [(r['stop_rule'], r['rounds']) for r in d['records']]")" \
    "False [('interrupted', 2), ('interrupted', 2)]"
schema_valid "$WORK/sp.json"
(ulimit -n 6; "$FUSECAL" run --shape m=8,k=8,n=8 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" \
    --out "$WORK/fd.json" --quiet >"$WORK/out" 2>"$WORK/err")
check_eq "too few file descriptors exits 2" "$?" 2
err_says "fusecal: error:"

# a closed pipe on the progress (run ... 2>&1 | head -c 1): the run goes on and saves
# every record, where SIGPIPE had ended it with none in the file
"$FUSECAL" run --shape m=8,k=8,n=8 --shape m=8,k=8,n=16 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" \
    --out "$WORK/pipe.json" 2>&1 | head -c 1 >/dev/null
check_eq "a closed pipe: the run exits 0" "${PIPESTATUS[0]}" 0
check_eq "a closed pipe: every record saved" "$(pyq "$WORK/pipe.json" "len(d['records']), d['complete']")" "2 True"

# a file size limit (ulimit -f 10: 10 KiB, the document without records fits and
# with one does not): one error line saying so, not death by SIGXFSZ; the file as
# last saved; neither the output's nor the rescue's temporary file left
(ulimit -f 10; "$FUSECAL" run --shape m=8,k=8,n=8 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" \
    --out "$WORK/fs.json" --quiet >"$WORK/out" 2>"$WORK/err")
check_eq "a file past the size limit exits 2" "$?" 2
err_says "cannot write '$WORK/fs.json': File too large (previous contents kept)" "failed too (File too large)"
check_eq "the file as last saved" "$(pyq "$WORK/fs.json" "len(d['records']), d['complete']")" "0 False"
if ls -a "$WORK" "$TMPDIR" | grep -q 'tmp[A-Za-z0-9]\{6\}$'; then bad "a temporary file left"; else ok "no temporary file left"; fi

# a save that fails mid-run (here the output's folder removed once the first record
# is in): one error line naming the rescue file in \$TMPDIR, which holds the record
# just measured with the earlier ones
mkdir "$WORK/gone"
"$FUSECAL" run "${shapes[@]}" "${slow[@]}" --one-process --out "$WORK/gone/g.json" --quiet 2>"$WORK/err" &
pid=$!
deadline=$((SECONDS + 300))
while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    if [ -s "$WORK/gone/g.json" ] && [ "$(pyq "$WORK/gone/g.json" "len(d['records'])" 2>/dev/null)" -ge 1 ] 2>/dev/null; then break; fi
    sleep 0.05
done
rm -rf "$WORK/gone"
wait "$pid"
check_eq "a failed save mid-run exits 2" "$?" 2
err_says "cannot write '$WORK/gone/g.json'" "is saved in '$TMPDIR/fusecal-rescue-$pid.json'"
if [ -s "$TMPDIR/fusecal-rescue-$pid.json" ]; then
    check_eq "the rescue file holds the record the failed save was for" \
        "$(pyq "$TMPDIR/fusecal-rescue-$pid.json" "len(d['records']) >= 2, d['complete']")" "True False"
    schema_valid "$TMPDIR/fusecal-rescue-$pid.json"
else bad "no rescue file $TMPDIR/fusecal-rescue-$pid.json"; fi

# fault injection: the failing call is named, the record failed, later problems ran
if have_backend cpu.onednn; then
    FUSECAL_FAULT=onednn expect 1 "oneDNN calls fail" -- "$FUSECAL" run --shape m=16,k=16,n=16 --pattern linear_bias_relu \
        "${FAST[@]}" --out "$WORK/f1.json" --quiet
    check_eq "oneDNN record failed with the call named, OpenBLAS record ok" \
        "$(pyq "$WORK/f1.json" "sorted((r['backend'], r['status'], 'oneDNN call dnnl_' in r.get('reason','')) for r in d['records'])")" \
        "[('cpu.onednn', 'failed', True), ('cpu.openblas', 'ok', False)]"
    schema_valid "$WORK/f1.json"
else
    echo "skip oneDNN fault injection: cpu.onednn is not built"
fi
FUSECAL_FAULT=openblas expect 1 "an sgemm that OpenBLAS rejects" -- "$FUSECAL" run --shape m=16,k=16,n=16 --pattern linear_bias \
    --backend cpu.openblas "${FAST[@]}" --out "$WORK/f2.json" --quiet
check_eq "caught by verification" "$(pyq "$WORK/f2.json" "d['records'][0]['status'], d['records'][0]['reason'].startswith('verification failed')")" "failed True"
FUSECAL_FAULT=host-alloc expect 0 "host allocation fails: skipped, run goes on" -- "$FUSECAL" run --shape m=16,k=16,n=16 \
    --shape m=8,k=8,n=8 --pattern linear_bias --backend cpu.openblas "${FAST[@]}" --out "$WORK/f3.json" --quiet
check_eq "both problems skipped with the reason" "$(pyq "$WORK/f3.json" "[(r['status'], 'injected' in r['reason']) for r in d['records']]")" "[('skipped', True), ('skipped', True)]"
schema_valid "$WORK/f3.json"

finish
