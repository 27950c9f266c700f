#!/usr/bin/env bash
# fusecal report: one self-contained page that an XML parser accepts, with one
# speedup chart per pattern present, the traffic chart, a roofline per file and
# device, one table row per record, every string from the records escaped, and
# nothing fetched from anywhere. (tests/cli_report_browser.sh renders it.)
. "$(dirname "$0")/lib.sh"

mk() { "$PYTHON" "$TESTS/make_records.py" "$@" || bad "make_records.py $*"; }
cd "$WORK" || exit 1

mk sweep.json --preset sweep "linear_bias:m=8,k=8,n=8,dtype=fp32@cpu.openblas:1,1,1:failed"
mk other.json --hostname "other <host> & co" "linear_bias_relu:m=100,k=100,n=100,dtype=fp32@cpu.openblas:1.4,1.5,1.6" \
    "conv_relu:n=1,c=3,h=32,w=32,k=8,r=3,s=3,stride=1,pad=1,layout=nchw,dtype=fp32@cpu.onednn:0.5,0.6,0.7" \
    "qk_softmax:b=1,h=2,s=64,d=64,causal=0,dtype=fp32@cpu.openblas:1,1,1:skipped"
schema_valid sweep.json other.json

expect 0 "report of two files" -- "$FUSECAL" report sweep.json other.json -o report.html --title 'Speed & <fusion>'
err_says "wrote report.html" "from 2 calibrations"

# everything below is checked by python's XML parser over the page
"$PYTHON" - report.html sweep.json other.json >"$WORK/checks" 2>&1 <<'PY'
import json, sys, html.parser
import xml.etree.ElementTree as ET
page, files = sys.argv[1], sys.argv[2:]
X, S = "{http://www.w3.org/1999/xhtml}", "{http://www.w3.org/2000/svg}"
root = ET.parse(page).getroot()          # well-formed XML, or this raises
html.parser.HTMLParser().feed(open(page, encoding="utf-8").read())
docs = [json.load(open(f)) for f in files]
recs = [r for d in docs for r in d["records"]]
def say(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
say("root is XHTML html", root.tag == X + "html", root.tag)
svgs = list(root.iter(S + "svg"))
speed = [s for s in svgs if s.get("data-chart") == "speedup"]
patterns = {r["pattern"] for r in recs}
say("one speedup chart per pattern present", sorted(s.get("data-pattern") for s in speed) == sorted(patterns),
    (sorted(s.get("data-pattern") for s in speed), sorted(patterns)))
texts = lambda e: " ".join("".join(t.itertext()) for t in e.iter(S + "text"))
say("speedup axes labelled with units", all("FLOP" in texts(s) and "speedup" in texts(s) for s in speed))
drawn = [s for s in speed if s.get("data-pattern") == "linear_bias_relu"][0]
say("threshold line drawn", any(g.get("class") == "threshold" for g in drawn.iter(S + "g")))
cross = [g for s in speed for g in s.iter(S + "g") if g.get("class") == "crossover"]
say("crossovers drawn where speedup crosses the threshold", len(cross) >= 3, len(cross))
say("whiskers: a tooltip per point", len([g for g in drawn.iter(S + "g") if g.find(S + "title") is not None]) >= 15)
say("one traffic chart", len([s for s in svgs if s.get("data-chart") == "traffic"]) == 1)
roof = [s for s in svgs if s.get("data-chart") == "roofline"]
want = {(i, r["device"]) for i, d in enumerate(docs) for r in d["records"] if r["status"] == "ok"}
say("a roofline per file and device", len(roof) == len(want), (len(roof), want))
say("roofline axes labelled with units", all("FLOP/byte" in texts(s) and "FLOP/s" in texts(s) for s in roof))
rows = root.findall(f".//{X}table[@class='records']/{X}tbody/{X}tr")
say("one table row per record", len(rows) == len(recs), (len(rows), len(recs)))
alltext = "".join(root.itertext())
say("record strings escaped and intact", "synthetic fused <cpu.openblas> & co" in alltext and
    "rel err 0.5 > tol 1e-05 <&>" in alltext and "other <host> & co" in alltext)
say("title escaped", root.find(f"{X}head/{X}title").text == "Speed & <fusion>")
say("no scripts, frames, links or images", not any(list(root.iter(X + t)) for t in ("script", "iframe", "link", "img", "object", "embed")))
bad = [(e.tag, k, v) for e in root.iter() for k, v in e.attrib.items()
       if k in ("src", "href") and not v.startswith("#")]
say("no external references", not bad, bad)
style = "".join(e.text or "" for e in root.iter(X + "style"))
say("CSS loads nothing", "url(" not in style and "@import" not in style and "@font-face" not in style)
say("print styles", "@media print" in style)
say("crossing described in words", "falls below the 1.1" in alltext)
say("crossings along one dimension, the others fixed", "along m (k=512,n=512) at m" in alltext and
    "along n (c=64,h=28,w=28,k=64,r=3,s=3,pad=1,nhwc) at n" in alltext)
say("host and settings", "Test CPU 9000" in alltext and "graph replay" in alltext)
PY
while read -r line; do case $line in ok*) ok "${line#ok   }" ;; *) bad "${line#FAIL }" ;; esac; done <"$WORK/checks"

