#!/usr/bin/env bash
# examples/partition_fx.py on torchvision's resnet18 and vit_b_16 (random weights)
# against a small synthetic calibration: the sites found, each named with its
# problem and multiplicity, answered measured, predicted (through fusecal predict)
# or unknown, the decisions, the summary. Skipped (77) without torch.
. "$(dirname "$0")/lib.sh"
cd "$WORK" || exit 1
"$PYTHON" -c "import torch, torchvision" 2>/dev/null || { echo "torch or torchvision missing: skipped"; exit 77; }

STEM="conv_bn_relu:n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,layout=nhwc,dtype=fp32"
L1="conv_bn_relu:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"
L1B="conv_bn:n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32"
FC="linear_bias:m=1,k=512,n=1000,dtype=fp32"
# the stem fuses, layer1's convs do not; with two more conv_bn_relu records (layer2's
# and layer3's second blocks) the class has the 4 the model needs: the other
# conv_bn_relu sites are predicted from it, conv_bn's stay unknown
"$PYTHON" "$TESTS/make_records.py" cal.json "$STEM@cpu.onednn:1.3,1.35,1.4" "$L1@cpu.onednn:1.0,1.02,1.04" \
    "$L1B@cpu.onednn:1.0,1.01,1.02" "$FC@cpu.onednn:1.15,1.2,1.25" \
    "conv_bn_relu:n=1,c=128,h=28,w=28,k=128,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32@cpu.onednn:1.0,1.03,1.06" \
    "conv_bn_relu:n=1,c=256,h=14,w=14,k=256,r=3,s=3,stride=1,pad=1,layout=nhwc,dtype=fp32@cpu.onednn:1.0,1.02,1.04" ||
    bad "make_records.py"

expect 0 "partition_fx.py on resnet18" -- "$PYTHON" "$SRC/examples/partition_fx.py" cal.json --model resnet18 \
    --fusecal "$FUSECAL"
for s in "fuse plan for resnet18: 21 sites, 16 distinct problems" \
    "conv1  x1" "$STEM" "cpu.onednn: measured, speedup 1.350 [1.300, 1.400], fuse: yes" \
    "layer1.0.conv1 (+1 more)  x2" "$L1" "cpu.onednn: measured, speedup 1.020 [1.000, 1.040], fuse: no" \
    "layer1.0.conv2 (+1 more)  x2" "$L1B" "fc  x1" "$FC" "fuse: yes" \
    "layer2.0.conv1  x1" "cpu.onednn: predicted" "unknown: 1 record of conv_bn fp32 nhwc; the model needs 4" \
    "per inference, the sites above:" "cpu.onednn: 10 of 16 problems answered"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "plan has: $s"; else bad "plan lacks: $s"; fi
done
# without --fusecal: the measured sites only, the rest unknown
expect 0 "partition_fx.py without fusecal predict" -- "$PYTHON" "$SRC/examples/partition_fx.py" cal.json --model resnet18
if grep -q ": predicted," "$WORK/out"; then bad "predicted without --fusecal"; else ok "no predictions without --fusecal"; fi
if grep -qF "cpu.onednn: 6 of 16 problems answered" "$WORK/out"; then ok "the 6 measured problems answered"
else bad "summary: $(grep answered "$WORK/out")"; fi
# a model torch.fx traces by parts (ViT reads shapes in Python): attention and MLP sites
expect 0 "partition_fx.py on vit_b_16" -- "$PYTHON" "$SRC/examples/partition_fx.py" cal.json --model vit_b_16
for s in "encoder.layers.encoder_layer_0.self_attention (+11 more)  x12" "attention:b=1,h=12,s=197,d=64,causal=0,dtype=fp32" \
    "encoder.layers.encoder_layer_0.mlp.0 (+11 more)  x12" "linear_bias_gelu:m=197,k=768,n=3072,dtype=fp32" \
    "heads.head  x1" "conv_proj: met outside a traced graph"; do
    if grep -qF -- "$s" "$WORK/out"; then ok "vit plan has: $s"; else bad "vit plan lacks: $s"; fi
done
finish
