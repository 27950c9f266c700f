#!/usr/bin/env python3
"""A whole network in PyTorch, eager against BN-folded/fused, beside fusecal's
prediction of what fusing its sites saves.

    bench/network_vs_pytorch.py CALIBRATION.json [--network MODEL]
                                [--backend B] [--rounds R] [--threads N] [--layout nhwc|nchw]
    bench/network_vs_pytorch.py --no-calibration --network resnet50   # PyTorch alone

MODEL is a torchvision classification model (default resnet50). CALIBRATION.json
comes from `fusecal run --network NAME` on the same machine (its "network" block:
the saving per inference of fusing every yes site, and of every site), NAME the
built-in network of that model (resnet50, mobilenet_v2) or the file
examples/partition_fx.py --model MODEL --write-network writes (any other model).
Without one the script prints the command that makes it.

PyTorch (Debian's python3-torch 1.13, torchvision 0.14; random weights, no
downloads; eval mode; batch 1, 224x224, fp32; one OpenMP pool: torch.set_num_threads
= fusecal's threads, all cores), each variant timed in rounds, interleaved in a
shuffled order per round:
  eager    the torchvision model as is: Conv2d -> BatchNorm2d -> ReLU(inplace) as
           separate calls; PyTorch fuses nothing itself in eager mode
  folded   torch.fx.experimental.optimization.fuse: BN folded into the conv weights
           (the ReLU and the residual add stay separate, in-place calls)
  frozen   torch.jit.freeze + torch.jit.optimize_for_inference: BN folded, the
           convolutions as oneDNN (MKLDNN) ones on tensors in oneDNN's blocked layout;
           which ReLUs and adds it folds into them shows in the graph the script
           prints (with Debian's 1.13 the ReLUs and adds stay separate in-place ops:
           prim::mkldnn_convolution, aten::relu_, aten::add_)
  onednn   the control: torch.utils.mkldnn.to_mkldnn, eager on oneDNN tensors: the
           same oneDNN convolutions as frozen, but conv, BN, ReLU and the add as
           separate calls, so eager - onednn is what the implementation changes and
           onednn - frozen what fusion alone saves (resnet50 only: oneDNN tensors
           have no ReLU6, which MobileNetV2 uses)
The realized saving is eager - best(folded, frozen), per inference, with a t interval
over rounds; the ratio predicted / realized compares it with fusecal's.

What the difference can come from (printed with the numbers):
  - ops outside the sites: pooling, the residual adds MobileNetV2 has without a
    ReLU, flatten, the classifier's dropout; eager's time minus the sites' unfused
    time (fusecal's) bounds them with PyTorch's per-op dispatch overhead;
  - layouts: fusecal times each site in its own buffers (NHWC by default); PyTorch
    carries channels_last (or NCHW) tensors, the frozen graph oneDNN's blocked
    layout with reorders at its ends;
  - what PyTorch fuses: folded removes the BN pass only; frozen folds BN and
    fuses whatever its graph shows; fusecal's sites fuse BN, ReLU and the add;
  - decisions: fusecal's "yes" saving counts only sites whose interval clears the
    threshold; PyTorch fuses every site, so the all-sites saving is printed too.
Run it on a quiet machine: the numbers move with other load.
"""
import argparse
import copy
import json
import os
import random
import statistics
import sys
import time

MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(1 << 30), "MALLOC_TRIM_THRESHOLD_": str(1 << 31)}
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        15: 2.131, 20: 2.086, 30: 2.042}


def t975(df):
    """Student's t 0.975 quantile (the nearest tabulated df below; normal past 30)."""
    if df > 30:
        return 1.96
    return T975[max(k for k in T975 if k <= df)]


def build(name, layout):
    import torch
    import torchvision
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    # random BN statistics, so folding changes the weights (fresh BN layers are identity)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    return model.to(memory_format=fmt), fmt


def variants(model, x):
    import torch
    import torch.fx.experimental.optimization as fxo
    out = {"eager": model}
    out["folded"] = fxo.fuse(model, inplace=False).eval()
    with torch.no_grad():
        frozen = torch.jit.freeze(torch.jit.script(model))
        out["frozen"] = torch.jit.optimize_for_inference(frozen)
        for _ in range(3):
            out["frozen"](x)  # the profiling executor settles on its plan
    try:
        from torch.utils import mkldnn
        dn = mkldnn.to_mkldnn(copy.deepcopy(model))
        with torch.no_grad():
            dn(x.to_mkldnn())
        out["onednn"] = lambda t: dn(t.to_mkldnn()).to_dense()
        out["onednn"].module = dn
    except (RuntimeError, NotImplementedError) as e:
        print(f"note: no onednn control: {str(e).splitlines()[0][:160]}")
    return out


