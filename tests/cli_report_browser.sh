#!/usr/bin/env bash
# Renders a report in headless Chromium (Debian's chromium; scripts/deps.sh
# --tests installs it) at a desktop and a phone width and to PDF, and checks the
# screenshots are not blank. Exit 77 (skipped) where no chromium is installed.
. "$(dirname "$0")/lib.sh"

browser=""
for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b"); break; fi
done
if [ -z "$browser" ]; then
    echo "skipped: no chromium installed (apt-get install chromium)"
    exit 77
fi
cd "$WORK" || exit 1

"$PYTHON" "$TESTS/make_records.py" sweep.json --preset sweep || bad "make_records.py"
expect 0 "report" -- "$FUSECAL" report sweep.json -o report.html

# headless, offline: nothing may be fetched (the page needs nothing)
render() { # OUTPUT-FLAG WIDTH,HEIGHT
    timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
        --user-data-dir="$(mktemp -d "$WORK/profile.XXXXXX")" "$1" --window-size="$2" "file://$WORK/report.html" \
        >"$WORK/browser.log" 2>&1
}
render --screenshot="$WORK/wide.png" 1200,2000
if [ -s wide.png ]; then ok "desktop screenshot written"; else bad "no screenshot: $(tail -3 "$WORK/browser.log")"; fi
expect 0 "desktop screenshot is not blank" -- "$PYTHON" "$TESTS/png_check.py" wide.png --min-colours 32 --min-ink 0.03
sed 's/^/    /' "$WORK/out"

render --screenshot="$WORK/narrow.png" 390,1600
expect 0 "narrow-window screenshot is not blank" -- "$PYTHON" "$TESTS/png_check.py" narrow.png --min-colours 32 --min-ink 0.03
sed 's/^/    /' "$WORK/out"
check_eq "narrow screenshot is the narrow window" "$(cut -d, -f1 "$WORK/out")" "390x1600"

render --print-to-pdf="$WORK/report.pdf" 1200,2000
if [ "$(head -c 5 report.pdf 2>/dev/null)" = "%PDF-" ] && [ "$(wc -c <report.pdf)" -gt 20000 ]; then
    ok "prints to PDF ($(wc -c <report.pdf) bytes)"
else bad "printing failed: $(tail -3 "$WORK/browser.log")"; fi

# the checker itself tells a blank page from a drawn one
printf '<!DOCTYPE html><html><body></body></html>' >blank.html
timeout 180 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --hide-scrollbars \
    --user-data-dir="$(mktemp -d "$WORK/profile.XXXXXX")" --screenshot="$WORK/blank.png" --window-size=400,300 \
    "file://$WORK/blank.html" >/dev/null 2>&1
expect 1 "a blank page fails the check" -- "$PYTHON" "$TESTS/png_check.py" blank.png

finish
