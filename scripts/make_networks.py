#!/usr/bin/env python3
"""Writes patterns/networks/*.json: the fusion sites of published architectures at
their published shapes, one file per model (schemas/network.schema.json).

    python3 scripts/make_networks.py [--out patterns/networks] [--only NAME...]

Each model is written out layer by layer as it is built in its reference
implementation (torchvision for the CNNs and ViT, Hugging Face for BERT and LLaMA),
one site per fusible chain; fusecal merges identical sites when it loads the file.
"""
import argparse
import json
import os
import sys

CONV_SCALE = {"n": "batch"}


def conv(pattern, n, c, h, k, r, stride, pad, name, g=1, w=None):
    dims = f"n={n},c={c},h={h},w={w or h},k={k},r={r},s={r},stride={stride},pad={pad}"
    if g != 1 and pattern != "dwconv_bn_relu":
        dims += f",g={g}"
    return {"problem": f"{pattern}:{dims}", "multiplicity": 1, "names": [name], "scale": dict(CONV_SCALE)}


def site(problem, names, scale, mult=1, note=None):
    s = {"problem": problem, "multiplicity": mult, "names": names if isinstance(names, list) else [names],
         "scale": scale}
    if note:
        s["note"] = note
    return s


def document(name, description, source, notes, batch, sites, seq=None, configurations=None):
    doc = {"$schema": "../../schemas/network.schema.json", "schema": "fusecal-network", "schema_version": 1,
           "name": name, "description": description, "source": source, "notes": notes, "batch": batch}
    if seq is not None:
        doc["seq"] = seq
    if configurations:
        doc["configurations"] = configurations
    doc["sites"] = sites
    return doc


# ---------------------------------------------------------------- ResNet-50


def resnet50():
    n = 1
    sites = [conv("conv_bn_relu", n, 3, 224, 64, 7, 2, 3, "conv1+bn1+relu")]
    inplanes, hw = 64, 56  # after the 3x3/2 max pool
    for li, (planes, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)], 1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            out = hw // s
            pre = f"layer{li}.{b}."
            sites.append(conv("conv_bn_relu", n, inplanes, hw, planes, 1, 1, 0, pre + "conv1+bn1+relu"))
            sites.append(conv("conv_bn_relu", n, planes, hw, planes, 3, s, 1, pre + "conv2+bn2+relu"))
            sites.append(conv("conv_bn_add_relu", n, planes, out, planes * 4, 1, 1, 0, pre + "conv3+bn3+add+relu"))
            if b == 0:
                sites.append(conv("conv_bn", n, inplanes, hw, planes * 4, 1, s, 0, pre + "downsample.0+1"))
            inplanes, hw = planes * 4, out
    sites.append(site("linear_bias:m=1,k=2048,n=1000", "fc", {"m": "batch"}))
    notes = [
        "torchvision resnet50 (v1.5: the stride of a downsampling bottleneck is in its 3x3 conv), 224x224 input, "
        "eval mode, NHWC (fusecal's default conv layout).",
        "Stem: conv1 7x7/2 + bn1 + relu is conv_bn_relu. Per bottleneck: conv1 1x1 + bn1 + relu and conv2 3x3 + bn2 "
        "+ relu are conv_bn_relu; conv3 1x1 + bn3, the residual add and the final relu are conv_bn_add_relu (r is the "
        "identity or the downsample's output); the downsample (1x1 conv, stride of the block, + BN) is conv_bn.",
        "fc (2048 -> 1000, bias) is linear_bias on the pooled features (m = batch).",
        "Outside the sites: the 3x3/2 max pool and the global average pool.",
    ]
    return document("resnet50", "ResNet-50 v1.5 (torchvision), 224x224, every conv+BN(+add)(+ReLU) and the fc",
                    "He et al. 2015, torchvision.models.resnet50", notes, n, sites,
                    configurations=[{"batch": 1}, {"batch": 32}])


# ---------------------------------------------------------------- MobileNetV2


