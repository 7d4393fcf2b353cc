#!/usr/bin/env python3
"""Driver of the wide set (issue 23): 26 torchvision networks measured with oracle.py's functions.

A development tool, not part of the test suite. Debian bookworm, /usr/bin/python3, python3-torch 1.13.1,
python3-torchvision 0.14.1, python3-onnx 1.12; CPU, one thread, one measuring process at a time.

Usage:
    wide.py list                                  # the networks of split.tsv with family and set
    wide.py run M [--inf 1,8,32] [--train 1,8,32] # export, info, then one subprocess per batch size;
                                                  # a step whose parts-wide/ file exists is skipped
    wide.py export M | info M | inf M B | train M B   # one step (run calls these in subprocesses)
    wide.py merge                                 # parts-wide/ -> results-wide.json (records kept, new added)
    wide.py table                                 # the README's tables from results-wide.json

The measuring code is oracle.py's, unchanged (profiled_train_step, saved_summary, analyze, param_info,
live_baseline, top_level_ops); profiled_inference is repeated here only to accept a tuple output (the FPN
backbone's five maps). What differs from results.json's protocol is set out in README.md, section
"Wide set": one thread; inference fp32 NCHW only; training = AdamW(foreach=False) first step with the
saved-tensor hooks, an AdamW steady-state step for the step peak, one SGD(momentum=0.9) step on the
second step's gradients for SGD's state.
"""
import gc
import io
import json
import os
import subprocess
import sys
import time
from collections import Counter, defaultdict

os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import oracle  # noqa: E402  (sets up torch; its functions are used unchanged)
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

HERE = oracle.HERE
PARTS = os.path.join(HERE, "parts-wide")
MODELS_DIR = oracle.MODELS_DIR
RESULTS = os.path.join(HERE, "results-wide.json")
SPLIT = os.path.join(HERE, "split.tsv")
THREADS = 1
SEGMENTATION = {"fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large", "deeplabv3_resnet50"}
BACKBONE = "fasterrcnn_resnet50_fpn_backbone"
NO_TRAIN_B1 = {"deeplabv3_mobilenet_v3_large", "deeplabv3_resnet50", "inception_v3"}  # BatchNorm on a 1x1 map at batch 1


def split():
    rows = []
    for line in open(SPLIT):
        if line.startswith("#") or line.startswith("name\t") or not line.strip():
            continue
        name, family, part, _ = line.rstrip("\n").split("\t")
        rows.append({"name": name, "family": family, "set": part})
    return rows


# =============================================================================
# Networks, inputs, losses
# =============================================================================
class SegOut(nn.Module):
    """torchvision's segmentation models return {"out": logits}: the logits alone."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


class MapsOut(nn.Module):
    """resnet_fpn_backbone returns an OrderedDict of five maps ('0'..'3', 'pool'): as a tuple."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return tuple(self.m(x).values())


MAP_NAMES = ["0", "1", "2", "3", "pool"]


def input_shape(name):
    return [3, 299, 299] if name == "inception_v3" else [3, 224, 224]


def build(name, seed=0):
    torch.manual_seed(seed)
    if name in SEGMENTATION:
        return SegOut(getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None))
    if name == BACKBONE:
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

        return MapsOut(resnet_fpn_backbone(backbone_name="resnet50", weights=None, trainable_layers=3))
    return getattr(torchvision.models, name)(weights=None)


def make_inputs(name, batch, seed=1):
    g = torch.Generator().manual_seed(seed)
    shape = input_shape(name)
    x = torch.randn([batch] + shape, generator=g)
    if name in SEGMENTATION:
        y = torch.randint(0, 21, (batch, shape[1], shape[2]), generator=g)
    else:
        y = torch.randint(0, 1000, (batch,), generator=g)
    return x, y


