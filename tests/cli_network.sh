#!/usr/bin/env bash
# fusecal run --network end to end on a tiny network file with short stopping:
# the records and the network summary in the document, against the schema (both
# validators) and against the records (saving per site and in total, merged
# names, losers); list networks; --batch/--seq rewriting the built-in networks'
# problems; predict --network and python/fusecal.py on the same document; the
# report's network section; bad input (one line, exit 2).
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1

cat >tiny.json <<'EOF'
{"schema": "fusecal-network", "schema_version": 1, "name": "tiny", "batch": 2, "seq": 4,
 "description": "a tiny network & its <sites>",
 "notes": ["the stem's ReLU6 counted as ReLU", "outside the sites: the pool"],
 "stop": {"min_samples": 2, "min_time_s": 0, "max_time_s": 0.02},
 "sites": [
  {"problem": "linear_bias_relu:m=8,k=32,n=32", "multiplicity": 3, "names": ["block.0.fc"], "scale": {"m": "batch*seq"}},
  {"problem": "linear_bias_relu:m=8,k=32,n=32", "multiplicity": 2, "names": ["block.1.fc"], "scale": {"m": "batch*seq"}},
  {"problem": "conv_bn_relu:n=2,c=8,h=8,w=8,k=8,r=3,s=3,pad=1", "multiplicity": 1, "names": ["stem"], "scale": {"n": "batch"}},
  {"problem": "add_layernorm:m=8,n=64", "multiplicity": 4, "names": ["ln"], "scale": {"m": "batch*seq"}}
 ]}
EOF

# ---- list networks
expect 0 "list networks" -- "$FUSECAL" list networks
for s in "resnet50           batch 1: 54 sites, 25 unique, 54 runs per inference" "mobilenet_v2" \
    "bert_base          batch 1, seq 128" "vit_b16            batch 1, seq 197"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "list networks says '$s'"; else bad "list networks lacks '$s'"; fi
done
expect 0 "list networks --format json" -- "$FUSECAL" list networks --format json
check_eq "resnet50's unique sites in JSON" \
    "$(pyq "$WORK/out" '[n["unique_sites"] for n in d["networks"] if n["name"] == "resnet50"][0]')" 25

# ---- the built-in networks' problems at other sizes (dry runs)
expect 0 "run --network resnet50 --dry-run" -- "$FUSECAL" run --network resnet50 --backend cpu.onednn --dry-run
check_eq "resnet50: 25 unique problems" "$(grep -c '^cpu.onednn' "$WORK/out")" 25
expect 0 "run --network resnet50 --batch 32" -- "$FUSECAL" run --network resnet50 --batch 32 --backend cpu.onednn \
    --dry-run
check_eq "--batch 32: every conv at n=32" "$(grep -c 'conv[a-z_]*:n=32,' "$WORK/out")" 24
check_eq "--batch 32: the fc at m=32" "$(grep -c 'linear_bias:m=32,k=2048,n=1000' "$WORK/out")" 1
# sites that differ only in dtype are one site in the dtype asked for
printf '%s' '{"schema":"fusecal-network","schema_version":1,"name":"mixed","batch":1,"sites":[{"problem":"linear_bias:m=4,k=64,n=64","multiplicity":1,"names":["a"]},{"problem":"linear_bias:m=4,k=64,n=64,dtype=bf16","multiplicity":2,"names":["b"]}]}' >mixed.json
expect 0 "run --network --dtype fp32 on sites of two dtypes" -- "$FUSECAL" run --network mixed.json --dtype fp32 \
    --backend cpu.openblas --dry-run
check_eq "--dtype fp32: the two sites are one problem" "$(grep -c '^cpu.openblas' "$WORK/out")" 1
expect 0 "run --network bert_base --batch 8 --seq 512" -- "$FUSECAL" run --network bert_base --batch 8 --seq 512 \
    --backend cpu.openblas --dry-run
