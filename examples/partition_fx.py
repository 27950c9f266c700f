#!/usr/bin/env python3
"""partition_fx.py - a fuse plan for a torchvision model from a fusecal calibration.

Traces the model with torch.fx (random weights, nothing downloaded), finds its
fusion sites - conv -> BN (-> ReLU), conv -> BN -> residual add -> ReLU (a
residual block's end), depthwise and grouped convs, conv -> ReLU, linear
(-> ReLU/GELU), multi-head attention with its projections and residual add ->
LayerNorm - writes each as a fusecal problem string, and prints, per site, the
answer of the calibration: measured, predicted (with --fusecal, which runs
`fusecal predict` for the problems nobody measured) or unknown; then what fusing
the yes sites saves per inference.

    examples/partition_fx.py results/cpu-amd-epyc-f25m17-2c/standard.json --model resnet18 \\
        --fusecal build/fusecal
    examples/partition_fx.py --model mnasnet0_5 --write-network mnasnet.json
    fusecal run --network mnasnet.json        # measure exactly that model's sites

ReLU6 counts as ReLU (the same traffic, one clamp more per element), as the
network files under patterns/networks/ count it; the site says so. A site
fusecal has no pattern for (a depthwise conv without BN and ReLU after it, a
residual add without a ReLU after it, a conv with different strides per axis,
ops met outside a traced graph) is listed with the reason and left out of the
plan. --write-network writes the sites as a network file
(schemas/network.schema.json) that `fusecal run --network` and `fusecal predict
--network` take.
"""
import argparse
import json
import operator
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
    if isinstance(m, torch.nn.ReLU6) or node.target is torch.nn.functional.relu6:
        return "ReLU6"
    if isinstance(m, (torch.nn.Hardswish, torch.nn.SiLU, torch.nn.Sigmoid)):
        return type(m).__name__
    return None


RELU6_NOTE = " (ReLU6, counted as ReLU: the same traffic)"


def relu_like(act):
    """The note of an activation fusecal's ReLU patterns stand for ("" for ReLU),
    or None."""
    return {"relu": "", "ReLU6": RELU6_NOTE}.get(act)


def conv_bn_output(gm, node):
    """Whether node is a BatchNorm2d applied to a Conv2d's output."""
    return isinstance(module_of(gm, node), torch.nn.BatchNorm2d) and \
        isinstance(module_of(gm, node.args[0] if node.args else None), torch.nn.Conv2d)


def tensor_add(node):
    """Whether node adds two tensors of one shape (a residual connection's add)."""
    if node is None or node.op not in ("call_function", "call_method"):
        return False
    if node.target not in (operator.add, operator.iadd, torch.add, "add", "add_") or len(node.args) != 2:
        return False
    a, b = node.args
    return all(isinstance(x, torch.fx.Node) for x in (a, b)) and shape(a) is not None and shape(a) == shape(b)


def residual_add(gm, node, operand):
    """Whether node is a residual add of operand (a conv -> BN's output) that is
    operand's to fuse: operand is the first term (out += identity), or the first
    term is no conv -> BN's that could take it, one whose only user is this add (a
    downsampling branch's conv -> BN is the second term and stays conv_bn)."""
    if not tensor_add(node) or operand not in node.args:
        return False
    first = node.args[0]
    return operand is first or not (conv_bn_output(gm, first) and len(first.users) == 1)


def pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def conv_site(gm, node, conv, layout, dtype):
    """(problem, note) or (None, why): the conv and the ops after it that one of
    fusecal's conv patterns covers."""
    n, c, h, w = shape(node.args[0])
    (r, s), (sh, sw), (ph, pw), (dh, dw) = pair(conv.kernel_size), pair(conv.stride), pair(conv.padding), \
        pair(conv.dilation)
    if sh != sw or ph != pw or (dh, dw) != (1, 1) or isinstance(conv.padding, str):
        return None, f"stride {conv.stride}, padding {conv.padding}, dilation {conv.dilation}: fusecal takes one of each"
    g, k = conv.groups, conv.out_channels
    depthwise = g > 1 and g == c == k
    pattern, note, last = "conv", "", node
    if isinstance(module_of(gm, only_user(node)), torch.nn.BatchNorm2d):
        pattern, last = "conv_bn", only_user(node)
    nxt = only_user(last)
    if pattern == "conv_bn" and residual_add(gm, nxt, last):
        act = activation(gm, only_user(nxt))
        if relu_like(act) is not None and not depthwise:
            pattern, note = "conv_bn_add_relu", relu_like(act)
        else:
            act = "residual add"
            note = " (the residual add after it stays a separate op: fusecal's residual pattern ends in ReLU)"
    else:
        act = activation(gm, nxt)
        if relu_like(act) is not None:
            pattern, note = pattern + "_relu", relu_like(act)
        elif act:
            note = f" ({act} after it stays a separate op)"
    if depthwise:
        if pattern != "conv_bn_relu":
            after = " + ".join(op for op, there in (("BN", "_bn" in pattern), (act, bool(act))) if there) or "nothing"
            return None, f"depthwise conv (groups={g}) + {after}: fusecal's depthwise pattern is conv + BN + ReLU " \
                         "(dwconv_bn_relu)"
        pattern = "dwconv_bn_relu"
    if pattern == "conv":
        return None, "a conv with neither BN nor ReLU after it: nothing to fuse"
    dims = f"n={n},c={c},h={h},w={w},k={k},r={r},s={s},stride={sh},pad={ph}"
    if g > 1 and not depthwise:
        dims += f",g={g}"
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


