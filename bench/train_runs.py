#!/usr/bin/python3
"""train_runs.py — vramfit against the published fine-tuning runs of
tests/reference/train-runs/runs.tsv, each set apart (calibration,
verification: fixed by sha256 before transcription, README there).

Each run's knobs become vramfit arguments by fixed rules (below), decided
without looking at any figure; a run whose model, batch or sequence length
the source does not give, or a LLaMA-Factory *estimate*, is "not expressed"
and named. For a run with a GPU: the verdict (`vramfit fit ... --gpu G`, exit
0 fits / 1 not) against the outcome (ran / OOM); a false "does not fit" on a
run whose figure is within 2 % of the device is not counted (the issue's
rule). For a measured figure: the step peak's error, vramfit's figure of
the same kind as the source's (figure_key: allocated, reserved or the whole
device) — median and worst, per set.

    VF=build/vramfit /usr/bin/python3 bench/train_runs.py [--rows]
"""
import csv
import json
import os
import re
import subprocess
import sys

VF = os.environ.get("VF", "build/vramfit")
RUNS = "tests/reference/train-runs/runs.tsv"

GPUS = [  # (substring of the source's GPU, catalog name, bytes as the source counts them when a size)
    ("a100-sxm4-40gb", "A100 40GB"), ("a100 40gb", "A100 40GB"), ("40gb gpu (a100", "A100 40GB"),
    ("a100-sxm4-80gb", "A100 80GB"), ("a100 80gb", "A100 80GB"), ("a800", "A100 80GB"),
    ("h100", "H100"), ("rtx 4090", "RTX 4090"), ("3090 ti", "RTX 3090 Ti"), ("rtx a6000", "RTX A6000"),
    ("v100 32gb", "V100 32GB"), ("p40", "24GB"),
]


def num(v):
    m = re.match(r"\s*([0-9]+)", v or "")
    return int(m.group(1)) if m else None


def gpu_of(r):
    g = r["gpu"].lower()
    for k, name in GPUS:
        if k in g:
            return name
    m = re.match(r"(\d+) ?gb gpu", g)
    if m:
        return m.group(1) + "GB"
    if g.startswith("a100") and "torchtune" in r["trainer"]:
        return None  # which A100 the table used is not said
    return None


def targets(t):
    t = t.lower()
    if "unknown" in t or "peft default" in t:
        return None
    if "all" in t or "mlp" in t or "gate" in t:
        return "all-linear"
    if "q,k,v" in t:
        return "q,k,v"
    if "q" in t and "v" in t:
        return "q,v"
    return None


