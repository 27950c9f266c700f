#!/usr/bin/env python3
"""partition_fx.py - a fuse plan for a torchvision model from a fusecal calibration.

Traces the model with torch.fx (random weights, nothing downloaded), finds its
fusion sites - conv -> BN (-> ReLU), conv -> ReLU, linear (-> ReLU/GELU) and
multi-head attention - writes each as a fusecal problem string, and prints, per
site, the answer of the calibration: measured, predicted (with --fusecal, which
runs `fusecal predict` for the problems nobody measured) or unknown; then what
fusing the yes sites saves per inference.

    examples/partition_fx.py results/cpu-amd-epyc-2c/standard.json --model resnet18 \\
        --fusecal build/fusecal

A site fusecal has no pattern for (a grouped or depthwise conv, ReLU6, a conv with
different strides per axis) is listed with the reason and left out of the plan.
"""
import argparse
import os
import sys
from collections import OrderedDict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import fusecal  # noqa: E402

try:
    import torch
    import torch.fx
    import torchvision
    from torch.fx.passes.shape_prop import ShapeProp
except ImportError as e:  # the test skips (77) without torch
    print(f"partition_fx.py: needs torch and torchvision: {e}", file=sys.stderr)
    sys.exit(77)


def shape(node):
    meta = node.meta.get("tensor_meta")
    return tuple(meta.shape) if meta is not None else None


def only_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


def module_of(gm, node):
    return gm.get_submodule(node.target) if node is not None and node.op == "call_module" else None


def activation(gm, node):
    """'relu', 'gelu', another activation's name, or None when node is none."""
    if node is None:
        return None
    m = module_of(gm, node)
    if isinstance(m, torch.nn.ReLU) or node.target in (torch.relu, torch.nn.functional.relu):
        return "relu"
    if isinstance(m, torch.nn.GELU) or node.target is torch.nn.functional.gelu:
        return "gelu"
    if isinstance(m, (torch.nn.ReLU6, torch.nn.Hardswish, torch.nn.SiLU, torch.nn.Sigmoid)):
        return type(m).__name__
    return None


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_site(gm, node, conv, layout, dtype):
    """(problem, ops it covers) or (None, why)."""
    n, c, h, w = shape(node.args[0])
    (r, s), (sh, sw), (ph, pw), (dh, dw) = pair(conv.kernel_size), pair(conv.stride), pair(conv.padding), \
        pair(conv.dilation)
    if conv.groups != 1:
        return None, f"grouped conv (groups={conv.groups}): no fusecal pattern"
    if sh != sw or ph != pw or (dh, dw) != (1, 1) or isinstance(conv.padding, str):
        return None, f"stride {conv.stride}, padding {conv.padding}, dilation {conv.dilation}: fusecal takes one of each"
    nxt = only_user(node)
    bn = module_of(gm, nxt)
    pattern = "conv"
    if isinstance(bn, torch.nn.BatchNorm2d):
        pattern, node = "conv_bn", nxt
    act = activation(gm, only_user(node))
    note = ""
    if act == "relu":
        pattern += "_relu"
    elif act:
        note = f" ({act} after it stays a separate op)"
    if pattern == "conv":
        return None, "a conv with neither BN nor ReLU after it: nothing to fuse"
    dims = f"n={n},c={c},h={h},w={w},k={conv.out_channels},r={r},s={s},stride={sh},pad={ph}"
    return f"{pattern}:{dims},layout={layout},dtype={dtype}", note


def linear_site(gm, node, lin, dtype):
    if lin.bias is None:
        return None, "a linear without bias: no fusecal pattern"
    x = shape(node.args[0])
    m = 1
    for d in x[:-1]:
        m *= d
    act = activation(gm, only_user(node))
    pattern = {"relu": "linear_bias_relu", "gelu": "linear_bias_gelu"}.get(act, "linear_bias")
    note = f" ({act} after it stays a separate op)" if act and pattern == "linear_bias" else ""
    return f"{pattern}:m={m},k={lin.in_features},n={lin.out_features},dtype={dtype}", note


def attention_site(q, mha, dtype):
    """q: the query's shape."""
    if mha.batch_first:
        b, s = q[0], q[1]
    else:
        s, b = q[0], q[1]
    return f"attention:b={b},h={mha.num_heads},s={s},d={mha.embed_dim // mha.num_heads},causal=0,dtype={dtype}"


