#!/usr/bin/env python3
"""The graph memory model against tests/reference/torch-cnn's measurements, per network.

A development tool (not part of make test): runs the built CLI on each network's ONNX graph
and prints the relative error of every component the reference measured. Calibration and
verification networks (split.tsv) are reported apart; --set picks which (default calibration:
the verification third is for checking only, never for tuning).

    tools/cnn_accuracy.py [--ref DIR] [--models DIR] [--set calibration|verification|fresh|all] [--vf build/vramfit]

The last lines count the checks within the bars of issue 23 (initializers exact, inference within 10 %,
saved within 3 %, gradients and AdamW exact, AdamW step within 10 %), with the worst error of each;
"step excl" is the estimate's step without its priced kernel scratch (its assumption
kernel_scratch_in_the_step) against the peak without kernel scratch (oneDNN reorders inside an op).
The figures derived by hand that test_onnx_wide.c also applies are applied here: the ViTs' class-token
gradient at batch 1, and the relative-position tables swin_t, swin_s and maxvit_t's exports fold into
bigger constants. (googlenet's and inception_v3's auxiliary heads, absent from their eval graphs, the
estimate prices itself: their measured states and steps are compared as measured.)

--models is a folder holding M.onnx, M.nofold.onnx and their weights files (sparse: recreate
them with truncate -s "$(cat M.weights.size)" M.weights).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(vf, args):
    p = subprocess.run([vf] + args + ["--json"], capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "exit %d" % p.returncode
    return json.loads(p.stdout), None


def split(ref):
    rows = {}
    for line in open(os.path.join(ref, "split.tsv")):
        if line.startswith("#") or line.startswith("name\t") or not line.strip():
            continue
        n, fam, s, _ = line.rstrip("\n").split("\t")
        rows[n] = (fam, s)
    return rows


# What the user says of a network and a graph cannot: the detection backbone as
# torchvision builds it for Faster R-CNN (resnet_fpn_backbone, trainable_layers=3):
# conv1 and layer1 frozen, FrozenBatchNorm2d throughout.
TRAIN_KNOBS = {"fasterrcnn_resnet50_fpn_backbone": ["--freeze", r"^m\.body\.(conv1|layer1)\.", "--frozen-bn"]}
# Its measured loss is the mean of the five maps, which keeps nothing; the estimate's cross-entropy
# keeps an output-sized log-softmax and an int64 target per position:
# (56^2 + 28^2 + 14^2 + 7^2 + 4^2) x (256 x 4 + 8) B a sample, taken off.
LOSS_APART = {"fasterrcnn_resnet50_fpn_backbone": 4314792}
# Heads whose [169, h] table the export holds as [1, h, 49, 49] (test_onnx_wide.c).
FOLDED_HEADS = {"swin_t": 138, "swin_s": 282, "maxvit_t": 168}


def plain_step(e):
    """The estimate's step without the kernel scratch it priced (its assumption, in bytes)."""
    a = e.get("assumptions", {}).get("kernel_scratch_in_the_step")
    return int(a.split(", ", 1)[1].split(" ", 1)[0]) if a else e["per_gpu_bytes"]


def states_expected(name, b, grads, adamw):
    """The measured gradient and AdamW bytes as the graph can show them (test_onnx_wide.c's derivations)."""
    if name in ("vit_b_16", "vit_b_32") and b == 1:  # P patches: (224/16)^2, (224/32)^2
        grads -= (196 if name == "vit_b_16" else 49) * 768 * 4
    h = FOLDED_HEADS.get(name, 0)
    return grads + h * 2232 * 4, adamw + 2 * h * 2232 * 4


def pct(got, want):
    return 100.0 * (got - want) / want if want else float("nan")


def span(vals):
    """'+0.2 %' or '−0.4 … +1.0 %' over the batches (rounded as the table prints them)."""
    def one(v):
        t = "%+.1f" % v
        return "0.0" if t in ("+0.0", "-0.0") else t.replace("-", "\u2212")
    if not vals:
        return "\u2013"
    lo, hi = one(min(vals)), one(max(vals))
    return (lo if lo == hi else lo + " \u2026 " + hi) + " %"


def markdown_row(row):
    inf = [v for _, v, _ in row.get("inf", []) if isinstance(v, float)]
    tr = [t for t in row.get("train", []) if len(t) == 6]
    states = "exact" if tr and all(t[2] == 0 and t[3] == 0 for t in tr) else \
        ", ".join("b%d %+d / %+d B" % (t[0], t[2], t[3]) for t in tr) or "\u2013"
    step = span([t[4] for t in tr])
    init = "exact" if row["init"] == 0 else str(row["init"])
    return "| %s | %s | %s | %s | %s | %s | %s |" % (row["name"], row["family"], init, span(inf),
                                                   span([t[1] for t in tr]), states, step)