def attention_sites(name, q, mha, dtype):
    """[(name, problem)] of a multi-head attention: its input projection (one
    linear for q, k and v), the attention and its output projection; q: the
    query's shape."""
    if mha.batch_first:
        b, s = q[0], q[1]
    else:
        s, b = q[0], q[1]
    e = mha.embed_dim
    out = []
    if mha._qkv_same_embed_dim and mha.in_proj_bias is not None:
        out.append((f"{name}.in_proj", f"linear_bias:m={b * s},k={e},n={3 * e},dtype={dtype}"))
    out.append((name, f"attention:b={b},h={mha.num_heads},s={s},d={e // mha.num_heads},causal=0,dtype={dtype}"))
    if mha.out_proj.bias is not None:
        out.append((f"{name}.out_proj", f"linear_bias:m={b * s},k={e},n={e},dtype={dtype}"))
    return out


PASS_THROUGH = (torch.nn.Dropout, torch.nn.Identity)  # identities in eval mode


def norm_site(gm, node, ln, dtype):
    """(problem, note) of a LayerNorm over the last dim after a residual add (dropout
    between them passes it on unchanged in eval mode): add_layernorm; (None, None)
    for another LayerNorm (nothing before it to fuse)."""
    src, shared = node.args[0] if node.args else None, False
    while src is not None and isinstance(module_of(gm, src), PASS_THROUGH):
        shared, src = shared or len(src.users) > 1, src.args[0]
    if len(ln.normalized_shape) != 1 or not ln.elementwise_affine or not (tensor_add(src) or embedding_add(src)):
        return None, None
    dims = shape(node)
    m = 1
    for d in dims[:-1]:
        m *= d
    notes = []
    if embedding_add(src) and not tensor_add(src):
        notes.append("r is a parameter broadcast over the batch: a fused kernel reads it once")
    if shared or len(src.users) > 1:
        notes.append("the sum is also used after it, as the residual stream: a fused kernel writes it too, one "
                     "tensor more than the site")
    return f"add_layernorm:m={m},n={dims[-1]},dtype={dtype}", f" ({'; '.join(notes)})" if notes else ""


def embedding_add(node):
    """Whether node adds a parameter broadcast over the batch (a position embedding)
    to a tensor of its shape but the batch."""
    if node is None or node.op != "call_function" or node.target not in (operator.add, torch.add) or \
            len(node.args) != 2 or not all(isinstance(x, torch.fx.Node) for x in node.args):
        return False
    a, b = node.args
    if a.op == "get_attr":
        a, b = b, a
    sa, sb = shape(a), shape(b)
    return b.op == "get_attr" and sa is not None and sb is not None and len(sa) == len(sb) and sb[0] == 1 and \
        sa[1:] == sb[1:]


class _SiteProxy(torch.fx.Proxy):
    """A proxy that unpacks a multi-head attention's (output, weights) pair itself:
    torch.fx's own unpacking reads the caller's bytecode, which fails with torch 1.13
    on Python 3.11 (torchvision's ViT encoder block: x, _ = self.self_attention(...))."""

    def __iter__(self):
        n = self.node
        if n.op == "call_module" and isinstance(self.tracer.root.get_submodule(n.target), torch.nn.MultiheadAttention):
            return iter((self[0], self[1]))
        return super().__iter__()


class _SiteTracer(torch.fx.Tracer):
    def proxy(self, node):
        return _SiteProxy(node, self)


def trace(module):
    return torch.fx.GraphModule(module, _SiteTracer().trace(module))


