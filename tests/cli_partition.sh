#!/usr/bin/env bash
# examples/partition_fx.py on torchvision's resnet18 and vit_b_16 (random weights)
# against a small synthetic calibration: the sites found, each named with its
# problem and multiplicity, answered measured, predicted (through fusecal predict)
# or unknown, the decisions, the summary. Then --write-network on resnet50,
# mobilenet_v2 and vit_b_16: the sites found in torchvision's graphs are those of
# the network files under patterns/networks/, fusecal validates the file written and
# predicts it as it does the built-in network, and its sites scale with --batch.
# Skipped (77) without torch.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
"$PYTHON" -c "import torch, torchvision" 2>/dev/null || { echo "torch or torchvision missing: skipped"; exit 77; }

STEM="conv_bn_relu:n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,layout=nhwc,dtype=fp32"
L1="conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"
# a basic block's end: conv2 -> bn2 -> += identity -> relu
L1R="conv_bn_add_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"
# layer2's downsampling branch: its add belongs to the block's conv2, so it stays conv_bn
DS2="conv_bn:n=1,c=64,h=56,w=56,k=128,r=1,s=1,stride=2,pad=0,layout=nhwc,dtype=fp32"
FC="linear_bias:m=1,k=512,n=1000,dtype=fp32"
# the stem and the block ends of layer1 fuse, layer1's other convs do not; with two
# more conv_bn_relu records (layer2's and layer3's second blocks) the class has the 4
# the model needs: the other conv_bn_relu sites are predicted from it, the other
# conv_bn_add_relu and conv_bn sites stay unknown
"$PYTHON" "$TESTS/make_records.py" cal.json "$STEM@cpu.onednn:1.3,1.35,1.4" "$L1@cpu.onednn:1.0,1.02,1.04" \
    "$L1R@cpu.onednn:1.12,1.18,1.24" "$DS2@cpu.onednn:1.0,1.01,1.02" "$FC@cpu.onednn:1.15,1.2,1.25" \
    "conv_bn_relu:n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32@cpu.onednn:1.0,1.03,1.06" \
    "conv_bn_relu:n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32@cpu.onednn:1.0,1.02,1.04" ||
    bad "make_records.py"

expect 0 "partition_fx.py on resnet18" -- "$PYTHON" "$SRC/examples/partition_fx.py" cal.json --model resnet18 \
    --fusecal "$FUSECAL"
for s in "fuse plan for resnet18: 21 sites, 16 distinct problems" \
    "conv1  x1" "$STEM" "cpu.onednn: measured, speedup 1.350 [1.300, 1.400], fuse: yes" \
    "layer1.0.conv1 (+1 more)  x2" "$L1" "cpu.onednn: measured, speedup 1.020 [1.000, 1.040], fuse: no" \
    "layer1.0.conv2 (+1 more)  x2" "$L1R" "cpu.onednn: measured, speedup 1.180 [1.120, 1.240], fuse: yes" \
    "layer2.0.downsample.0  x1" "$DS2" "fc  x1" "$FC" \
    "layer2.0.conv1  x1" "cpu.onednn: predicted" "unknown: 1 record of conv_bn_add_relu fp32 nhwc; the model needs 4" \
    "unknown: 1 record of conv_bn fp32 nhwc; the model needs 4" \
    "per inference, the sites above:" "cpu.onednn: 11 of 16 problems answered" "fusing the 3 yes saves"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "plan has: $s"; else bad "plan lacks: $s"; fi
done
# without --fusecal: the measured sites only, the rest unknown
expect 0 "partition_fx.py without fusecal predict" -- "$PYTHON" "$SRC/examples/partition_fx.py" cal.json --model resnet18
if grep -q ": predicted," "$WORK/out"; then bad "predicted without --fusecal"; else ok "no predictions without --fusecal"; fi
if grep -qF "cpu.onednn: 7 of 16 problems answered" "$WORK/out"; then ok "the 7 measured problems answered"
else bad "summary: $(grep answered "$WORK/out")"; fi
# a model torch.fx traces by parts (ViT reads shapes in Python): attention and MLP sites
expect 0 "partition_fx.py on vit_b_16" -- "$PYTHON" "$SRC/examples/partition_fx.py" cal.json --model vit_b_16
for s in "encoder.layers.encoder_layer_0.self_attention (+11 more)  x12" "attention:b=1,h=12,s=197,d=64,causal=0,dtype=fp32" \
    "encoder.layers.encoder_layer_0.self_attention.in_proj (+11 more)  x12" "linear_bias:m=197,k=768,n=2304,dtype=fp32" \
    "encoder.layers.encoder_layer_0.mlp.0 (+11 more)  x12" "linear_bias_gelu:m=197,k=768,n=3072,dtype=fp32" \
    "heads.head  x1" "conv_proj: met outside a traced graph" \
    "encoder.layers.encoder_layer_0.ln_1 (+24 more)  x25" "add_layernorm:m=197,n=768,dtype=fp32" \
    "(the sum is also used after it, as the residual stream"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "vit plan has: $s"; else bad "vit plan lacks: $s"; fi
done