def loss_fn(name, out, y):
    if name == BACKBONE:
        return sum(o.mean() for o in out)
    if name == "inception_v3" and isinstance(out, tuple):
        return F.cross_entropy(out[0], y) + 0.4 * F.cross_entropy(out[1], y)
    if name == "googlenet" and isinstance(out, tuple):
        return F.cross_entropy(out[0], y) + 0.3 * F.cross_entropy(out[1], y) + 0.3 * F.cross_entropy(out[2], y)
    return F.cross_entropy(out, y)


# oracle.py's measuring functions look these up in their own module
oracle.loss_fn = loss_fn
oracle.input_shape = input_shape


def trainable(model):
    return [p for p in model.parameters() if p.requires_grad]


def save_part(fn, obj):
    os.makedirs(PARTS, exist_ok=True)
    tmp = os.path.join(PARTS, fn + ".tmp")
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, os.path.join(PARTS, fn))


def has_part(fn):
    return os.path.exists(os.path.join(PARTS, fn))


# =============================================================================
# Inference (oracle.profiled_inference, accepting a tuple output)
# =============================================================================
def profiled_inference(model, x):
    gc.collect()
    baseline = oracle.live_baseline(model, None, (x,))
    with torch.no_grad():
        with oracle.new_profiler() as prof:
            oracle.mark(0)
            out = model(x)
            oracle.mark(1)
            outs = list(out) if isinstance(out, tuple) else [out]
            out_bytes = oracle.unique_storage_bytes(outs)
            out_shape = [list(o.shape) for o in outs] if isinstance(out, tuple) else list(out.shape)
            del out, outs
            oracle.mark(2)
    r = oracle.analyze(prof)
    s = r["segments"]
    return {
        "baseline_bytes": baseline,
        "forward_peak_delta": s[0]["peak"],
        "forward_peak_delta_excl_intra_op": s[0]["peak_excl_intra_op"],
        "peak_abs": baseline + s[0]["peak"],
        "retained_after_forward": s[0]["end"],
        "output_bytes": out_bytes,
        "output_shape": out_shape,
        "after_output_free": s[1]["end"],
        "max_intra_op_workspace": r["max_intra_op_workspace"],
        "peak_ctx": r["peak_ctx"],
        "peak_excl_intra_op_ctx": r["peak_excl_intra_op_ctx"],
        "max_intra_op_workspace_ctx": r["max_intra_op_workspace_ctx"],
        "n_alloc_events": r["n_alloc_events"],
        "n_intra_op_blocks": r["n_intra_op_blocks"],
        "crosscheck_tree_eq_kineto": r["crosscheck_tree_eq_kineto"],
        "kineto_method_peak": r["kineto_method_peak"],
    }, prof


M_PROF = oracle_method = ("torch.profiler memory events (event tree), running sum of +alloc/-free inside one window, "
                          "relative to the bytes live at window start")


def rec(name, mode, batch, measurement, value, method, **kw):
    r = {"model": name, "mode": mode, "batch": batch, "measurement": measurement, "value_bytes": value, "method": method}
    r.update(kw)
    return r


def inference(name, b):
    torch.set_num_threads(THREADS)
    m = build(name).eval()
    with torch.no_grad():  # warm-up (first-call effects), as oracle.measure
        m(make_inputs(name, 1)[0])
    x, _ = make_inputs(name, b)
    r, prof = profiled_inference(m, x)
    part = {"model": name, "batch": b, "libblas": oracle.blas_lib(), "torch_num_threads": torch.get_num_threads()}
    if b == 1:
        part["inference_top_level_ops_b1"] = oracle.top_level_ops(prof)
        r2, _ = profiled_inference(m, x)
        r["repeat_identical"] = all(r[k] == r2[k] for k in
                                    ("forward_peak_delta", "forward_peak_delta_excl_intra_op", "retained_after_forward"))
    del prof
    part["detail"] = r
    part["records"] = [
        rec(name, "inference", b, "forward_peak_delta", r["forward_peak_delta"], M_PROF + " (all allocations)",
            variant="fp32_nchw", baseline_bytes=r["baseline_bytes"], peak_abs=r["peak_abs"],
            output_bytes=r["output_bytes"], output_shape=r["output_shape"],
            retained_after_forward=r["retained_after_forward"], peak_op=r["peak_ctx"],
            max_intra_op_workspace=r["max_intra_op_workspace"]),
        rec(name, "inference", b, "forward_peak_delta_excl_intra_op", r["forward_peak_delta_excl_intra_op"],
            M_PROF + "; blocks allocated and freed inside the same outermost aten:: op (kernel workspaces) left out",
            variant="fp32_nchw", peak_op=r["peak_excl_intra_op_ctx"]),
    ]
    print(f"[{name}] inference b={b} peak={r['forward_peak_delta']:,} excl={r['forward_peak_delta_excl_intra_op']:,} "
          f"out={r['output_bytes']:,} x={r['crosscheck_tree_eq_kineto']}", flush=True)
    save_part(f"{name}__inf_b{b}.json", part)