for s in "linear_bias:m=4096,k=768,n=768" "linear_bias_gelu:m=4096,k=768,n=3072" "add_layernorm:m=4096,n=768" \
    "attention:b=8,h=12,hkv=12,s=512,skv=512,d=64,causal=0"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "bert_base at 8 x 512: $s"; else bad "bert_base at 8 x 512 lacks $s"; fi
done

# ---- run --network on the tiny file
expect 0 "run --network tiny.json" -- "$FUSECAL" run --network tiny.json --backend cpu.openblas,cpu.onednn \
    --rounds 2 --out net.json
schema_valid net.json
if grep -qF "fusecal: network tiny (batch 2) on cpu.openblas: 3 of 3 sites measured" "$WORK/err"; then
    ok "run prints the network summary"
else bad "run's stderr lacks the network summary: $(tail -3 "$WORK/err")"; fi
check_eq "the file's stopping rule" "$(pyq net.json 'd["settings"]["stop"]["max_time_s"]')" 0.02
check_eq "the file's description in the network block" "$(pyq net.json 'd["network"]["description"]')" \
    "a tiny network & its <sites>"
check_eq "the file's notes in the network block" "$(pyq net.json '" | ".join(d["network"]["notes"])')" \
    "the stem's ReLU6 counted as ReLU | outside the sites: the pool"
check_eq "summary: sweep name" "$(pyq net.json 'd["settings"]["sweep"]')" "network tiny"
# every summary field against the records
"$PYTHON" - net.json <<'EOF' >check.out 2>&1
import json, math, sys
d = json.load(open(sys.argv[1]))
net = d["network"]
assert net["name"] == "tiny" and net["batch"] == 2 and net["seq"] == 4, net
assert net["runs_per_inference"] == 10, net["runs_per_inference"]
recs = {(r["problem"], r["backend"]): r for r in d["records"] if r["status"] == "ok"}
assert [s["backend"] for s in net["summaries"]] == ["cpu.openblas", "cpu.onednn"]
for s in net["summaries"]:
    assert s["sites"] == 3, s["sites"]
    total = unfused = 0.0
    losing = []
    savings = []
    for p in s["per_site"]:
        r = recs.get((p["problem"], s["backend"]))
        assert p["measured"] == (r is not None), p
        if r is None:
            continue
        u = r["variants"]["unfused"]["latency_ms"]["median"]
        f = r["variants"]["fused"]["latency_ms"]["median"]
        # decided on the fusion split (a control): the saving and speedup are against the control
        fusion = r["decided_by"] == "fusion"
        base = r["variants"]["control"]["latency_ms"]["median"] if fusion else u
        sp = r["speedup_split"]["fusion"] if fusion else r["speedup"]
        assert fusion == ("control_ms" in p) and (not fusion or p["control_ms"] == base), p
        assert math.isclose(p["speedup"]["ratio"], sp["ratio"], rel_tol=1e-9), p
        assert math.isclose(p["saving_ms"], p["multiplicity"] * (base - f), rel_tol=1e-9), p
        assert p["decision"] == r["decision"]
        lo, hi = p["saving_ci95"]
        assert lo <= p["saving_ms"] <= hi, p
        unfused += p["multiplicity"] * u
        if r["decision"] == "yes":
            total += p["saving_ms"]
        if sp["ci95"][1] < 1:
            losing.append(p["problem"])
        savings.append(p["saving_ms"])
    assert savings == sorted(savings, reverse=True), savings
    assert math.isclose(s["saving_ms"], total, rel_tol=1e-9, abs_tol=1e-12), (s["saving_ms"], total)
    assert math.isclose(s["unfused_ms"], unfused, rel_tol=1e-9), (s["unfused_ms"], unfused)
    assert s["losing"] == losing
    assert s["saving_ci95"][0] <= s["saving_ms"] <= s["saving_ci95"][1]