def mobilenet_v2():
    n = 1
    sites = [conv("conv_bn_relu", n, 3, 224, 32, 3, 2, 1, "features.0 (conv+bn+relu6)")]
    cin, hw, idx = 32, 112, 1
    for t, c, reps, s in [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                          (6, 320, 1, 1)]:
        for i in range(reps):
            stride = s if i == 0 else 1
            hidden = cin * t
            pre = f"features.{idx}.conv."
            j = 0
            if t != 1:
                sites.append(conv("conv_bn_relu", n, cin, hw, hidden, 1, 1, 0, pre + "0 (expand conv+bn+relu6)"))
                j = 1
            sites.append(conv("dwconv_bn_relu", n, hidden, hw, hidden, 3, stride, 1,
                              pre + f"{j} (depthwise conv+bn+relu6)", g=hidden))
            out = (hw - 1) // stride + 1
            res = " + residual add outside" if stride == 1 and cin == c else ""
            sites.append(conv("conv_bn", n, hidden, out, c, 1, 1, 0, pre + f"{j + 1}+{j + 2} (project conv+bn{res})"))
            cin, hw, idx = c, out, idx + 1
    sites.append(conv("conv_bn_relu", n, 320, 7, 1280, 1, 1, 0, "features.18 (conv+bn+relu6)"))
    sites.append(site("linear_bias:m=1,k=1280,n=1000", "classifier.1", {"m": "batch"}))
    notes = [
        "torchvision mobilenet_v2 (width 1.0), 224x224, eval mode, NHWC.",
        "MobileNetV2 clamps with ReLU6; fusecal's conv patterns end in ReLU, so every conv+BN+ReLU6 is measured as "
        "conv+BN+ReLU (one clamp more per element in the real model, the same memory traffic).",
        "Expansion 1x1 conv + BN + ReLU6: conv_bn_relu; depthwise 3x3 conv + BN + ReLU6: dwconv_bn_relu (g = c = k); "
        "projection 1x1 conv + BN (linear bottleneck, no activation): conv_bn.",
        "An inverted residual block with stride 1 and equal channels adds its input after the projection, with no "
        "ReLU after the add: fusecal has no conv+BN+add pattern without the ReLU, so the site is the projection's "
        "conv_bn and the add stays outside the sites (named on the site).",
        "classifier: dropout (identity in eval) and linear 1280 -> 1000 with bias: linear_bias (m = batch).",
        "Outside the sites: the residual adds and the global average pool.",
    ]
    return document("mobilenet_v2", "MobileNetV2 (torchvision), 224x224: expansion, depthwise and projection "
                    "conv+BN(+ReLU6 as ReLU) and the classifier", "Sandler et al. 2018, torchvision.models.mobilenet_v2",
                    notes, n, sites, configurations=[{"batch": 1}])


# ---------------------------------------------------------------- BERT-base


def bert_base():
    b, s, hdim, heads, ffn, layers = 1, 128, 768, 12, 3072, 12
    m = b * s
    tok = {"m": "batch*seq"}
    sites = [site(f"add_layernorm:m={m},n={hdim}", "embeddings.LayerNorm (after word + position + token type)", tok,
                  note="three embeddings are summed; one add is the site's, the other is outside")]
    for i in range(layers):
        pre = f"encoder.layer.{i}."
        for p in ("query", "key", "value"):
            sites.append(site(f"linear_bias:m={m},k={hdim},n={hdim}", pre + f"attention.self.{p}", tok))
        sites.append(site(f"attention:b={b},h={heads},s={s},d={hdim // heads},causal=0",
                          pre + "attention.self (softmax(QK^T/sqrt(d))V)", {"b": "batch", "s": "seq"}))
        sites.append(site(f"linear_bias:m={m},k={hdim},n={hdim}", pre + "attention.output.dense", tok))
        sites.append(site(f"add_layernorm:m={m},n={hdim}", pre + "attention.output (residual add + LayerNorm)", tok))
        sites.append(site(f"linear_bias_gelu:m={m},k={hdim},n={ffn}", pre + "intermediate.dense+gelu", tok))
        sites.append(site(f"linear_bias:m={m},k={ffn},n={hdim}", pre + "output.dense", tok))
        sites.append(site(f"add_layernorm:m={m},n={hdim}", pre + "output (residual add + LayerNorm)", tok))
    sites.append(site(f"linear_bias:m={b},k={hdim},n={hdim}", "pooler.dense (tanh outside)", {"m": "batch"}))
    notes = [
        "BERT-base uncased (Hugging Face BertModel): 12 layers, hidden 768, 12 heads of 64, FFN 3072; m = batch x seq "
        "tokens, no padding (the attention mask is all ones and left out).",
        "Query, key, value and the attention output are separate 768 -> 768 linears with bias: linear_bias.",
        "Attention: softmax(QK^T/sqrt(64))V over the sequence, not causal: attention (b = batch, h = 12, d = 64).",
        "Residual add + LayerNorm (post-norm, after the attention output and after the FFN): add_layernorm.",
        "FFN: linear 768 -> 3072 + GELU is linear_bias_gelu. BERT's GELU is the exact erf form; fusecal's is the tanh "
        "approximation (the same traffic and nearly the same arithmetic); then linear 3072 -> 768 with bias: "
        "linear_bias.",
        "Outside the sites: the embedding gathers and two of the three embedding adds, dropout (identity in eval), "
        "the pooler's tanh.",
    ]
    return document("bert_base", "BERT-base (Hugging Face), 12 layers: QKV/out/FFN linears, attention, add+LayerNorm",
                    "Devlin et al. 2018, transformers BertModel (bert-base-uncased config)", notes, b, sites, seq=s,
                    configurations=[{"batch": 1, "seq": 128}, {"batch": 8, "seq": 512}])