# =============================================================================
# Training
# =============================================================================
def step_tensors(opt):
    ts = [st["step"] for st in opt.state.values() if isinstance(st.get("step"), torch.Tensor)]
    return {"n": len(ts), "bytes": sum(t.numel() * t.element_size() for t in ts),
            "dtypes": sorted({str(t.dtype) for t in ts}), "shapes": sorted({str(list(t.shape)) for t in ts})}


def training(name, b):
    torch.set_num_threads(THREADS)
    model = build(name)
    model.train()
    x, y = make_inputs(name, b)
    tp = trainable(model)
    n_tensors = len(tp)
    P = sum(p.numel() for p in tp)
    tbytes = oracle.unique_storage_bytes(tp)
    adamw = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, foreach=False)
    # step 1: AdamW's first step with the saved-tensor hooks (allocates exp_avg, exp_avg_sq, step)
    s1, saved = oracle.profiled_train_step(name, model, adamw, x, y, hooks=True)
    gb = oracle.unique_storage_bytes([p.grad for p in model.parameters() if p.grad is not None])
    adamw_state = oracle.unique_storage_bytes(oracle.opt_state_tensors(adamw))
    steps = step_tensors(adamw)
    # step 2: AdamW steady state (state present) -> the step peak
    s2, _ = oracle.profiled_train_step(name, model, adamw, x, y)
    # SGD(momentum) state: one step on step 2's gradients
    sgd = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=False)
    sgd.step()
    sgd_state = oracle.unique_storage_bytes(oracle.opt_state_tensors(sgd))
    ident = s1["after_forward_delta"] - saved["saved_activation_bytes"] - saved["loss_bytes"]
    HOOK = ("torch.autograd.graph.saved_tensors_hooks pack hook during one model.train() forward + loss; unique storages "
            "(data_ptr) excluding parameters, buffers and the input/target tensors")
    st = s2
    records = [
        rec(name, "training", b, "saved_activation_bytes", saved["saved_activation_bytes"], HOOK,
            saved_input_bytes=saved["saved_input_bytes"], saved_param_bytes=saved["saved_param_bytes"],
            saved_buffer_bytes=saved["saved_buffer_bytes"], by_dtype=saved["saved_activation_bytes_by_dtype"],
            graph_traversal_bytes=saved["graph_traversal_activation_bytes"]),
        rec(name, "training", b, "retained_after_forward", s1["after_forward_delta"],
            M_PROF + "; bytes still allocated at the end of the training forward (logits dropped, loss scalar kept)",
            minus_saved_minus_loss=ident, excl_intra_op=s1["after_forward_delta_excl_intra_op"]),
        rec(name, "training", b, "grad_bytes", gb, "sum of unique .grad storages after backward (exact count)",
            expected_param_bytes=tbytes),
        rec(name, "training", b, "optimizer_state", sgd_state,
            "sum of unique opt.state tensor storages after the first step (exact count)",
            optimizer="SGD(momentum=0.9, foreach=False)", rule="P*4", rule_value=4 * P),
        rec(name, "training", b, "optimizer_state", adamw_state,
            "sum of unique opt.state tensor storages after the first step (exact count)",
            optimizer="AdamW(foreach=False)", rule="2*P*4 + 4*n_param_tensors (fp32 scalar 'step' tensors)",
            rule_value=8 * P + 4 * n_tensors, n_state_tensors=None, step_tensors=steps),
        rec(name, "training", b, "train_step_peak", st["peak_abs"],
            M_PROF + "; zero_grad(set_to_none=True), forward, loss, backward, step in one window, optimizer state present "
            "from a previous step; value = baseline (params+buffers+input+target+optimizer state) + running-sum peak",
            optimizer="AdamW(foreach=False)", baseline_bytes=st["baseline_bytes"], peak_delta=st["peak_delta"],
            peak_delta_excl_intra_op=st["peak_delta_excl_intra_op"], peak_phase=st["peak_phase"],
            peak_op=st["peak_ctx"], forward_peak_delta=st["forward_peak_delta"],
            backward_peak_delta=st["backward_peak_delta"], optimizer_peak_delta=st["optimizer_peak_delta"],
            after_backward_delta=st["after_backward_delta"]),
        rec(name, "training", b, "train_forward_peak_delta", s1["forward_peak_delta"],
            M_PROF + "; peak during the training-mode forward + loss (step 1)",
            excl_intra_op=s1["forward_peak_delta_excl_intra_op"]),
    ]
    part = {"model": name, "batch": b, "libblas": oracle.blas_lib(), "torch_num_threads": torch.get_num_threads(),
            "step1_adamw_first": s1, "step2_adamw_steady": s2, "saved": saved, "records": records}
    print(f"[{name}] training b={b} saved={saved['saved_activation_bytes']:,} id={ident} grads={gb:,} "
          f"adamw={adamw_state:,} peak={s2['peak_abs']:,} ({s2['peak_phase']})", flush=True)
    save_part(f"{name}__train_b{b}.json", part)


