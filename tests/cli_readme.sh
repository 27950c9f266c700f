#!/usr/bin/env bash
# Every shell command README.md shows (and every line of results/*/commands.txt)
# runs as shown against this build: tests/doc_commands.py, first on small
# fixtures (it passes what passes, fails what fails, skips what needs a GPU or
# the network, and runs commands.txt before the README), then on the real docs;
# and the test hook they run with (FUSECAL_TEST_FAST=1, src/measure/calibrate.h).
. "$(dirname "$0")/lib.sh"
: "${BUILD:?}"
docs() { "$PYTHON" "$TESTS/doc_commands.py" --fusecal "$FUSECAL" --build "$BUILD" "$@"; }

# ---- the test hook: the shortest stopping settings, whatever the command line says, and a note
cd "$WORK" || exit 1
TINY=(--shape linear_bias:m=8,k=8,n=8 --backend cpu.openblas --seed 1)
FUSECAL_TEST_FAST=0 expect 0 "FUSECAL_TEST_FAST=0" -- "$FUSECAL" run "${TINY[@]}" --max-time 0.05 --min-time 0.01 --rounds 3 --out slow.json
check_eq "only FUSECAL_TEST_FAST=1 is the hook" "$(pyq slow.json "d['settings']['stop']['max_time_s'], d['settings']['rounds']")" "0.05 3"
check_eq "... and nothing is said of it" "$(grep -c FUSECAL_TEST_FAST "$WORK/err")" 0
FUSECAL_TEST_FAST=1 expect 0 "run with FUSECAL_TEST_FAST=1" -- "$FUSECAL" run "${TINY[@]}" --max-time 30 --min-time 20 --rounds 6 --out fast.json
check_eq "the hook's stopping settings replace the command line's" \
    "$(pyq fast.json "d['settings']['rounds'], d['settings']['stop']['max_time_s'], d['settings']['stop']['min_time_s']")" "2 0.001 0"
if grep -qF "FUSECAL_TEST_FAST=1: the shortest stopping settings" "$WORK/err"; then ok "run says the hook applies"
else bad "no note of the hook: $(cat "$WORK/err")"; fi
# (--tolerance 0.99: the settings are checked, not the verdict between two timed runs)
FUSECAL_TEST_FAST=1 expect 0 "check --run with FUSECAL_TEST_FAST=1" -- "$FUSECAL" check --baseline slow.json --run --out now.json --tolerance 0.99
check_eq "check --run takes the hook's settings over the baseline's" "$(pyq now.json "d['settings']['rounds'], d['settings']['stop']['max_time_s']")" "2 0.001"

# ---- the driver, on a fixture
mkdir -p "$WORK/src/results/m"
printf '%s\n' '/where/it/was/built/fusecal info --format json --no-measure > results/m/info.json' \
    'python3 bench/slow.py --out results/m/slow  # doc-test: skip minutes, and PyTorch' >"$WORK/src/results/m/commands.txt"
cat >"$WORK/src/README.md" <<'MD'
# fixture

```sh
fusecal run --shape linear_bias:M=8,K=8,N=8 --backend cpu.openblas \
    --out one.json
fusecal validate one.json results/m/info.json
```

<!-- doc-test: skip needs the network -->
```sh
curl -fsS https://example.invalid/
```

<!-- doc-test: exit 2 -->
```console
$ fusecal run --pattern nonesuch
```

```sh
fusecal run --device cuda --pattern linear_bias --quiet
```

```json
{"not": "a command"}
```
MD
expect 0 "the fixture's commands pass" -- docs --src "$WORK/src"
for s in "ok   results/m/commands.txt:1: fusecal info --format json --no-measure > results/m/info.json" "ok   README.md:4: fusecal run --shape linear_bias:M=8,K=8,N=8 --backend cpu.openblas --out one.json" \
    "ok   README.md:6: fusecal validate one.json results/m/info.json" "skip README.md:11: curl -fsS https://example.invalid/  (needs the network: exit 77)" \
    "ok   README.md:16: fusecal run --pattern nonesuch  (exit 2" \
    "skip results/m/commands.txt:2: python3 bench/slow.py --out results/m/slow  (minutes, and PyTorch: exit 77)"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "driver: $s"; else bad "driver lacks: $s"; sed 's/^/    /' "$WORK/out"; fi
done
if "$FUSECAL" list devices --format json | "$PYTHON" -c 'import json,sys; sys.exit(0 if any(d["name"] == "cuda" and d["usable"] for d in json.load(sys.stdin)["devices"]) else 1)'; then
    ok "a GPU here: the cuda command ran"
elif grep -qF "skip README.md:20: fusecal run --device cuda --pattern linear_bias --quiet  (needs cuda: " "$WORK/out"; then
    ok "driver: skips a command that needs a GPU"
else bad "driver: the cuda command was not skipped"; fi
check_eq "driver: no line of the json block" "$(grep -cF '"not": "a command"' "$WORK/out")" 0
# a failing example fails the test, naming it and showing its stderr
printf '```sh\nfusecal validate missing.json\n```\n' >"$WORK/src/README.md"
expect 1 "a README example that fails" -- docs --src "$WORK/src"
if grep -q "^FAIL README.md:2: fusecal validate missing.json: exit 2, expected 0" "$WORK/out" && grep -q "cannot open" "$WORK/out"; then
    ok "the failure names the command and shows its stderr"; else bad "failure report: $(cat "$WORK/out")"; fi
printf '<!-- doc-test: skip for now -->\n```sh\nfusecal list\n```\n' >"$WORK/src/README.md"
rm "$WORK/src/results/m/commands.txt"
expect 77 "nothing to run: skipped" -- docs --src "$WORK/src"

# ---- the real README.md and results/*/commands.txt
docs --src "$SRC" >"$WORK/readme.out" 2>&1
rc=$?
sed 's/^/    /' "$WORK/readme.out"
if [ "$rc" -eq 0 ]; then ok "README.md and results/*/commands.txt: every command runs as shown"
else bad "README.md and results/*/commands.txt: exit $rc"; fi
finish
