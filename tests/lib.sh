# Shared helpers for the CLI tests: FUSECAL, PYTHON, SRC and TESTS come from ctest.
set -u
: "${FUSECAL:?}" "${PYTHON:?}" "${SRC:?}" "${TESTS:?}"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# ceilings kept between commands (src/measure/ceilcache.h): each test its own cache
export XDG_CACHE_HOME=$WORK/cache
# and its own TMPDIR: the runs of tests alongside are not counted as measuring at
# the same time (src/measure/peers.h)
export TMPDIR=$WORK/tmp
mkdir -p "$TMPDIR"
PASS=0
FAIL=0

ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }

# expect CODE DESCRIPTION -- command...: runs it, checks the exit code
expect() {
    local code=$1 what=$2
    shift 3
    "$@" >"$WORK/out" 2>"$WORK/err"
    local rc=$?
    if [ "$rc" -eq "$code" ]; then ok "$what (exit $rc)"; else
        bad "$what: exit $rc, expected $code"; sed 's/^/    /' "$WORK/err" | head -5; fi
}

# the last command's stderr is one line that contains every argument
err_says() {
    local lines
    lines=$(grep -c '' "$WORK/err")
    if [ "$lines" -ne 1 ]; then bad "stderr is $lines lines, expected 1"; sed 's/^/    /' "$WORK/err" | head -5; return; fi
    for s in "$@"; do
        if ! grep -qF -- "$s" "$WORK/err"; then bad "stderr lacks '$s': $(cat "$WORK/err")"; return; fi
    done
    ok "error names: $*"
}

schema_valid() { # FILE...: both validators accept it
    if "$FUSECAL" validate "$@" >/dev/null 2>"$WORK/verr" && "$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/calibration.schema.json" "$@" 2>>"$WORK/verr"; then
        ok "schema-valid: $*"
    else bad "schema-invalid: $* $(cat "$WORK/verr")"; fi
}

# schema_valid_anywhere FILE...: schema_valid where python's jsonschema is installed;
# elsewhere (the GPU machine may lack it) fusecal validate alone, the skip said once
schema_valid_anywhere() {
    if "$PYTHON" -c "import jsonschema" >/dev/null 2>&1; then
        schema_valid "$@"
        return
    fi
    if [ -z "${SAID_NO_JSONSCHEMA:-}" ]; then
        echo "skip: python's jsonschema is not installed for $PYTHON: documents are checked by fusecal validate alone"
        SAID_NO_JSONSCHEMA=1
    fi
    if "$FUSECAL" validate "$@" >/dev/null 2>"$WORK/verr"; then ok "fusecal validate: $*"; else
        bad "schema-invalid: $* $(cat "$WORK/verr")"; fi
}

# jq-like field checks with python: pyq FILE 'python expression over d' → prints result
pyq() { "$PYTHON" -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

# catching PID: waits until process PID has its own SIGINT and SIGTERM handlers
# (/proc's SigCgt). A non-interactive shell starts a background command with SIGINT
# ignored, and a build linked against the CUDA libraries can take over a second to
# load them before main runs, so a signal sent after a fixed sleep could be ignored.
# Between its fork and its exec the background process is still this shell, and
# holds this shell's handlers (INT, TERM and HUP among them): under load a poll saw
# them in 33 of 200 starts, and a SIGHUP sent then killed the process before nohup
# could ignore it. So its program is read first: a process that has left this
# shell's program (exec never goes back) and catches both is the run.
catching() {
    local deadline=$((SECONDS + 300)) cgt exe shell
    shell=$(readlink "/proc/$$/exe")
    while kill -0 "$1" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        exe=$(readlink "/proc/$1/exe" 2>/dev/null)
        if [ -n "$exe" ] && [ "$exe" != "$shell" ]; then
            cgt=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null)
            # SIGINT is bit 1 (0x2), SIGTERM bit 14 (0x4000)
            if [ -n "$cgt" ] && (( (0x$cgt & 0x4002) == 0x4002 )); then return 0; fi
        fi
        sleep 0.02
    done
    return 1
}

check_eq() { # DESCRIPTION ACTUAL EXPECTED
    if [ "$2" = "$3" ]; then ok "$1"; else bad "$1: got '$2', expected '$3'"; fi
}

# have_backend NAME: built and usable in this build (cpu.onednn is optional)
have_backend() { "$FUSECAL" list backends --format json | "$PYTHON" -c \
    "import json,sys; sys.exit(0 if any(b['name']==sys.argv[1] and b['usable'] for b in json.load(sys.stdin)['backends']) else 1)" "$1"; }

finish() {
    echo "$PASS passed, $FAIL failed"
    [ "$FAIL" -eq 0 ]
}

FAST=(--max-time 0.05 --min-time 0.01 --min-samples 5 --seed 1234)