def traced_parts(model, example):
    """[(prefix, GraphModule with shapes, or None)] covering the model: the model
    itself when torch.fx traces it, else its children, recursively (a model whose
    forward reads shapes in Python, such as torchvision's ViT, traces by parts).
    A multi-head attention, conv or linear met on the way is a part of its own
    (None); the outputs
    returned beside give its shape (the query's: it may be called with keywords,
    which forward hooks do not see)."""
    inputs, outputs, hooks = {}, {}, []

    def keep(name):
        def hook(module, args, output):
            inputs.setdefault(name, args)  # returns None: the output stays
            outputs.setdefault(name, output)
        return hook

    for name, m in model.named_modules():
        hooks.append(m.register_forward_hook(keep(name)))
    with torch.no_grad():
        model(example)
    for h in hooks:
        h.remove()
    parts = []

    def visit(name, m):
        if name not in inputs:
            return  # never called
        if isinstance(m, (torch.nn.MultiheadAttention, torch.nn.Conv2d, torch.nn.Linear)):
            parts.append((name, None))  # a site met alone: what follows it is not in a graph
            return
        try:
            gm = torch.fx.symbolic_trace(m)
        except Exception:  # torch.fx raises several kinds for code it cannot trace
            for child, c in m.named_children():
                visit(f"{name}.{child}" if name else child, c)
            return
        ShapeProp(gm).propagate(*inputs[name])
        parts.append((name, gm))

    visit("", model)
    return parts, outputs


def sites(model, batch, image, layout, dtype):
    """OrderedDict problem -> [(name, note)], and [(name, why)] of the sites left out."""
    found, skipped = OrderedDict(), []
    parts, outputs = traced_parts(model, torch.randn(batch, 3, image, image))
    for prefix, gm in parts:
        if gm is None:
            m = model.get_submodule(prefix)
            if isinstance(m, torch.nn.MultiheadAttention):
                found.setdefault(attention_site(tuple(outputs[prefix][0].shape), m, dtype), []).append((prefix, ""))
            else:
                skipped.append((prefix, "met outside a traced graph: the ops after it are unknown"))
            continue
        for node in gm.graph.nodes:
            m = module_of(gm, node)
            if isinstance(m, torch.nn.Conv2d):
                problem, why = conv_site(gm, node, m, layout, dtype)
            elif isinstance(m, torch.nn.Linear):
                problem, why = linear_site(gm, node, m, dtype)
            elif isinstance(m, torch.nn.MultiheadAttention):
                problem, why = attention_site(shape(node.args[0]), m, dtype), ""
            else:
                continue
            name = f"{prefix}.{node.target}" if prefix else node.target
            if problem is None:
                skipped.append((name, why))
            else:
                found.setdefault(problem, []).append((name, why))
    return found, skipped


def plan(cal, found, backend):
    rows = []
    for problem, names in found.items():
        a = cal.answer(problem, backend)
        rows.append((names, problem, a))
    return rows


def print_plan(model_name, rows, skipped, cal, backend):
    print(f"fuse plan for {model_name}: {sum(len(n) for n, _, _ in rows)} sites, {len(rows)} distinct problems\n")
    for names, problem, a in rows:
        shown = names[0][0] + (f" (+{len(names) - 1} more)" if len(names) > 1 else "")
        print(f"{shown}  x{len(names)}{names[0][1]}\n  {problem}")
        if a.source == "unknown":
            print(f"  {a.backend or '-'}: unknown: {a.reason}")
        else:
            print(f"  {a.backend}: {a.source}, speedup {a.speedup:.3f} [{a.ci95[0]:.3f}, {a.ci95[1]:.3f}], "
                  f"fuse: {a.decision}")
    if skipped:
        print("\nleft out:")
        for name, why in skipped:
            print(f"  {name}: {why}")
    print("\nper inference, the sites above:")
    for s in cal.network_summary([(p, len(n)) for n, p, _ in rows]):
        if backend and s["backend"] != backend:
            continue
        lo, hi = s["saving_ci95"]
        print(f"  {s['backend']}: {s['known']} of {s['sites']} problems answered, unfused {s['unfused_ms']:.4g} ms; "
              f"fusing the {len(s['fuse'])} yes saves {s['saving_ms']:.4g} ms [{lo:.4g}, {hi:.4g}]")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("documents", nargs="+", help="calibration documents (and predict documents) from fusecal")
    ap.add_argument("--model", default="resnet18", help="a torchvision classification model (default resnet18)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--image", type=int, default=224, help="input height and width")
    ap.add_argument("--layout", default="nhwc", choices=["nhwc", "nchw"], help="conv layout to ask about")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "tf32", "bf16", "fp16"])
    ap.add_argument("--backend", help="answer for this backend only (default: per site, the fastest fused form)")
    ap.add_argument("--fusecal", help="the fusecal binary: predict the problems the documents do not hold")
    a = ap.parse_args()

    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).eval()
    found, skipped = sites(model, a.batch, a.image, a.layout, a.dtype)
    cal = fusecal.load(*a.documents)
    if a.fusecal:
        calibrations = [d for d in a.documents if fusecal_kind(d) == "fusecal-calibration"]
        cal.add(fusecal.predict(calibrations, list(found), fusecal=a.fusecal))
    print_plan(a.model, plan(cal, found, a.backend), skipped, cal, a.backend)
    return 0


def fusecal_kind(path):
    import json
    with open(path) as f:
        return json.load(f).get("schema")


if __name__ == "__main__":
    sys.exit(main())