# =============================================================================
# Counts (parameters, buffers, optimizer state after one step)
# =============================================================================
def state_by_key(opt):
    by = defaultdict(lambda: {"tensors": 0, "bytes": 0, "dtypes": set(), "shapes": set(), "devices": set()})
    for st in opt.state.values():
        for k, v in st.items():
            if isinstance(v, torch.Tensor):
                e = by[k]
                e["tensors"] += 1
                e["bytes"] += v.numel() * v.element_size()
                e["dtypes"].add(str(v.dtype).replace("torch.", ""))
                if v.dim() == 0:
                    e["shapes"].add("[]")
                e["devices"].add(str(v.device))
    return {k: dict(v, dtypes=sorted(v["dtypes"]), shapes=sorted(v["shapes"]), devices=sorted(v["devices"]))
            for k, v in by.items()}


def info(name):
    torch.set_num_threads(THREADS)
    model = build(name)
    pi = oracle.param_info(model)
    tp = trainable(model)
    nb = list(model.named_buffers())
    kinds = sorted({n.split(".")[-1] for n, _ in nb})
    from torchvision.ops.misc import FrozenBatchNorm2d

    types = Counter(type(m).__name__ for m in model.modules())
    out = {"model": name, "input_shape": input_shape(name)}
    out.update(pi)
    out.update({
        "trainable_param_tensors": len(tp),
        "trainable_param_bytes": oracle.unique_storage_bytes(tp),
        "frozen_params": pi["params"] - pi["trainable_params"],
        "buffer_tensors_by_kind": {k: sum(1 for n, _ in nb if n.split(".")[-1] == k) for k in kinds},
        "buffer_dtypes_by_kind": {k: sorted({str(b.dtype).replace("torch.", "") for n, b in nb if n.split(".")[-1] == k})
                                  for k in kinds},
        "module_types": {k: types.get(k, 0) for k in ("BatchNorm2d", FrozenBatchNorm2d.__name__, "LayerNorm", "Dropout",
                                                        "StochasticDepth")},
    })
    opts = {
        "AdamW(foreach=False)": lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=False),
        "AdamW(foreach=True)": lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, foreach=True),
        "AdamW(default)": lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01),
        "SGD(momentum=0.9, foreach=False)": lambda ps: torch.optim.SGD(ps, lr=1e-3, momentum=0.9, foreach=False),
    }
    res = {}
    for oname, mk in opts.items():
        m = build(name)
        for p in m.parameters():
            p.grad = torch.ones_like(p) if p.requires_grad else None
        o = mk(m.parameters())
        o.step()
        res[oname] = {"n_params_with_state": len(o.state),
                      "state_bytes": oracle.unique_storage_bytes(oracle.opt_state_tensors(o)), "by_key": state_by_key(o)}
        del m, o
    out["optimizer_state_after_one_step"] = res
    save_part(f"{name}__info.json", out)
    print(f"[{name}] info params={pi['params']:,} trainable={pi['trainable_params']:,} buffers={pi['buffer_bytes']:,}",
          flush=True)