def args_of(r):
    """vramfit arguments for run r, or (None, why)."""
    if r["outcome"] == "estimate":
        return None, "LLaMA-Factory estimate, not a measurement"
    model = r["model"].split(" ")[0]
    if "/" not in model:
        return None, "model not named: " + r["model"]
    b, s = num(r["batch"]), num(r["seq_len"])
    if not b or not s:
        return None, "batch or sequence length not given"
    a = [model, "--train", "--batch", str(b), "--context", str(s)]
    tr = r["trainer"].lower()
    litgpt = "lit-gpt" in tr or "litgpt" in tr
    if litgpt:
        a += ["--runtime", "litgpt"]
    ga = num(r["grad_accum"])
    if ga and ga > 1:
        a += ["--grad-accum", str(ga)]
    p = r["precision"].lower()
    pure = "true" in p or "pure" in p or "full bf16" in p or "torchtune" in tr or litgpt
    if p.startswith("fp16"):
        a += ["--precision", "fp16-mixed"]
    elif pure and (p.startswith("bf16") or p == "unknown"):
        a += ["--precision", "bf16"]
    m = r["method"].lower()
    if "lora" in m:
        rank = num(r["lora_r"])
        if not rank:
            return None, "LoRA rank not given"
        a += ["--lora-rank", str(rank)]
        t = targets(r["lora_targets"])
        if t:
            a += ["--lora-targets", t]
        if "qlora" in m or "4-bit" in r["load_dtype"].lower() or "nf4" in m:
            a += ["--qlora", "nf4-dq" if "dq" in m or "double" in r["load_dtype"].lower() else "nf4"]
            if tr.startswith("hugging face"):
                # the Unsloth README's "Hugging Face + FA2" baseline: transformers + PEFT's QLoRA recipe,
                # prepare_model_for_kbit_training (peft/utils/other.py), whose default
                # use_gradient_checkpointing=True checkpoints every block (--kbit-prepare's default)
                a += ["--kbit-prepare"]
    elif "full" not in m:
        return None, "method not expressed: " + r["method"]
    g = r["grad_ckpt"].lower()
    if tr.startswith("unsloth"):
        # FastLanguageModel.get_peft_model(use_gradient_checkpointing="unsloth") is Unsloth's default
        # (unsloth/models/llama.py at the README's commit): unsloth_zoo's offloaded checkpointer
        a += ["--grad-checkpoint", "unsloth"]
    elif g.startswith("yes") or "checkpointing" in g:
        a += ["--grad-checkpoint", "full"]
    o = r["optimizer"].lower()
    if "paged" in o and "8bit" in o:
        a += ["--optimizer", "paged-adamw-8bit"]
    elif "pagedadamw" in o.replace(" ", "").replace("_", ""):
        a += ["--optimizer", "paged-adamw"]  # bitsandbytes PagedAdamW: 32-bit states
    elif "8bit" in o or "8-bit" in o and "later" not in o:
        a += ["--optimizer", "adamw-8bit"]
    elif "sgd" in o:
        a += ["--optimizer", "sgd"]
    elif "foreach=false" in o:
        a += ["--optim-impl", "for-loop"]
    if "optimizer_in_bwd" in o or "in backward" in o:
        a += ["--optimizer-in-backward"]  # torchtune optimizer_in_bwd=True
    if r["act_offload"].lower().startswith("yes"):
        a += ["--activation-offload"]  # torchtune enable_activation_offloading
    z = r["zero_fsdp"].lower()
    n = num(r["n_gpus"]) or 1
    if "fsdp" in z:
        a += ["--fsdp", "full"]
    elif "zero-3" in z:
        a += ["--zero", "3"]
    elif "zero-2" in z:
        a += ["--zero", "2"]
    off = r["offload"].lower()
    if "offload_param" in off or "offload_params" in off:
        a += ["--offload", "both"]
    elif "offload" in off:
        a += ["--offload", "optimizer"]
    at = r["attn"].lower()
    if "flash" in at or "fa2" in at or tr.startswith("unsloth"):
        # Unsloth's attention (unsloth/utils/attention_dispatch.py select_attention_backend): flash-attn,
        # else xformers, else SDPA: never the s^2 scores kept
        a += ["--attn", "flash"]
    ce = r["ce"].lower()
    if "chunked" in ce:
        a += ["--loss", "chunked"]  # torchtune's num_output_chunks: 8
    elif "fused" in ce or tr.startswith("unsloth"):
        # Unsloth's causal-LM forward (unsloth/models/llama.py): unsloth_fused_ce_loss over chunks of the
        # hidden states unless UNSLOTH_RETURN_LOGITS=1; the README's release adds Apple's Cut Cross Entropy
        a += ["--loss", "fused"]
    if tr.startswith("unsloth"):
        # unsloth/__init__.py sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True,roundup_power2_divisions:[...]
        # on import (2024-2025 releases; the per-size divisions list is not read by vramfit)
        a += ["--alloc-conf", "expandable_segments:True"]
    if n > 1:
        a += ["--gpus", str(n)]
    return a, None


def without_unknown(args, err):
    """args less the knob a binary does not know (an older vramfit scored on
    the same rows: the run as it can express it), or None."""
    m = re.search(r"unknown option '--([a-z0-9-]+)'", err or "")
    if not m or "--" + m.group(1) not in args:
        return None
    i = args.index("--" + m.group(1))
    takes = i + 1 < len(args) and not args[i + 1].startswith("--")
    return args[:i] + args[i + (2 if takes else 1):]


def to_bytes(fig, unit):
    u = unit.lower()
    if u.startswith("gib"):
        return fig * 2**30
    if u.startswith("mib"):
        return fig * 2**20
    if u.startswith("gb"):
        return fig * 1e9
    return None


def run(args, gpu):
    verdict, j, err = run_once(args, gpu)
    while err:
        fewer = without_unknown(args, err)
        if fewer is None:
            break
        args = fewer
        verdict, j, err = run_once(args, gpu)
    return verdict, j, err


def run_once(args, gpu):
    if gpu:
        n = [x for i, x in enumerate(args) if i and args[i - 1] == "--gpus"]
        g = gpu + ("x" + n[0] if n else "")
        fa = [x for i, x in enumerate(args) if not (x == "--gpus" or (i and args[i - 1] == "--gpus"))]
        p = subprocess.run([VF, "fit", *fa, "--gpu", g, "--json"], capture_output=True, text=True)
        if p.returncode not in (0, 1):
            return None, None, p.stderr.strip()
        j = json.loads(p.stdout)
        return p.returncode == 0, j, None
    p = subprocess.run([VF, "estimate", *args, "--json"], capture_output=True, text=True)
    if p.returncode:
        return None, None, p.stderr.strip()
    return None, json.loads(p.stdout), None