# ---------------------------------------------------------------- ViT-B/16


def vit_b16():
    b, s, hdim, heads, mlp, layers = 1, 197, 768, 12, 3072, 12
    m = b * s
    tok = {"m": "batch*seq"}
    sites = [site(f"add_layernorm:m={m},n={hdim}", "encoder.pos_embedding add + encoder.layers.0.ln_1", tok)]
    for i in range(layers):
        pre = f"encoder.layers.encoder_layer_{i}."
        sites.append(site(f"linear_bias:m={m},k={hdim},n={3 * hdim}", pre + "self_attention.in_proj", tok))
        sites.append(site(f"attention:b={b},h={heads},s={s},d={hdim // heads},causal=0", pre + "self_attention",
                          {"b": "batch", "s": "seq"}))
        sites.append(site(f"linear_bias:m={m},k={hdim},n={hdim}", pre + "self_attention.out_proj", tok))
        sites.append(site(f"add_layernorm:m={m},n={hdim}", pre + "residual add + ln_2", tok))
        sites.append(site(f"linear_bias_gelu:m={m},k={hdim},n={mlp}", pre + "mlp.0+1 (linear+gelu)", tok))
        sites.append(site(f"linear_bias:m={m},k={mlp},n={hdim}", pre + "mlp.3", tok))
        nxt = f"encoder.layers.encoder_layer_{i + 1}.ln_1" if i + 1 < layers else "encoder.ln"
        sites.append(site(f"add_layernorm:m={m},n={hdim}", pre + "residual add + " + nxt, tok))
    sites.append(site(f"linear_bias:m={b},k={hdim},n=1000", "heads.head", {"m": "batch"}))
    notes = [
        "torchvision vit_b_16: 224x224 in 16x16 patches, 196 patches + the class token = 197 tokens (seq), hidden 768, "
        "12 heads of 64, MLP 3072, 12 pre-norm encoder layers.",
        "The attention's in_proj is one 768 -> 2304 linear with bias (nn.MultiheadAttention), out_proj 768 -> 768: "
        "linear_bias; attention over 197 tokens, not causal.",
        "Pre-norm: each residual add is followed by the next LayerNorm (ln_2 after the attention's add, the next "
        "layer's ln_1 or the final ln after the MLP's add; the first ln_1 after the position embedding add): "
        "add_layernorm. A pre-norm block also keeps the sum as the residual stream; fusecal's add_layernorm writes "
        "only the normalized output, so the real fused kernel writes one tensor more than the site.",
        "MLP: linear 768 -> 3072 + GELU is linear_bias_gelu (torchvision uses the exact erf GELU, fusecal the tanh "
        "form); linear 3072 -> 768 with bias is linear_bias.",
        "Outside the sites: the 16x16/16 patch embedding conv (no BN or activation), the class token concat, dropout, "
        "the head's class-token slice.",
    ]
    return document("vit_b16", "ViT-B/16 (torchvision), 224x224, 197 tokens: linears, attention, add+LayerNorm",
                    "Dosovitskiy et al. 2020, torchvision.models.vit_b_16", notes, b, sites, seq=s,
                    configurations=[{"batch": 1, "seq": 197}])


# ---------------------------------------------------------------- LLaMA-3-8B

LLAMA_NOTES = [
    "Meta-Llama-3-8B (Hugging Face LlamaForCausalLM config): 32 layers, hidden 4096, 32 query heads and 8 "
    "key/value heads (grouped-query attention) of 128, MLP 14336 (SwiGLU), vocabulary 128256, no biases.",
    "RMSNorm: each residual add followed by the next RMSNorm is add_rmsnorm (it writes the new residual too): "
    "post_attention_layernorm after the attention's add (32), the next layer's input_layernorm after the MLP's add "
    "(31) and the final norm (1); layer 0's input_layernorm has no add before it and is left outside. LLaMA-3's "
    "epsilon is 1e-5, fusecal's 1e-6 (the same work).",
    "RoPE: LLaMA-3 rotates q and k with no q/k norm; fusecal's rotary pattern is qk_norm_rope (a per-head RMSNorm "
    "then the rotation, as Qwen3 and OLMo-2 do), so the q and k sites add a norm pass LLaMA does not run: their "
    "unfused chain is one pass longer than LLaMA's and their saving overstates the rotation's alone. The rotary "
    "base (500000 in LLaMA-3, 10000 in fusecal) changes the table, not the cost.",
    "Attention: softmax(QK^T/sqrt(128))V with 32 query heads sharing 8 key/value heads (hkv = 8), causal.",
    "MLP: gate_proj and up_proj (4096 -> 14336 each, no bias), SiLU of the gate times the up projection: "
    "linear_swiglu (one GEMM of 2 x 14336 outputs and the gated product).",
    "Outside the sites: the q/k/v/o projections and down_proj (GEMMs without bias or activation; the residual adds "
    "after o_proj and down_proj are the add_rmsnorm sites' adds), the embedding gather, layer 0's input norm and "
    "the lm_head (4096 -> 128256).",
]