# =============================================================================
# ONNX export (oracle.export's settings; the nofold variant keeps BatchNormalization)
# =============================================================================
def identity_aliases(g):
    inits = {t.name: oracle.tensor_nbytes(t) for t in g.initializer}
    al = [n for n in g.node if n.op_type == "Identity" and n.input and n.input[0] in inits]
    return len(al), sum(inits[n.input[0]] for n in al)


def export_variant(name, nofold):
    import onnx

    stem = f"{name}.nofold" if nofold else name
    m = build(name).eval()
    x, _ = make_inputs(name, 1)
    outs = [f"output.{k}" for k in MAP_NAMES] if name == BACKBONE else ["output"]
    axes = {"input": {0: "batch"}}
    axes.update({o: {0: "batch"} for o in outs})
    buf = io.BytesIO()
    t0 = time.time()
    mode = torch.onnx.TrainingMode.PRESERVE if nofold else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(m, x, buf, export_params=True, opset_version=oracle.OPSET, do_constant_folding=True,
                      training=mode, input_names=["input"], output_names=outs, dynamic_axes=axes)
    raw = onnx.load_from_string(buf.getvalue())
    del buf
    g = raw.graph
    onnx_path = os.path.join(MODELS_DIR, f"{stem}.onnx")
    inf_path = os.path.join(MODELS_DIR, f"{stem}.inferred.onnx")
    w_name = f"{stem}.weights"
    w_path = os.path.join(MODELS_DIR, w_name)
    stats = {
        "n_nodes": len(g.node),
        "op_type_histogram": dict(sorted(Counter(n.op_type for n in g.node).items())),
        "n_initializers": len(g.initializer),
        "onnx_initializer_bytes": sum(oracle.tensor_nbytes(t) for t in g.initializer),
        "onnx_initializer_elements": sum(int(torch.tensor(list(t.dims)).prod().item()) if len(t.dims) else 1
                                         for t in g.initializer),
        "value_info_raw_export": oracle.vi_stats(g),
        "export_s": round(time.time() - t0, 1),
    }
    by_dtype = defaultdict(int)
    for t in g.initializer:
        by_dtype[onnx.TensorProto.DataType.Name(t.data_type)] += oracle.tensor_nbytes(t)
    stats["onnx_initializer_bytes_by_dtype"] = dict(by_dtype)
    stats["onnx_constant_node_bytes"] = sum(oracle.tensor_nbytes(a.t) for n in g.node if n.op_type == "Constant"
                                            for a in n.attribute if a.type == onnx.AttributeProto.TENSOR)
    stats["identity_aliases"], stats["identity_alias_bytes"] = identity_aliases(g)
    for p in (onnx_path, inf_path, w_path):
        if os.path.exists(p):
            os.remove(p)
    onnx.save_model(raw, onnx_path, save_as_external_data=True, all_tensors_to_one_file=True, location=w_name,
                    size_threshold=1024, convert_attribute=False)
    ext = [t for t in raw.graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    inl = [t for t in raw.graph.initializer if t.data_location != onnx.TensorProto.EXTERNAL]
    stats["onnx_external_data"] = {
        "initializers_external": len(ext), "initializers_external_bytes": sum(oracle.tensor_nbytes(t) for t in ext),
        "initializers_inline": len(inl), "initializers_inline_bytes": sum(oracle.tensor_nbytes(t) for t in inl),
        "external_size_threshold_bytes": 1024}
    w_real = oracle.file_info(w_path)
    proto = onnx.load_model(onnx_path, load_external_data=False)
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=False, data_prop=True)
    onnx.save_model(inferred, inf_path)
    stats["value_info_inferred"] = oracle.vi_stats(inferred.graph)
    stats["graph_inputs"] = [(i.name, [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim])
                             for i in inferred.graph.input]
    stats["graph_outputs"] = [(o.name, [d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim])
                              for o in inferred.graph.output]
    size = os.path.getsize(w_path)
    os.remove(w_path)
    with open(w_path, "wb") as f:
        f.truncate(size)
    checks = {}
    for p in (onnx_path, inf_path):
        try:
            onnx.checker.check_model(p)
            checks[os.path.basename(p)] = "ok"
        except Exception as e:  # recorded, not fatal: the graph is still what the exporter wrote
            checks[os.path.basename(p)] = f"error: {str(e)[:300]}"
    stats["onnx_checker"] = checks
    stats["files"] = {"onnx": oracle.file_info(onnx_path), "inferred_onnx": oracle.file_info(inf_path),
                      "weights_sparse": oracle.file_info(w_path), "weights_size_file": f"{w_name}.size",
                      "weights_original_sha256": w_real["sha256"],
                      "weights_original_allocated_bytes_on_disk": w_real["allocated_bytes_on_disk"]}
    # the sparse weights file is not kept: only its length matters
    with open(w_path + ".size", "w") as f:
        f.write(f"{size}\n")
    os.remove(w_path)
    return stats