expect 0 "report to stdout" -- "$FUSECAL" report other.json -o -
check_eq "stdout is the page" "$(head -c 15 "$WORK/out")" "<!DOCTYPE html>"
"$PYTHON" -c "import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$WORK/out" && ok "stdout page parses" || bad "stdout page does not parse"

# a page made from a real run
expect 0 "a real run" -- "$FUSECAL" run --shape m=8,k=8,n=8 --pattern linear_bias,linear_bias_relu --backend cpu.openblas \
    "${FAST[@]}" --out real.json --quiet
expect 0 "report of a real run" -- "$FUSECAL" report real.json -o real.html
check_eq "real page: well-formed, two speedup charts, a roofline" "$("$PYTHON" -c "
import sys, xml.etree.ElementTree as E
r = E.parse(sys.argv[1]).getroot()
c = [s.get('data-chart') for s in r.iter('{http://www.w3.org/2000/svg}svg')]
print(c.count('speedup'), c.count('roofline'))" real.html)" "2 1"

# files of one host with one base name: as much of their paths as tells them apart
mkdir -p runs/A runs/B runs/C
for d in A B C; do mk "runs/$d/quick-1.json" "linear_bias:m=64,k=64,n=64,dtype=fp32@cpu.openblas:1.2,1.3,1.4"; done
mk runs/C/solo.json "linear_bias:m=64,k=64,n=64,dtype=fp32@cpu.openblas:1.2,1.3,1.4"
expect 0 "report of files with one base name" -- "$FUSECAL" report runs/A/quick-1.json runs/B/quick-1.json runs/C/solo.json \
    "$WORK/runs/A/quick-1.json" -o names.html
check_eq "roofline headings tell the files apart" "$("$PYTHON" -c "
import sys, xml.etree.ElementTree as E
X = '{http://www.w3.org/1999/xhtml}'
r = E.parse(sys.argv[1]).getroot()
print([''.join(h.itertext()).split(' \u00b7 ')[-1] for h in r.iter(X + 'h3') if 'Roofline' in ''.join(h.itertext())])" names.html)" \
    "['runs/A/quick-1.json', 'B/quick-1.json', 'solo.json', '$(basename "$WORK")/runs/A/quick-1.json']"

# bad input and usage: one line, exit 2, no page
printf '{"schema": "fusecal-calibration", "schema_version": 2,' >trunc.json
expect 2 "a file that is not JSON" -- "$FUSECAL" report sweep.json trunc.json -o bad.html; err_says "trunc.json" "truncated"
mk v5.json --schema-version 5 "linear_bias:m=8,k=8,n=8,dtype=fp32@cpu.openblas:1,1,1"
expect 2 "a newer schema version" -- "$FUSECAL" report v5.json -o bad.html; err_says "v5.json" "newer"
echo '{"schema": "fusecal-calibration", "schema_version": 2}' >noschema.json
expect 2 "a file failing its schema" -- "$FUSECAL" report noschema.json -o bad.html; err_says "noschema.json" "does not match"
if [ -e bad.html ]; then bad "a page was written from bad input"; else ok "no page from bad input"; fi
expect 2 "no input" -- "$FUSECAL" report -o x.html; err_says "at least one calibration file"
expect 2 "no -o" -- "$FUSECAL" report sweep.json; err_says "needs -o FILE"
expect 2 "unwritable -o" -- "$FUSECAL" report sweep.json -o /nonexistent-dir/r.html; err_says "cannot write '/nonexistent-dir/r.html'"
expect 2 "unknown option" -- "$FUSECAL" report sweep.json -o x.html --frob; err_says "unknown option '--frob'"
expect 0 "report --help" -- "$FUSECAL" report --help

finish
