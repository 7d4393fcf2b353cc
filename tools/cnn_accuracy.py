#!/usr/bin/env python3
"""The graph memory model against tests/reference/torch-cnn's measurements, per network.

A development tool (not part of make test): runs the built CLI on each network's ONNX graph
and prints the relative error of every component the reference measured. Calibration and
verification networks (split.tsv) are reported apart; --set picks which (default calibration:
the verification third is for checking only, never for tuning).

    tools/cnn_accuracy.py [--ref DIR] [--models DIR] [--set calibration|verification|all] [--vf build/vramfit]

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


def pct(got, want):
    return 100.0 * (got - want) / want if want else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default=os.path.join(HERE, "..", "tests", "reference", "torch-cnn"))
    ap.add_argument("--models", default=None)
    ap.add_argument("--set", default="calibration")
    ap.add_argument("--vf", default=os.path.join(HERE, "..", "build", "vramfit"))
    ap.add_argument("--only", default=None, help="comma-separated network names")
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
        ins, err = run(a.vf, ["inspect", ev])
        row["init"] = pct(ins["bytes"], m["onnx_initializer_bytes"]) if ins else err
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
                                "--optimizer", "adamw", "--optim-impl", "for-loop"])
            if not e:
                row.setdefault("train", []).append((b, err))
                continue
            c = e["components"]
            def get(meas, **kw):
                for x in recs:
                    if x["model"] == name and x["batch"] == b and x["measurement"] == meas and all(x.get(k) == v for k, v in kw.items()):
                        return x
            sv = r["value_bytes"] + r["saved_input_bytes"]
            gr = get("grad_bytes")["value_bytes"]
            ad = get("optimizer_state", optimizer="AdamW(foreach=False)")["value_bytes"]
            pk = get("train_step_peak", optimizer="AdamW(foreach=False)")["value_bytes"]
            row.setdefault("train", []).append((b, pct(c["activations"], sv), c["gradients"] - gr, c["optimizer"] - ad,
                                                pct(e["per_gpu_bytes"], pk)))
        out.append(row)
    def f(x):
        return "%+6.1f" % x if isinstance(x, float) else str(x)
    for row in out:
        print("%-34s %-12s %-12s init %s" % (row["name"], row["family"], row["set"], f(row["init"])))
        print("    inference %%: " + "  ".join("b%d %s%s" % (b, f(v), " (partial %s)" % p if p and p != "no" else "") for b, v, p in row.get("inf", [])))
        for t in row.get("train", []):
            if len(t) == 2:
                print("    train b%d: %s" % t)
            else:
                print("    train b%d: saved %s%%  grads %+d B  adamw %+d B  step %s%%" % (t[0], f(t[1]), t[2], t[3], f(t[4])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