# --write-network: the sites of torchvision's graphs against the hand-written network
# files (problems canonical, multiplicities summed); mobilenet_v2's ReLU6 counts as
# ReLU in both, and the plan says so on the site
same_sites() { # WRITTEN NETWORK_FILE
    "$PYTHON" - "$1" "$2" <<'PY'
import collections, json, os, sys
sys.path.insert(0, os.path.join(os.environ["SRC"], "python"))
import fusecal
def sites(path):
    c = collections.Counter()
    for s in json.load(open(path))["sites"]:
        c[fusecal.canonical(s["problem"])] += s["multiplicity"]
    return c
a, b = sites(sys.argv[1]), sites(sys.argv[2])
for p in sorted(set(a) | set(b)):
    if a[p] != b[p]:
        print(f"{p}: {a[p]} found, {b[p]} in the file")
sys.exit(a != b or not a)
PY
}
export SRC
for m in resnet50:resnet50 mobilenet_v2:mobilenet_v2 vit_b_16:vit_b16; do
    model=${m%%:*} file=${m#*:}
    expect 0 "partition_fx.py --write-network on $model" -- "$PYTHON" "$SRC/examples/partition_fx.py" --model "$model" \
        --write-network "$model.json"
    if grep -qF "wrote $model.json: " "$WORK/out"; then ok "says what it wrote"; else bad "output: $(cat "$WORK/out")"; fi
    if same_sites "$model.json" "$SRC/patterns/networks/$file.json" >"$WORK/diff"; then
        ok "$model: the sites of patterns/networks/$file.json"
    else bad "$model: sites differ from $file.json: $(head -5 "$WORK/diff")"; fi
    if "$FUSECAL" validate "$model.json" >/dev/null 2>&1; then ok "$model.json: a valid network file"; else bad "$model.json invalid"; fi
done
# the site notes: ReLU6 counted as ReLU; the residual add of each of MobileNetV2's 10
# stride-1 blocks, which no ReLU follows, named on its projection's conv_bn
if grep -qF "ReLU6, counted as ReLU" mobilenet_v2.json; then ok "mobilenet_v2: ReLU6 noted"; else bad "no ReLU6 note"; fi
check_eq "mobilenet_v2: the residual adds left outside, noted on their 10 projections" \
    "$(pyq mobilenet_v2.json 'sum(len(s["names"]) for s in d["sites"] if "residual add after it" in s.get("note", ""))')" 10
# fusecal predicts the written file as it does the built-in network: the same summary
"$FUSECAL" predict cal.json --network resnet50 --format json >builtin.json 2>/dev/null
"$FUSECAL" predict cal.json --network resnet50.json --format json >written.json 2>/dev/null
if "$PYTHON" -c "
import json, sys
a, b = (json.load(open(f))['summary'] for f in ('builtin.json', 'written.json'))
sys.exit(a != b or not a)" 2>"$WORK/perr"; then ok "predict --network: written resnet50 = built-in"
else bad "predict summaries differ: $(head -3 "$WORK/perr")"; fi
# the sites scale with --batch: the batch-1 file predicted at --batch 2 asks about the
# problems of the file written at batch 2 (ViT's position embedding is then a
# broadcast add, noted on the site)
expect 0 "partition_fx.py --write-network on vit_b_16 at batch 2" -- "$PYTHON" "$SRC/examples/partition_fx.py" \
    --model vit_b_16 --batch 2 --write-network vit2.json
"$FUSECAL" predict cal.json --network vit_b_16.json --batch 2 --format json >scaled.json 2>/dev/null
"$FUSECAL" predict cal.json --network vit2.json --format json >batch2.json 2>/dev/null
if "$PYTHON" -c "
import json, sys
a, b = ({p['problem'] for p in json.load(open(f))['predictions']} for f in ('scaled.json', 'batch2.json'))
sys.exit(a != b or 'add_layernorm:m=394,n=768,dtype=fp32' not in a)" 2>"$WORK/perr"; then
    ok "vit_b_16 at --batch 2: the problems of the file written at batch 2"
else bad "vit_b_16 --batch 2 problems differ: $(head -3 "$WORK/perr")"; fi
if grep -qF "r is a parameter broadcast over the batch" vit2.json; then ok "broadcast add noted"; else bad "no broadcast note"; fi
# a container never called itself (maxvit_t's blocks, an nn.ModuleList its parent
# iterates): its children are still visited
expect 0 "partition_fx.py --write-network on maxvit_t" -- "$PYTHON" "$SRC/examples/partition_fx.py" --model maxvit_t \
    --write-network maxvit.json
if grep -qF '"blocks.0.layers.0.layers.window_attention.mlp_layer.1"' maxvit.json; then
    ok "maxvit_t: the sites inside its ModuleList of blocks"
else bad "maxvit_t: no site inside blocks: $(cat "$WORK/out")"; fi
# nothing to do: a clear usage error
expect 2 "partition_fx.py with neither documents nor --write-network" -- "$PYTHON" "$SRC/examples/partition_fx.py"
expect 2 "partition_fx.py with an unknown model" -- "$PYTHON" "$SRC/examples/partition_fx.py" --model nosuch --write-network x.json
finish