def export(name):
    torch.set_num_threads(THREADS)
    os.makedirs(MODELS_DIR, exist_ok=True)
    m = build(name)
    has_bn = any(isinstance(x, nn.BatchNorm2d) for x in m.modules())
    del m
    out = {"model": name, "opset": oracle.OPSET, "eval": export_variant(name, False)}
    if has_bn:
        out["nofold"] = export_variant(name, True)
    save_part(f"{name}__export.json", out)
    print(json.dumps({"model": name, "n_nodes": out["eval"]["n_nodes"],
                      "nofold_nodes": out.get("nofold", {}).get("n_nodes"),
                      "init": out["eval"]["onnx_initializer_bytes"]}), flush=True)


# =============================================================================
# Driver
# =============================================================================
def step(cmd, *args):
    t = time.time()
    r = subprocess.run([sys.executable, os.path.abspath(__file__), cmd, *map(str, args)])
    print(f"== {cmd} {' '.join(map(str, args))} rc={r.returncode} {time.time() - t:.1f}s", flush=True)
    return r.returncode


def fail(name, mode, b, rc):
    save_part(f"{name}__fail_{mode}_b{b}.json", {"model": name, "mode": mode, "batch": b, "rc": rc})


def run(name, inf, train, do_export):
    if do_export and not has_part(f"{name}__export.json"):
        step("export", name)
    if not has_part(f"{name}__info.json"):
        step("info", name)
    for b in inf:
        if not has_part(f"{name}__inf_b{b}.json"):
            rc = step("inf", name, b)
            if rc:
                fail(name, "inference", b, rc)
    for b in train:
        if b == 1 and name in NO_TRAIN_B1:
            b = 2
        if not has_part(f"{name}__train_b{b}.json"):
            rc = step("train", name, b)
            if rc:
                fail(name, "training", b, rc)


def batches(arg):
    return [int(v) for v in arg.split(",") if v]