lin = [p for p in net["summaries"][0]["per_site"] if p["problem"].startswith("linear_bias_relu")][0]
assert lin["multiplicity"] == 5 and lin["names"] == ["block.0.fc", "block.1.fc"], lin
# cpu.openblas's linear fused form has a control: the fusion split decides, and the
# saving is against the control, unless the implementation's split is a loss
rec = recs[(lin["problem"], "cpu.openblas")]
assert "control" in rec["variants"], rec["variants"].keys()
assert ("control_ms" in lin) == (rec["speedup_split"]["implementation"]["ci95"][1] >= 1), (lin, rec["speedup_split"])
print("summary consistent")
EOF
if grep -q "summary consistent" check.out; then ok "the network summary agrees with the records"; else
    bad "network summary: $(tail -3 check.out)"; fi

# ---- predict --network on the run's document: the measured records' summary
expect 0 "predict --network tiny.json" -- "$FUSECAL" predict net.json --network tiny.json --format json --out p.json
"$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/predict.schema.json" p.json 2>verr && ok "predict --network: schema" ||
    bad "predict --network: $(head -3 verr)"
"$FUSECAL" validate p.json >/dev/null 2>verr && ok "predict --network: fusecal validate" ||
    bad "predict --network, fusecal validate: $(head -3 verr)"
check_eq "predict --network: the same saving as run" \
    "$(pyq p.json '[round(s["saving_ms"], 9) for s in d["summary"]]')" \
    "$(pyq net.json '[round(s["saving_ms"], 9) for s in d["network"]["summaries"]]')"
check_eq "predict --network: the network, its size and the file's notes" \
    "$(pyq p.json '(d["network"]["name"], d["network"]["batch"], d["network"]["seq"], d["network"]["runs_per_inference"], d["network"]["notes"][1])')" \
    "('tiny', 2, 4, 10, 'outside the sites: the pool')"
check_eq "predict --network: names and multiplicities" \
    "$(pyq p.json '[(p["multiplicity"], p["name"]) for p in d["predictions"] if p["problem"].startswith("linear")][0]')" \
    "(5, 'block.0.fc, block.1.fc')"
expect 0 "predict --network, text" -- "$FUSECAL" predict net.json --network tiny.json
if grep -qF "summary for network tiny, per inference" "$WORK/out" && grep -qF "x5 per inference: block.0.fc, block.1.fc" \
    "$WORK/out"; then ok "predict --network: text"; else bad "predict --network text: $(head -5 "$WORK/out")"; fi

# ---- python/fusecal.py reads the summary
"$PYTHON" - "$SRC/python" net.json tiny.json <<'EOF' >py.out 2>&1
import json, math, sys
sys.path.insert(0, sys.argv[1])
import fusecal
d = json.load(open(sys.argv[2]))
cal = fusecal.load(sys.argv[2])
stored = cal.network_summary()
assert [s["saving_ms"] for s in stored] == [s["saving_ms"] for s in d["network"]["summaries"]]
assert stored[0]["network"] == {"name": "tiny", "batch": 2, "seq": 4}
for sites in (sys.argv[2], sys.argv[3]):
    again = cal.network_summary(sites)
    for a, b in zip(again, d["network"]["summaries"]):
        assert a["backend"] == b["backend"] and math.isclose(a["saving_ms"], b["saving_ms"], rel_tol=1e-9, abs_tol=1e-12), (a, b)
sites = {p: (m, n) for p, m, n in fusecal.network_sites(sys.argv[3])}
assert sites["linear_bias_relu:m=8,k=32,n=32,dtype=fp32"] == (5, "block.0.fc, block.1.fc"), sites
print("python agrees")
EOF
if grep -q "python agrees" py.out; then ok "python/fusecal.py network_summary"; else bad "python: $(tail -3 py.out)"; fi

# ---- the report's network section
expect 0 "report on a network run" -- "$FUSECAL" report net.json --out r.html
if grep -qF 'id="network"' r.html && grep -qF "block.0.fc, block.1.fc" r.html; then ok "report: network section"; else
    bad "report lacks the network section"; fi