def llama3_8b(decode):
    layers, hdim, heads, kv, d, ffn = 32, 4096, 32, 8, 128, 14336
    b = 1
    if decode:
        seq, m, s = 4096, b, 1
        tok = {"m": "batch"}
        att = f"attention:b={b},h={heads},hkv={kv},s=1,skv={seq},d={d},causal=1"
        att_scale = {"b": "batch", "skv": "seq"}
    else:
        seq = 512
        m, s = b * seq, seq
        tok = {"m": "batch*seq"}
        att = f"attention:b={b},h={heads},hkv={kv},s={s},skv={s},d={d},causal=1"
        att_scale = {"b": "batch", "s": "seq", "skv": "seq"}
    sites = []
    for i in range(layers):
        pre = f"model.layers.{i}."
        sites.append(site(f"qk_norm_rope:m={m},h={heads},d={d}", pre + "self_attn q rope", tok,
                          note="LLaMA-3 has no q norm: the site's norm pass is extra"))
        sites.append(site(f"qk_norm_rope:m={m},h={kv},d={d}", pre + "self_attn k rope", tok,
                          note="LLaMA-3 has no k norm: the site's norm pass is extra"))
        sites.append(site(att, pre + "self_attn (GQA, causal)", att_scale))
        sites.append(site(f"add_rmsnorm:m={m},n={hdim}", pre + "residual add + post_attention_layernorm", tok))
        sites.append(site(f"linear_swiglu:m={m},k={hdim},n={ffn}", pre + "mlp.gate_proj+up_proj+silu*mul", tok))
        nxt = f"model.layers.{i + 1}.input_layernorm" if i + 1 < layers else "model.norm"
        sites.append(site(f"add_rmsnorm:m={m},n={hdim}", pre + "residual add + " + nxt, tok))
    notes = list(LLAMA_NOTES)
    if decode:
        notes.append("Decode: one new token per sequence (m = batch) against a KV cache of 4096 positions (seq = the "
                     "cache length; --seq changes it): attention s = 1, skv = 4096. The rotary sites rotate the new "
                     "token at position 0 of fusecal's table instead of 4096 (the same work).")
        return document("llama3_8b_decode", "LLaMA-3-8B decode, one token against a 4096-token KV cache: add+RMSNorm, "
                        "RoPE, GQA attention, SwiGLU", "Meta Llama 3 (2024), Hugging Face Meta-Llama-3-8B config.json",
                        notes, b, sites, seq=seq, configurations=[{"batch": 1, "seq": 4096}])
    notes.append("Prefill: 512 tokens per sequence (m = batch x seq), causal attention over them (s = skv = seq).")
    return document("llama3_8b_prefill", "LLaMA-3-8B prefill of 512 tokens: add+RMSNorm, RoPE, GQA attention, SwiGLU",
                    "Meta Llama 3 (2024), Hugging Face Meta-Llama-3-8B config.json", notes, b, sites, seq=seq,
                    configurations=[{"batch": 1, "seq": 512}])


def dumps(doc):
    """Indented, one site per line."""
    parts = []
    for k, v in doc.items():
        if k == "sites":
            body = ",\n".join("    " + json.dumps(x, ensure_ascii=False) for x in v)
            parts.append(f'  "sites": [\n{body}\n  ]')
        elif k == "notes":
            body = ",\n".join("    " + json.dumps(x, ensure_ascii=False) for x in v)
            parts.append(f'  "notes": [\n{body}\n  ]')
        else:
            parts.append(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


MODELS = {"resnet50": resnet50, "mobilenet_v2": mobilenet_v2, "bert_base": bert_base, "vit_b16": vit_b16,
          "llama3_8b_prefill": lambda: llama3_8b(False), "llama3_8b_decode": lambda: llama3_8b(True)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "patterns", "networks"))
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), help="write only these")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name in a.only or MODELS:
        path = os.path.join(a.out, name + ".json")
        with open(path, "w") as f:
            f.write(dumps(MODELS[name]()))
        print(path, file=sys.stderr)


if __name__ == "__main__":
    main()