def traced_parts(model, example):
    """[(prefix, GraphModule with shapes, or None)] covering the model: the model
    itself when torch.fx traces it, else its children, recursively (a model whose
    forward reads shapes in Python, such as torchvision's ViT, traces by parts; a
    container its parent iterates, never called itself, by its children). A
    multi-head attention, conv, linear or LayerNorm met on the way is a part of its
    own (None); the outputs returned beside give its shape (the query's: it may be
    called with keywords, which forward hooks do not see)."""
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

    def visit_children(name, m):
        for child, c in m.named_children():
            visit(f"{name}.{child}" if name else child, c)

    def visit(name, m):
        if name not in inputs:  # never called itself: a container (ModuleList) whose children the parent calls
            visit_children(name, m)
            return
        if isinstance(m, (torch.nn.MultiheadAttention, torch.nn.Conv2d, torch.nn.Linear, torch.nn.LayerNorm)):
            parts.append((name, None))  # a site met alone: what follows it is not in a graph
            return
        try:
            gm = trace(m)
        except Exception:  # torch.fx raises several kinds for code it cannot trace
            visit_children(name, m)
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
                for name, problem in attention_sites(prefix, tuple(outputs[prefix][0].shape), m, dtype):
                    found.setdefault(problem, []).append((name, ""))
            elif isinstance(m, torch.nn.LayerNorm):
                skipped.append((prefix, "a LayerNorm met outside a traced graph: whether a residual add comes before "
                                        "it (add_layernorm) is unknown"))
            else:
                skipped.append((prefix, "met outside a traced graph: the ops after it are unknown"))
            continue
        for node in gm.graph.nodes:
            m = module_of(gm, node)
            name = f"{prefix}.{node.target}" if prefix else node.target
            if isinstance(m, torch.nn.MultiheadAttention):
                q = node.args[0] if node.args else node.kwargs.get("query")
                for site, problem in attention_sites(name, shape(q), m, dtype):
                    found.setdefault(problem, []).append((site, ""))
                continue
            if isinstance(m, torch.nn.Conv2d):
                problem, why = conv_site(gm, node, m, layout, dtype)
            elif isinstance(m, torch.nn.Linear):
                problem, why = linear_site(gm, node, m, dtype)
            elif isinstance(m, torch.nn.LayerNorm):
                problem, why = norm_site(gm, node, m, dtype)
                if problem is None:
                    continue
            else:
                continue
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


SCALES = {"conv": {"n": "batch"}, "linear": {"m": "batch"}, "attention": {"b": "batch"}, "norm": {"m": "batch"}}


def network_file(model_name, batch, image, found, skipped):
    """The sites as a network file (schemas/network.schema.json): problems without
    layout and dtype, which `fusecal run --network` takes from --layout and --dtype,
    each site's dim that holds the batch scaled with --batch."""
    sites = []
    for problem, names in found.items():
        pattern, _, body = problem.partition(":")
        dims = ",".join(t for t in body.split(",") if not t.startswith(("layout=", "dtype=")))
        site = {"problem": f"{pattern}:{dims}", "multiplicity": len(names), "names": [n for n, _ in names]}
        if fusecal.PATTERNS[pattern] in SCALES:
            site["scale"] = SCALES[fusecal.PATTERNS[pattern]]
        notes = sorted({part for _, note in names if note for part in note.strip()[1:-1].split("; ")})
        if notes:
            site["note"] = "; ".join(notes)
        sites.append(site)
    return {
        "schema": "fusecal-network",
        "schema_version": 1,
        "name": model_name,
        "description": f"torchvision {model_name}, {image}x{image}: the fusion sites examples/partition_fx.py "
                       "found in its torch.fx graph",
        "source": f"torchvision.models.{model_name} (torchvision {torchvision.__version__}), random weights, "
                  "traced with torch.fx",
        "notes": [f"left out: {name}: {why}" for name, why in skipped],
        "batch": batch,
        "sites": sites,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("documents", nargs="*", help="calibration documents (and predict documents) from fusecal")
    ap.add_argument("--model", default="resnet18", help="a torchvision classification model (default resnet18)")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--image", type=int, default=224, help="input height and width")
    ap.add_argument("--layout", default="nhwc", choices=["nhwc", "nchw"], help="conv layout to ask about")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "tf32", "bf16", "fp16"])
    ap.add_argument("--backend", help="answer for this backend only (default: per site, the fastest fused form)")
    ap.add_argument("--fusecal", help="the fusecal binary: predict the problems the documents do not hold")
    ap.add_argument("--write-network", metavar="FILE",
                    help="write the sites as a network file for fusecal run/predict --network")
    a = ap.parse_args()
    if not a.documents and not a.write_network:
        ap.error("give calibration documents, --write-network FILE or both")
    if not hasattr(torchvision.models, a.model):
        ap.error(f"torchvision {torchvision.__version__} has no model '{a.model}'")

    torch.manual_seed(0)
    model = getattr(torchvision.models, a.model)(weights=None).eval()
    found, skipped = sites(model, a.batch, a.image, a.layout, a.dtype)
    if a.write_network:
        with open(a.write_network, "w") as f:
            json.dump(network_file(a.model, a.batch, a.image, found, skipped), f, indent=1)
            f.write("\n")
        print(f"wrote {a.write_network}: {sum(len(n) for n in found.values())} sites, {len(found)} distinct "
              f"problems, {len(skipped)} left out")
    if not a.documents:
        return 0
    cal = fusecal.load(*a.documents)
    if a.fusecal:
        calibrations = [d for d in a.documents if fusecal_kind(d) == "fusecal-calibration"]
        cal.add(fusecal.predict(calibrations, list(found), fusecal=a.fusecal))
    print_plan(a.model, plan(cal, found, a.backend), skipped, cal, a.backend)
    return 0


def fusecal_kind(path):
    with open(path) as f:
        return json.load(f).get("schema")


if __name__ == "__main__":
    sys.exit(main())