def graph_ops(v):
    """Counts of the ops that matter in a variant's graph."""
    import torch
    v = getattr(v, "module", v)
    if isinstance(v, torch.jit.ScriptModule):
        kinds = [n.kind() for n in v.graph.nodes()]
        keep = ("conv", "batch_norm", "relu", "add", "hardtanh", "clamp", "mkldnn", "to_dense", "reorder")
        counts = {}
        for k in kinds:
            if any(s in k for s in keep):
                counts[k] = counts.get(k, 0) + 1
        return counts
    counts = {}
    for m in v.modules():
        n = type(m).__name__
        if n in ("Conv2d", "BatchNorm2d", "ReLU", "ReLU6", "Linear", "MkldnnConv2d", "MkldnnBatchNorm",
                 "MkldnnLinear"):
            counts[n] = counts.get(n, 0) + 1
    return counts


def check_outputs(vs, x):
    import torch
    with torch.no_grad():
        ref = vs["eager"](x)
        for name, v in vs.items():
            err = (v(x) - ref).norm() / ref.norm()
            if not err < 1e-3:
                sys.exit(f"network_vs_pytorch: {name} differs from eager by {err:.2e}")


def time_rounds(vs, x, rounds, min_time):
    """Per round and variant, the median ms of calls over at least min_time s."""
    import torch
    ms = {k: [] for k in vs}
    with torch.no_grad():
        for v in vs.values():
            for _ in range(3):
                v(x)
        for _ in range(rounds):
            order = list(vs)
            random.shuffle(order)
            for k in order:
                t, start = [], time.perf_counter()
                while time.perf_counter() - start < min_time or len(t) < 5:
                    t0 = time.perf_counter()
                    vs[k](x)
                    t.append((time.perf_counter() - t0) * 1e3)
                ms[k].append(statistics.median(t))
    return ms


def interval(diffs):
    m = statistics.mean(diffs)
    if len(diffs) < 2:
        return m, m, m
    h = t975(len(diffs) - 1) * statistics.stdev(diffs) / len(diffs) ** 0.5
    return m, m - h, m + h