# =============================================================================
# Merge: records of parts-wide/ added to results-wide.json (existing records kept as they are)
# =============================================================================
def model_entry(name, part_set, inf):
    e = {"name": name, "family": part_set["family"], "set": part_set["set"]}
    e.update({k: v for k, v in inf.items() if k != "model"})
    return e


def add_export(e, ex):
    ev = ex["eval"]
    e.update({
        "onnx_initializer_bytes": ev["onnx_initializer_bytes"],
        "onnx_initializer_elements": ev["onnx_initializer_elements"],
        "onnx_initializer_bytes_by_dtype": ev["onnx_initializer_bytes_by_dtype"],
        "onnx_n_initializers": ev["n_initializers"],
        "onnx_identity_aliases_of_initializers": ev["identity_aliases"],
        "onnx_identity_alias_bytes": ev["identity_alias_bytes"],
        "onnx_constant_node_bytes": ev["onnx_constant_node_bytes"],
        "onnx_n_nodes": ev["n_nodes"],
        "onnx_op_type_histogram": ev["op_type_histogram"],
        "onnx_value_info": {"raw_export": ev["value_info_raw_export"], "inferred": ev["value_info_inferred"]},
        "onnx_graph_inputs": ev["graph_inputs"],
        "onnx_graph_outputs": ev["graph_outputs"],
        "onnx_external_data": ev["onnx_external_data"],
        "onnx_checker": ev["onnx_checker"],
        "onnx_export": "ok",
        "onnx_nofold_variant": None,
        "files": dict(ev["files"]),
    })
    nf = ex.get("nofold")
    if nf:
        e["onnx_nofold_variant"] = {
            "variant": "nofold (TrainingMode.PRESERVE on an eval() model: BatchNormalization kept)",
            "n_nodes": nf["n_nodes"], "op_type_histogram": nf["op_type_histogram"],
            "onnx_initializer_bytes": nf["onnx_initializer_bytes"], "n_initializers": nf["n_initializers"],
            "identity_alias_bytes": nf["identity_alias_bytes"], "value_info_inferred": nf["value_info_inferred"],
            "onnx_checker": nf["onnx_checker"]}
        e["files"]["nofold"] = dict(nf["files"])


def merge():
    res = json.load(open(RESULTS))
    parts = {fn: json.load(open(os.path.join(PARTS, fn))) for fn in sorted(os.listdir(PARTS)) if fn.endswith(".json")}
    sp = {r["name"]: r for r in split()}
    have = {(r["model"], r["mode"], r["batch"]) for r in res["records"]}
    added = 0
    for fn, p in parts.items():
        if "__inf_b" in fn or "__train_b" in fn:
            key = (p["model"], "inference" if "__inf_b" in fn else "training", p["batch"])
            if key in have:  # measured before: the committed record stands
                continue
            res["records"].extend(p["records"])
            have.add(key)
            added += len(p["records"])
    models = {m["name"]: m for m in res["models"]}
    for name in sp:
        if name in models:
            continue
        inf, ex = parts.get(f"{name}__info.json"), parts.get(f"{name}__export.json")
        if inf is None or ex is None:
            continue
        e = model_entry(name, sp[name], inf)
        add_export(e, ex)
        e["counting_method"] = next(iter(models.values()))["counting_method"]
        models[name] = e
    for name, e in models.items():
        e["inference_batches"] = sorted({r["batch"] for r in res["records"]
                                         if r["model"] == name and r["mode"] == "inference"})
        e["training_batches"] = sorted({r["batch"] for r in res["records"]
                                        if r["model"] == name and r["mode"] == "training"})
        p1 = parts.get(f"{name}__inf_b1.json")
        if p1 and e.get("inference_top_level_ops_b1") is None:
            e["inference_top_level_ops_b1"] = p1["inference_top_level_ops_b1"]
        libs = {p["libblas"] for fn, p in parts.items() if p.get("model") == name and p.get("libblas")}
        if libs:
            e["libblas_used"] = sorted(set(e.get("libblas_used") or []) | libs)
    res["models"] = [models[n] for n in sorted(models)]
    mode_rank = {"inference": 0, "training": 1}
    res["records"].sort(key=lambda r: (r["model"], mode_rank[r["mode"]], r["batch"]))
    miss = {}
    for name in sorted(sp):
        fails = [p for fn, p in parts.items() if fn.startswith(f"{name}__fail_")]
        old = [f for f in res["provenance"].get("failures_or_missing", {}).get(name, []) if isinstance(f, dict)]
        if name not in models:
            miss[name] = ["not measured"]
        elif old or fails:
            miss[name] = old + [f for f in fails if f not in old]
    res["provenance"]["failures_or_missing"] = miss
    tmp = RESULTS + ".tmp"
    with open(tmp, "w") as f:
        json.dump(res, f, indent=1)
    os.replace(tmp, RESULTS)
    print(f"merge: {len(res['records'])} records ({added} added), {len(res['models'])} models", flush=True)