if grep -qF "a tiny network &amp; its &lt;sites&gt;" r.html && grep -qF "<li>outside the sites: the pool</li>" r.html; then
    ok "report: the network file's description and notes, escaped"
else bad "report lacks the network file's notes"; fi

# ---- validate: network files against the schema and the patterns
expect 0 "validate the built-in network files" -- "$FUSECAL" validate "$SRC"/patterns/networks/*.json tiny.json
check_eq "validate: each a network file" "$(grep -c 'valid network file' "$WORK/out")" \
    "$(($(ls "$SRC"/patterns/networks/*.json | wc -l) + 1))"
for f in "$SRC"/patterns/networks/*.json; do
    "$PYTHON" "$TESTS/validate_schema.py" "$SRC/schemas/network.schema.json" "$f" 2>verr ||
        bad "python's jsonschema refuses $f: $(head -2 verr)"
done
ok "python's jsonschema accepts the built-in network files"

# ---- bad input: one line, exit 2
printf '%s' '{"schema":"fusecal-network","schema_version":1,"name":"x","batch":1,"sites":[{"problem":"conv_bn_gelu:n=1,c=8,h=8,w=8,k=8","multiplicity":1,"names":["a"]}]}' >unknown.json
expect 2 "a site with an unknown pattern" -- "$FUSECAL" run --network unknown.json --dry-run
err_says "unknown.json: site 0" "unknown pattern 'conv_bn_gelu'"
expect 1 "validate: a site with an unknown pattern" -- "$FUSECAL" validate unknown.json
err_says "invalid: unknown.json: site 0" "unknown pattern 'conv_bn_gelu'"
# a layer named by two sites would count its runs twice
printf '%s' '{"schema":"fusecal-network","schema_version":1,"name":"x","batch":1,"sites":[{"problem":"linear_bias:m=4,k=64,n=64","multiplicity":1,"names":["layer1.0.conv2"]},{"problem":"linear_bias:m=4,k=64,n=64","multiplicity":1,"names":["layer1.0.conv2"]}]}' >twice.json
expect 2 "a name two sites give" -- "$FUSECAL" run --network twice.json --dry-run
err_says "twice.json: site 1: name 'layer1.0.conv2' also names site 0"
expect 2 "predict: a name two sites give" -- "$FUSECAL" predict net.json --network twice.json
err_says "twice.json: site 1: name 'layer1.0.conv2' also names site 0"
if "$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); import fusecal; fusecal.network_sites(sys.argv[2])' \
    "$SRC/python" twice.json 2>&1 | grep -qF "site 1: name 'layer1.0.conv2' also names site 0"; then
    ok "python: a name two sites give refused"
else bad "python's network_sites takes a name two sites give"; fi
expect 2 "an unknown network" -- "$FUSECAL" run --network resnet51 --dry-run
err_says "unknown network 'resnet51' (valid: " "resnet50"
expect 2 "--seq for a network without one" -- "$FUSECAL" run --network resnet50 --seq 128 --dry-run
err_says "resnet50: the network has no sequence length to set"
expect 2 "--batch without --network" -- "$FUSECAL" run --batch 8 --dry-run
err_says "--batch rewrites a network's sites: give --network too"
expect 2 "--network with --sweep" -- "$FUSECAL" run --network resnet50 --sweep quick --dry-run
err_says "--network excludes --sweep"
expect 2 "--network with two dtypes" -- "$FUSECAL" run --network resnet50 --dtype fp32,bf16 --dry-run
err_says "--network takes one --dtype"
expect 2 "predict --batch without --network" -- "$FUSECAL" predict net.json --batch 2 -p linear_bias:m=8,k=8,n=8
err_says "--batch rewrites a network's sites"

echo "$PASS passed, $FAIL failed"
[ "$FAIL" -eq 0 ]