def fusecal_summary(path, network, backend):
    with open(path) as f:
        doc = json.load(f)
    net = doc.get("network")
    if not net or net["name"] != network:
        sys.exit(f"network_vs_pytorch: {path} holds no summary of {network} (fusecal run --network {network})")
    sums = net["summaries"]
    if not backend and any(x["backend"] == "cpu.onednn" for x in sums):
        backend = "cpu.onednn"
    s = [x for x in sums if x["backend"] == backend] if backend else sums
    if not s:
        sys.exit(f"network_vs_pytorch: {path} has no summary for backend {backend}")
    s = max(s, key=lambda x: x["saving_ms"]) if not backend else s[0]
    all_sites = sum(p["saving_ms"] for p in s["per_site"] if p["measured"])
    return net, s, all_sites


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("calibration", nargs="?", help="a document from fusecal run --network")
    ap.add_argument("--no-calibration", action="store_true", help="time PyTorch alone")
    ap.add_argument("--network", default="resnet50", help="a torchvision classification model (default resnet50)")
    ap.add_argument("--backend", help="fusecal's backend to compare with (default: cpu.onednn, the library "
                    "PyTorch's frozen graph runs, else the one saving most)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--min-time", type=float, default=1.0, help="seconds of calls per variant and round")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--layout", choices=["nhwc", "nchw"], default="nhwc", help="fusecal's default is nhwc")
    ap.add_argument("--json", help="also write the numbers there")
    a = ap.parse_args()
    if not a.calibration and not a.no_calibration:
        net = a.network if a.network in ("resnet50", "mobilenet_v2") else f"{a.network}.json"
        how = "" if net == a.network else \
            f"examples/partition_fx.py --model {a.network} --write-network {net}, then "
        ap.error(f"give CALIBRATION.json (from: {how}fusecal run --network {net} --out network-{a.network}.json) or "
                 "--no-calibration")
    if any(k not in os.environ for k in MALLOC_ENV):
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **MALLOC_ENV})
    import torch
    import torchvision
    if not hasattr(torchvision.models, a.network):
        ap.error(f"torchvision {torchvision.__version__} has no model '{a.network}'")
    torch.set_num_threads(a.threads)
    model, fmt = build(a.network, a.layout)
    x = torch.randn(1, 3, 224, 224).to(memory_format=fmt)
    vs = variants(model, x)
    check_outputs(vs, x)
    ms = time_rounds(vs, x, a.rounds, a.min_time)
    med = {k: statistics.median(v) for k, v in ms.items()}
    best = min(("folded", "frozen"), key=lambda k: med[k])
    realized = interval([e - f for e, f in zip(ms["eager"], ms[best])])
    out = {"network": a.network, "torch": torch.__version__, "torchvision": torchvision.__version__,
           "threads": a.threads, "layout": a.layout, "rounds": a.rounds, "median_ms": med, "best_fused": best,
           "realized_saving_ms": realized, "mkldnn": torch.backends.mkldnn.is_available(),
           "graph_ops": {k: graph_ops(v) for k, v in vs.items()}}
    print(f"{a.network} batch 1, {a.layout}, {a.threads} threads, torch {torch.__version__}, "
          f"torchvision {torchvision.__version__}, oneDNN {'on' if out['mkldnn'] else 'off'}")
    for k in vs:
        print(f"  {k:7s} {med[k]:9.3f} ms  (rounds: {', '.join(f'{v:.3f}' for v in ms[k])})")
        print(f"          graph: {out['graph_ops'][k]}")
    print(f"realized saving (eager - {best}): {realized[0]:.3f} ms [{realized[1]:.3f}, {realized[2]:.3f}] "
          f"({100 * realized[0] / med['eager']:.1f}% of eager)")
    if "onednn" in ms:
        impl = interval([e - c for e, c in zip(ms["eager"], ms["onednn"])])
        fusion = interval([c - f for c, f in zip(ms["onednn"], ms["frozen"])])
        out.update({"implementation_ms": impl, "fusion_only_ms": fusion})
        print(f"  of which the implementation (eager - onednn): {impl[0]:.3f} ms [{impl[1]:.3f}, {impl[2]:.3f}]; "
              f"fusion alone (onednn - frozen): {fusion[0]:.3f} ms [{fusion[1]:.3f}, {fusion[2]:.3f}]")
    if a.calibration:
        net, s, all_sites = fusecal_summary(a.calibration, a.network, a.backend)
        pred, lo, hi = s["saving_ms"], s["saving_ci95"][0], s["saving_ci95"][1]
        out.update({"fusecal_backend": s["backend"], "predicted_saving_ms": [pred, lo, hi],
                    "predicted_all_sites_ms": all_sites, "sites_unfused_ms": s["unfused_ms"],
                    "ratio_predicted_realized": pred / realized[0] if realized[0] else None})
        print(f"fusecal ({s['backend']}, {a.calibration}): {s['measured']} of {s['sites']} sites measured, "
              f"unfused {s['unfused_ms']:.3f} ms per inference")
        print(f"  predicted saving, the {s['fuse_yes']} yes sites: {pred:.3f} ms [{lo:.3f}, {hi:.3f}]; "
              f"every site fused: {all_sites:.3f} ms")
        if realized[0]:
            print(f"  ratio predicted / realized: {pred / realized[0]:.2f} (yes sites), "
                  f"{all_sites / realized[0]:.2f} (every site)")
        if "fusion_only_ms" in out and out["fusion_only_ms"][0]:
            out["ratio_predicted_fusion_only"] = pred / out["fusion_only_ms"][0]
            print(f"  ratio predicted / fusion alone: {pred / out['fusion_only_ms'][0]:.2f} (yes sites), "
                  f"{all_sites / out['fusion_only_ms'][0]:.2f} (every site)")
        print("where the difference can come from:")
        print(f"  outside the sites: eager {med['eager']:.3f} ms - sites unfused {s['unfused_ms']:.3f} ms = "
              f"{med['eager'] - s['unfused_ms']:.3f} ms of pooling, the ops no site covers (the file's notes name "
              f"them), the classifier's glue and PyTorch's per-op dispatch")
        g = out["graph_ops"]["frozen"]
        left = sum(v for k, v in g.items() if "relu" in k or "hardtanh" in k or "clamp" in k or "add" in k)
        print(f"  PyTorch's own fusion: folded removes BN only ({med['eager'] - med['folded']:.3f} ms); frozen "
              f"folds BN and keeps {left} activation/add ops outside its convolutions "
              f"({med['eager'] - med['frozen']:.3f} ms, implementation change included)")
        print(f"  layouts: fusecal's sites in their own {a.layout} buffers; PyTorch eager in {a.layout}, frozen in "
              "oneDNN's blocked layout with reorders")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