# =============================================================================
# Tables
# =============================================================================
def table():
    res = json.load(open(RESULTS))
    sp = {r["name"]: r for r in split()}
    rows = sorted(res["models"], key=lambda m: (m["set"] != "calibration", m["name"]))

    def f(v):
        return "–" if v is None else f"{v:,}"

    def get(name, mode, b, meas, opt=None):
        for r in res["records"]:
            if (r["model"], r["mode"], r["batch"], r["measurement"]) == (name, mode, b, meas) and \
                    (opt is None or r.get("optimizer") == opt):
                return r
        return None

    print("| network | set | batch | inference peak Δ raw | inference peak Δ excl | output bytes | saved activations |"
          " retained − saved − loss | train fwd peak Δ | step peak abs AdamW | AdamW peak phase |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for m in rows:
        n = m["name"]
        for b in sorted(set(m["inference_batches"]) | set(m["training_batches"])):
            ri = get(n, "inference", b, "forward_peak_delta")
            re_ = get(n, "inference", b, "forward_peak_delta_excl_intra_op")
            sv = get(n, "training", b, "saved_activation_bytes")
            rt = get(n, "training", b, "retained_after_forward")
            tf = get(n, "training", b, "train_forward_peak_delta")
            sp_ = get(n, "training", b, "train_step_peak", "AdamW(foreach=False)")
            print(f"| {n} | {sp[n]['set']} | {b} | {f(ri and ri['value_bytes'])} | {f(re_ and re_['value_bytes'])} | "
                  f"{f(ri and ri['output_bytes'])} | {f(sv and sv['value_bytes'])} | "
                  f"{f(rt and rt['minus_saved_minus_loss'])} | {f(tf and tf['value_bytes'])} | "
                  f"{f(sp_ and sp_['value_bytes'])} | {sp_['peak_phase'] if sp_ else '–'} |")


def main(argv):
    if not argv or argv[0] == "list":
        for r in split():
            print(f"{r['name']}\t{r['family']}\t{r['set']}")
        return
    cmd = argv[0]
    if cmd == "run":
        name = argv[1]
        inf = train = [1, 8, 32]
        do_export = True
        rest = argv[2:]
        i = 0
        while i < len(rest):
            if rest[i] == "--inf":
                inf = batches(rest[i + 1])
                i += 2
            elif rest[i] == "--train":
                train = batches(rest[i + 1])
                i += 2
            elif rest[i] == "--no-export":
                do_export = False
                i += 1
            else:
                sys.exit(f"wide.py: unknown option {rest[i]}")
        run(name, inf, train, do_export)
    elif cmd == "export":
        export(argv[1])
    elif cmd == "info":
        info(argv[1])
    elif cmd == "inf":
        inference(argv[1], int(argv[2]))
    elif cmd == "train":
        training(argv[1], int(argv[2]))
    elif cmd == "merge":
        merge()
    elif cmd == "table":
        table()
    else:
        sys.exit(f"wide.py: unknown command {cmd}")


if __name__ == "__main__":
    main(sys.argv[1:])