def figure_key(kind):
    """vramfit's figure measured as the source measured it: max_memory_allocated
    and the active-bytes peak (active = allocated blocks: torchtune's
    peak_memory_active) are allocated_bytes; max_memory_reserved is
    reserved_bytes, and so is torchtune's "Peak Memory per GPU" (its README
    note, commit 8719c77 and before: "as reported by
    torch.cuda.max_memory_reserved()"); anything else (nvidia-smi, a
    screenshot, a statement) is the whole device, device_bytes."""
    k = kind.lower()
    if "reserved" in k and "allocated" not in k or "torchtune log" in k:
        return "reserved_bytes"
    if "allocated" in k or "active" in k:
        return "allocated_bytes"
    return "device_bytes"


def figure_of(j, kind):
    e = j.get("estimate", j)
    return e.get(figure_key(kind)) or e.get("device_bytes")


def main():
    rows = list(csv.DictReader(open(RUNS), delimiter="\t"))
    show = "--rows" in sys.argv
    res = {"calibration": [], "verification": []}
    for r in rows:
        a, why = args_of(r)
        out = {"id": r["id"], "why": why}
        if a:
            gpu = gpu_of(r)
            verdict, j, err = run(a, gpu)
            if err:
                out["why"] = "vramfit: " + err
            else:
                out["verdict"] = verdict
                truth = {"ran": True, "ran (max context)": True, "OOM": False}.get(r["outcome"])
                out["truth"] = truth
                fig = re.fullmatch(r"[0-9]+(\.[0-9]+)?", r["figure"].strip())
                meas = to_bytes(float(fig.group(0)), r["unit"]) if fig else None  # a range ("72-80") is no figure
                if r["outcome"] == "ran (max context)" and j and j.get("max_context"):
                    # the published context is the longest that fit: vramfit's longest over it
                    out["ctx_ratio"] = j["max_context"] / num(r["seq_len"])
                if r["outcome"] == "ran" and meas:
                    _, je, _ = run(a + (["--gpu", gpu] if gpu else []), None)
                    got = figure_of(je, r["figure_kind"]) if je else None
                    if got:
                        out["err"] = 100.0 * (got - meas) / meas
                    if gpu:
                        out["near"] = abs(meas - capacity(gpu)) <= 0.02 * capacity(gpu)
                out["args"] = " ".join(a) + (" --gpu " + gpu if gpu else "")
        res[r["set"]].append(out)
        if show:
            print(r["set"][:5], json.dumps(out))
    for k in ("calibration", "verification"):
        report(k, res[k])


_caps = {}


def capacity(gpu):
    if gpu not in _caps:
        p = subprocess.run([VF, "fit", "meta-llama/Llama-3.2-1B", "--train", "--gpu", gpu, "--json"],
                           capture_output=True, text=True)
        _caps[gpu] = json.loads(p.stdout)["gpu_bytes"]
    return _caps[gpu]


def report(name, rs):
    ex = [x for x in rs if "verdict" in x or "err" in x]
    v = [x for x in rs if x.get("verdict") is not None and x.get("truth") is not None]
    ff = [x["id"] for x in v if x["verdict"] and not x["truth"]]
    fn = [x["id"] for x in v if not x["verdict"] and x["truth"] and not x.get("near")]
    fn_near = [x["id"] for x in v if not x["verdict"] and x["truth"] and x.get("near")]
    errs = sorted(x["err"] for x in rs if "err" in x)
    med = errs[len(errs) // 2] if errs else float("nan")
    worst = max(errs, key=abs) if errs else float("nan")
    print(f"{name}: {len(rs)} runs, {len(ex)} expressed, {len(v)} with a verdict: false fits {len(ff)}, "
          f"false does-not-fit {len(fn)} (+{len(fn_near)} within 2 % of the device); "
          f"{len(errs)} step peaks: median error {med:+.1f} %, worst {worst:+.1f} %")
    cr = sorted(x["ctx_ratio"] for x in rs if "ctx_ratio" in x)
    if cr:
        print(f"  {len(cr)} max-context runs: vramfit's longest context / the published one: median "
              f"{cr[len(cr) // 2]:.2f}, range {cr[0]:.2f}-{cr[-1]:.2f}")
    for i in ff:
        print("  false fit:", i)
    for i in fn:
        print("  false does-not-fit:", i)


if __name__ == "__main__":
    main()