def family_row(fam, rows):
    """One family over the networks of the chosen sets: each named with its set's initial."""
    nets = ", ".join("%s (%s)" % (r["name"], r["set"][0] + (r["set"][-1] if r["set"][-1].isdigit() else ""))
                     for r in rows)
    inf = [v for r in rows for _, v, _ in r.get("inf", []) if isinstance(v, float)]
    tr = [t for r in rows for t in r.get("train", []) if len(t) == 6]
    st = [t[4] for r in rows for t in r.get("train", []) if len(t) == 6]
    ok = sum(t[2] == 0 and t[3] == 0 for t in tr)
    return "| %s | %s | %s | %s | %d of %d exact | %s |" % (fam, nets, span(inf), span([t[1] for t in tr]), ok,
                                                         len(tr), span(st))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=os.path.join(HERE, "..", "tests", "reference", "torch-cnn"))
    ap.add_argument("--models", default=None)
    ap.add_argument("--set", default="calibration")
    ap.add_argument("--vf", default=os.path.join(HERE, "..", "build", "vramfit"))
    ap.add_argument("--only", default=None, help="comma-separated network names")
    ap.add_argument("--markdown", action="store_true", help="docs/memory-model.md's per-network rows instead")
    a = ap.parse_args()
    models = a.models or os.path.join(a.ref, "models")
    sp = split(a.ref)
    res = json.load(open(os.path.join(a.ref, "results-wide.json")))
    recs = res["records"]
    only = set(a.only.split(",")) if a.only else None
    out = []
    for m in res["models"]:
        name = m["name"]
        fam, st = sp.get(name, ("?", "?"))
        if a.set != "all" and st != a.set or only and name not in only:
            continue
        ev = os.path.join(models, name + ".onnx")
        nf = os.path.join(models, name + ".nofold.onnx")
        g = nf if os.path.exists(nf) else ev
        row = {"name": name, "family": fam, "set": st}
        ins, err = run(a.vf, ["inspect", g])
        want = (m.get("onnx_nofold_variant") or m)["onnx_initializer_bytes"] if g == nf else m["onnx_initializer_bytes"]
        row["init"] = ins["bytes"] - want if ins else err
        inb = 4 * m["input_shape"][0] * m["input_shape"][1] * m["input_shape"][2]
        for r in recs:
            if r["model"] != name:
                continue
            b = r["batch"]
            if r["measurement"] == "forward_peak_delta_excl_intra_op":
                e, err = run(a.vf, ["estimate", g, "--batch", str(b), "--runtime", "generic"])
                row.setdefault("inf", []).append((b, pct(e["components"]["activations"] - b * inb, r["value_bytes"]) if e else err,
                                                  e["assumptions"].get("partial") if e else None))
        for r in recs:
            if r["model"] != name or r["measurement"] != "saved_activation_bytes":
                continue
            b = r["batch"]
            e, err = run(a.vf, ["estimate", g, "--batch", str(b), "--runtime", "generic", "--train", "--precision", "fp32",
                                "--optimizer", "adamw", "--optim-impl", "for-loop"] + TRAIN_KNOBS.get(name, []))
            if not e:
                row.setdefault("train", []).append((b, err))
                continue
            c = e["components"]
            def get(meas, **kw):
                for x in recs:
                    if x["model"] == name and x["batch"] == b and x["measurement"] == meas and all(x.get(k) == v for k, v in kw.items()):
                        return x
            sv = r["value_bytes"] + r["saved_input_bytes"]
            gr, ad = states_expected(name, b, get("grad_bytes")["value_bytes"],
                                     get("optimizer_state", optimizer="AdamW(foreach=False)")["value_bytes"])
            stp = get("train_step_peak", optimizer="AdamW(foreach=False)")
            pk, free = stp["value_bytes"], stp["baseline_bytes"] + stp["peak_delta_excl_intra_op"]
            row.setdefault("train", []).append((b, pct(c["activations"] - b * LOSS_APART.get(name, 0), sv), c["gradients"] - gr, c["optimizer"] - ad,
                                                pct(e["per_gpu_bytes"], pk), pct(plain_step(e), free)))
        out.append(row)
    if a.markdown:
        for row in sorted(out, key=lambda r: (r["family"], r["name"])):
            print(markdown_row(row))
        print()
        for fam in sorted({r["family"] for r in out}):
            print(family_row(fam, [r for r in out if r["family"] == fam]))
        return 0

    def f(x):
        return "%+6.1f" % x if isinstance(x, float) else str(x)
    bars = {"init": [0, 0, 0], "inference": [0, 0, 0.0], "saved": [0, 0, 0.0], "states": [0, 0, 0], "step": [0, 0, 0.0],
            "step excl": [0, 0, 0.0]}
    def tally(bar, ok, err):
        t = bars[bar]
        t[0] += ok
        t[1] += 1
        if abs(err) > abs(t[2]):
            t[2] = err
    for row in out:
        print("%-34s %-12s %-12s init %s B" % (row["name"], row["family"], row["set"], "%+d" % row["init"] if isinstance(row["init"], int) else row["init"]))
        if isinstance(row["init"], int):
            tally("init", row["init"] == 0, row["init"])
        for b, v, p in row.get("inf", []):
            if isinstance(v, float) and (not p or p == "no"):
                tally("inference", abs(v) <= 10.0, v)
        for t in row.get("train", []):
            if len(t) == 6:
                tally("saved", abs(t[1]) <= 3.0, t[1])
                tally("states", t[2] == 0 and t[3] == 0, t[2] if t[2] else t[3])
                tally("step", abs(t[4]) <= 10.0, t[4])
                tally("step excl", abs(t[5]) <= 10.0, t[5])
        print("    inference %%: " + "  ".join("b%d %s%s" % (b, f(v), " (partial %s)" % p if p and p != "no" else "") for b, v, p in row.get("inf", [])))
        for t in row.get("train", []):
            if len(t) == 2:
                print("    train b%d: %s" % t)
            else:
                print("    train b%d: saved %s%%  grads %+d B  adamw %+d B  step %s%% (kernel scratch apart %s%%)"
                      % (t[0], f(t[1]), t[2], t[3], f(t[4]), f(t[5])))
    print("within the bars (%s):" % a.set)
    units = {"init": " B", "states": " B"}
    for k, (ok, n, worst) in bars.items():
        print("  %-10s %3d of %3d  worst %s%s" % (k, ok, n, ("%+d" % worst) if isinstance(worst, int) else "%+.1f" % worst,
                                               units.get(k, " %")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
