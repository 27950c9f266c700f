#!/usr/bin/env bash
# What is made from the commands' option tables says what --help says: the
# README's option tables, the man page, the bash completion; and `cmake --install`
# puts the binary, the man page, the completion and the schemas in their places.
. "$(dirname "$0")/lib.sh"
: "${GENDOC:?}" "${BUILD:?}" "${CMAKE:?}"
commands=(run list info validate check compare report)

# ---- README.md: every command's option table is the generated one
if "$GENDOC" readme "$SRC/README.md" -o "$WORK/README.md" 2>"$WORK/err"; then
    if diff -u "$SRC/README.md" "$WORK/README.md" >"$WORK/readme.diff"; then ok "README.md option tables match the commands' tables"
    else bad "README.md option tables differ from the commands' tables (update: fusecal-gendoc readme README.md -o README.md):"
        sed 's/^/    /' "$WORK/readme.diff" | head -20; fi
else bad "fusecal-gendoc readme: $(cat "$WORK/err")"; fi
for cmd in "${commands[@]}"; do
    "$GENDOC" markdown "$cmd" >"$WORK/table.md"
    "$FUSECAL" "$cmd" --help >"$WORK/help.txt"
    # every option of the table is in --help, and every option --help lists is in the table
    in_table=$(grep -o '^| `--[a-z-]*' "$WORK/table.md" | sed 's/^| `//' | sort -u)
    in_help=$(grep -oE '^  --[a-z-]+' "$WORK/help.txt" | sed 's/^  //' | sort -u)
    check_eq "$cmd: the markdown table and --help list the same options" "$in_table" "$in_help"
    if cmp -s "$WORK/help.txt" <("$FUSECAL" help "$cmd"); then ok "$cmd: 'fusecal help $cmd' is its --help"
    else bad "$cmd: 'fusecal help $cmd' differs from --help"; fi
done
# a README whose table lacks an option fails the comparison (the check can fail)
sed '/^| `--quiet` |/d' "$SRC/README.md" >"$WORK/README.short.md"
"$GENDOC" readme "$WORK/README.short.md" -o "$WORK/README.regen.md"
if cmp -s "$WORK/README.short.md" "$WORK/README.regen.md"; then bad "a README missing --quiet still matches"
else ok "a README missing an option does not match"; fi
grep -v '^<!-- options: info' "$SRC/README.md" >"$WORK/README.noinfo.md"
expect 1 "a README without a command's table is refused" -- "$GENDOC" readme "$WORK/README.noinfo.md"
err_says "no option table of 'info'"

# ---- cmake --install into a temporary prefix
prefix=$WORK/prefix
if "$CMAKE" --install "$BUILD" --prefix "$prefix" >"$WORK/install.log" 2>&1; then ok "cmake --install"
else bad "cmake --install: $(tail -5 "$WORK/install.log")"; fi
for f in bin/fusecal share/man/man1/fusecal.1 share/bash-completion/completions/fusecal \
    share/fusecal/schemas/calibration.schema.json share/fusecal/schemas/catalogue.schema.json \
    share/fusecal/schemas/thresholds.schema.json share/fusecal/schemas/info.schema.json \
    share/fusecal/schemas/check.schema.json share/fusecal/schemas/compare.schema.json; do
    if [ -s "$prefix/$f" ]; then ok "installed $f"; else bad "not installed: $f"; fi
done
expect 0 "the installed binary runs" -- "$prefix/bin/fusecal" --version

# ---- the man page: renders without warnings, one section per command
man1=$prefix/share/man/man1/fusecal.1
if command -v groff >/dev/null 2>&1; then
    groff -man -Tutf8 -ww -z "$man1" 2>"$WORK/groff.err"
    check_eq "groff renders fusecal.1 without warnings" "$(cat "$WORK/groff.err")" ""
fi
if command -v man >/dev/null 2>&1; then
    MANWIDTH=100 man --warnings -l "$man1" >"$WORK/man.txt" 2>"$WORK/man.err"
    check_eq "man -l renders fusecal.1 without warnings" "$(cat "$WORK/man.err")" ""
    for cmd in "${commands[@]}"; do
        upper=$(echo "$cmd" | tr a-z A-Z)
        if grep -q "^FUSECAL $upper\$" "$WORK/man.txt"; then ok "man: a section for $cmd"; else bad "man: no section FUSECAL $upper"; fi
    done
    if grep -q -- '--max-time-total S' "$WORK/man.txt"; then ok "man: run's options"; else bad "man: no --max-time-total"; fi
fi

# ---- the completion script: valid bash that completes commands, options and values
completion=$prefix/share/bash-completion/completions/fusecal
if bash -n "$completion"; then ok "completion: valid bash"; else bad "completion: not valid bash"; fi
mkdir -p "$WORK/empty"
complete_words() { # words of a command line, the last one being completed (file names from an empty directory)
    (cd "$WORK/empty" && bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fusecal; echo "${COMPREPLY[*]}"' \
        sh "$completion" "$@")
}
check_eq "completion: fusecal run --dev" "$(complete_words fusecal run --dev)" "--device"
check_eq "completion: run --device values" "$(complete_words fusecal run --device '')" "cpu cuda all"
check_eq "completion: the last of a comma list" "$(complete_words fusecal run --pattern linear_bias,conv_bn_r)" \
    "linear_bias,conv_bn_relu"
check_eq "completion: every pattern" "$(complete_words fusecal run --pattern '' | wc -w)" \
    "$(($("$FUSECAL" list patterns --format json | "$PYTHON" -c 'import json,sys; print(len(json.load(sys.stdin)["patterns"]))') + 1))"
check_eq "completion: backends" "$(complete_words fusecal run --backend cpu.)" "cpu.openblas cpu.onednn"
check_eq "completion: dtypes" "$(complete_words fusecal run --dtype fp32,b)" "fp32,bf16"
check_eq "completion: sweeps" "$(complete_words fusecal run --sweep q)" "quick"
check_eq "completion: commands" "$(complete_words fusecal c)" "check compare"
check_eq "completion: list's arguments" "$(complete_words fusecal list d)" "devices"
check_eq "completion: --option=value" "$(complete_words fusecal check --format = j)" "json"
check_eq "completion: no words for a number" "$(complete_words fusecal run --threads '')" ""

finish
