#!/usr/bin/env bash
# What a first run costs: the ceilings a command measures are kept in
# $XDG_CACHE_HOME/fusecal for an hour and used again by later runs on the same
# boot, host and build (src/measure/ceilcache.h); a record says whether its
# ceilings were measured or kept; `info` always measures. `--quick` takes the
# quick sweep's stopping rule; a run that may take long says what its stopping
# rule does.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
ONE=(--shape linear_bias:m=8,k=8,n=8 --backend cpu.openblas "${FAST[@]}" --rounds 2)
CACHE=$XDG_CACHE_HOME/fusecal/ceilings-cpu.json
ceil() { pyq "$1" "d['ceilings']['cpu'].get('$2')"; }

# ---- the first run measures them and keeps them; the second uses them
expect 0 "a first run" -- "$FUSECAL" run "${ONE[@]}" --out first.json
if grep -qF "measuring this machine's ceilings" "$WORK/err"; then ok "a first run measures the ceilings"
else bad "first run: $(cat "$WORK/err")"; fi
check_eq "the first run's ceilings are measured, not cached" "$(ceil first.json cached)" False
if [ -f "$CACHE" ]; then ok "the ceilings are kept in $CACHE"; else bad "no $CACHE"; fi
expect 0 "the kept ceilings are an info document" -- "$FUSECAL" validate "$CACHE"
check_eq "validate names the kind" "$(cat "$WORK/out")" "$CACHE: valid info file"
expect 0 "a second run" -- "$FUSECAL" run "${ONE[@]}" --out second.json
if grep -qF "ceilings as measured" "$WORK/err" && ! grep -qF "measuring this machine's ceilings" "$WORK/err"; then
    ok "a second run uses the kept ceilings and says so"
else bad "second run: $(cat "$WORK/err")"; fi
check_eq "the second run's ceilings are marked cached" "$(ceil second.json cached)" True
check_eq "... with the time they were measured" "$(ceil second.json measured_utc)" "$(ceil first.json measured_utc)"
check_eq "... and the same values" "$(ceil second.json gflops)" "$(ceil first.json gflops)"
schema_valid second.json

# ---- ceilings of another boot, or more than an hour old, are measured again
cp "$CACHE" kept.json
edit() { "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); $1; json.dump(d, open(sys.argv[1], 'w'))" "$CACHE"; }
edit "d['host']['boot_id'] = 'another-boot'"
expect 0 "a run after a reboot" -- "$FUSECAL" run "${ONE[@]}" --out reboot.json
check_eq "ceilings of another boot are measured again" "$(ceil reboot.json cached)" False
cp kept.json "$CACHE"
edit "d['ceilings']['cpu']['measured_utc'] = '2020-01-01T00:00:00Z'"
expect 0 "a run with old ceilings kept" -- "$FUSECAL" run "${ONE[@]}" --out old.json
check_eq "ceilings older than an hour are measured again" "$(ceil old.json cached)" False
cp kept.json "$CACHE"
edit "d['tool']['git_revision'] = 'another-build'"
expect 0 "a run of another build" -- "$FUSECAL" run "${ONE[@]}" --out build.json
check_eq "ceilings of another fusecal build are measured again" "$(ceil build.json cached)" False
echo '{"not": "fusecal"}' >"$CACHE"
expect 0 "a run over a broken cache file" -- "$FUSECAL" run "${ONE[@]}" --out broken.json
check_eq "a cache file that is no info document is measured over" "$(ceil broken.json cached)" False
expect 0 "the cache is written again" -- "$FUSECAL" validate "$CACHE"

# ---- check --run uses them too; info always measures
# (--tolerance 0.99: what is checked here is the ceilings, not the verdict; two
# runs of 2 rounds minutes apart on a loaded test machine may differ by a
# regression's worth, which would be a true verdict and a false failure)
expect 0 "check --run" -- "$FUSECAL" check --baseline first.json --run --out now.json --quiet --tolerance 0.99
check_eq "check --run uses the kept ceilings" "$(ceil now.json cached)" True
expect 0 "info --format json" -- "$FUSECAL" info --format json --device cpu
echo "$(cat "$WORK/out")" >info.json
check_eq "info measures afresh" "$(ceil info.json cached)" False

# ---- --quick: the quick sweep's stopping rule, whatever the sweep; the command line still wins
stop() { pyq "$1" "' '.join(str(d['settings']['stop'][k]) for k in ('min_samples', 'min_time_s', 'max_noise', 'max_time_s'))"; }
quick=$("$PYTHON" -c "import json,sys; s=json.load(open(sys.argv[1]))['sweeps']['quick']['stop']; print(' '.join(str(s[k]) for k in ('min_samples', 'min_time_s', 'max_noise', 'max_time_s')))" "$SRC/patterns/sweeps.json")
TINY=(--shape linear_bias:m=8,k=8,n=8 --backend cpu.openblas --seed 1)
expect 0 "run --quick" -- "$FUSECAL" run "${TINY[@]}" --quick --out quick.json
check_eq "--quick: the quick sweep's stopping rule" "$(stop quick.json)" "$quick"
echo '{"schema_version": 1, "stop": {"min_samples": 3, "min_time_s": 2, "max_noise": 0.1, "max_time_s": 4},
 "entries": [{"problems": ["linear_bias:m=8,k=8,n=8"]}]}' >mine.json
expect 0 "run --quick --sweep FILE" -- "$FUSECAL" run --sweep mine.json --backend cpu.openblas --seed 1 --quick --max-time 0.3 --out quick-mine.json
check_eq "--quick over a sweep of its own: the quick sweep's rule, the command line's --max-time" "$(stop quick-mine.json)" "${quick% *} 0.3"

# ---- a run that may take long says what its stopping rule does; a short one does not
if grep -qF -- "--quick trades precision for time" "$WORK/err"; then bad "a short run's note: $(cat "$WORK/err")"
else ok "a short run: no note on the stopping rule"; fi
expect 0 "a run with long time caps" -- "$FUSECAL" run "${TINY[@]}" --max-time 6 --max-noise 0.5 --min-time 0 --min-samples 2 --rounds 2 --out long.json
if grep -F "rounds or more" "$WORK/err" | grep -qF "at most 6 s of samples per variant" &&
    grep -qF -- "--quick trades precision for time" "$WORK/err"; then ok "a long run says what its stopping rule does"
else bad "long run: $(cat "$WORK/err")"; fi
expect 0 "the same, --quiet" -- "$FUSECAL" run "${TINY[@]}" --max-time 6 --max-noise 0.5 --min-time 0 --min-samples 2 --rounds 2 --out long.json --quiet
check_eq "--quiet: no note" "$(grep -c 'rounds or more' "$WORK/err")" 0

# ---- no cache directory to write: the run goes on, measuring
: >not-a-dir
XDG_CACHE_HOME=$WORK/not-a-dir expect 0 "a run where the cache cannot be written" -- "$FUSECAL" run "${ONE[@]}" --out nocache.json
check_eq "... measures its ceilings" "$(ceil nocache.json cached)" False
finish
