#!/usr/bin/python3
"""serving_logs.py — vramfit against the public vLLM and llama.cpp serving
logs of tests/reference/serving-logs/ (vllm.tsv, llamacpp.tsv), each set
apart (calibration, verification: by the last digit of the thread's number,
README there).

Each run's knobs, as the log states them, become a vramfit command by the
fixed rules below, decided without looking at any figure:

* model: the name before any " (", matched to the catalog by a normalised
  name (lower case, alphanumerics only, the org, "meta" and an -instruct,
  -chat or -hf suffix dropped); a -FP8 name whose base is in the catalog is
  the base with --weights fp8. Anything else is not expressed (offline: no
  Hub lookups).
* quantization: unknown/bf16/fp16 = as stored; awq/gptq = those load
  schemes; fp8 = --weights fp8 unless the catalog model is already FP8;
  mxfp4 as stored when the checkpoint is; anything else (NVFP4, EXL3, MLX,
  GGUF in vLLM, bnb-4bit, ...) is not expressed.
* GPU: a catalog name by substring; not stated = only the weights (which do
  not depend on it) are expressed, on a placeholder H100.
* vLLM version: the first "0.X[.Y]" in the column; else a date (YYYY-MM)
  maps to the last release before it (table RELEASES); else vramfit's default
  (the current release), as for any unknown knob. Forks, plugins and custom
  builds are not expressed.
* parallel layout: tp as stated; a count of GPUs above 1 with no tp stated
  is not expressed (vLLM's default is TP 1, which would leave them idle).
* max_model_len, max_num_seqs, max_num_batched_tokens, gpu_memory_utilization,
  enforce_eager, kv_cache_dtype: as stated; default/unknown = vLLM's default.
  other_knobs naming a mechanism vramfit does not model (KV transfer /
  LMCache, speculative drafts, pooling, CUDA-graph-estimate switches, block
  size, CPU offload, data parallel) make the run not expressed.
* llama.cpp: the model is the GGUF file's name less its shard counter and
  file-type tail (-Q4_K_M, .Q5_K_M, -IQ4_XS, -F16, ...), a same-shape
  fine-tune tag (-heretic, -abliterated, -uncensored) dropped, then the same
  model rule; the quant column, else the file type from the name (--weights);
  Unsloth's dynamic quants (UD-...) are not expressed (each tensor's type is
  its own); node-llama-cpp's hf_{user}_ prefix dropped; a full fine-tune
  whose model card names its base (LC_FINETUNE_BASE) is that base; a GPU
  family named without its member (LC_GPU_FAMILIES: one chip, one backend
  path) is its largest member;
  a build number bNNNN / NNNN -> --llamacpp-build; forks (ik_llama.cpp,
  llamafile, buun), -sm tensor and a projector file (mmproj) are not
  expressed; -c, -b, -ub, -ngl, -fa, -ctk/-ctv, -ot, --cpu-moe, --n-cpu-moe,
  -ts as stated; "A + B" and "Nx A" rigs of one kind; per-device buffers
  from vramfit's runtime_buffers.devices (compute with the op-offload copies);
  GPUs of an unstated kind (a count only, -ngl stated): the host buffers only.

Figures compared and their unsafe side ("unsafe" = more than 3 % the wrong
way): needs (weights, non-torch, activation peak, CUDA graphs, llama.cpp
model/KV/compute/host buffers) are unsafe when vramfit is below the log; the
KV pool (KV cache GiB, KV tokens) when vramfit is above it; start/OOM when
vramfit says it starts and the log says it did not (a false refusal is
counted apart as a wrong verdict on the safe side).

    VF=build/vramfit /usr/bin/python3 bench/serving_logs.py [--rows] [--why] [--runtime vllm|llamacpp]
"""
import csv
import json
import os
import re
import subprocess
import sys

VF = os.environ.get("VF", "build/vramfit")
DIR = os.environ.get("SERVING_LOGS", "tests/reference/serving-logs")
TOL = 0.03
GIB = 1 << 30
MIB = 1 << 20

# vLLM releases (GitHub release dates), for a log that gives only a date.
RELEASES = [
    ("2023-12", "0.2.5"), ("2024-01", "0.2.7"), ("2024-02", "0.3.2"), ("2024-03", "0.3.3"),
    ("2024-04", "0.4.1"), ("2024-05", "0.4.2"), ("2024-06", "0.5.0"), ("2024-07", "0.5.3"),
    ("2024-08", "0.5.4"), ("2024-09", "0.6.1"), ("2024-10", "0.6.3"), ("2024-11", "0.6.4"),
    ("2024-12", "0.6.4"), ("2025-01", "0.6.6"), ("2025-02", "0.7.1"), ("2025-03", "0.7.3"),
    ("2025-04", "0.8.2"), ("2025-05", "0.8.5"), ("2025-06", "0.9.0"), ("2025-07", "0.9.1"),
    ("2025-08", "0.10.0"), ("2025-09", "0.10.1"), ("2025-10", "0.10.2"), ("2025-11", "0.11.0"),
]

GPUS = [  # substring of the log's gpu column (lower case) -> catalog name
    ("a100 80gb", "A100 SXM 80GB"), ("a100 40gb", "A100 SXM 40GB"), ("h100", "H100 SXM 80GB"),
    ("h200", "H200 SXM 141GB"), ("gh200 (96", "GH200 96GB"), ("gh200 (144", "GH200 144GB"),
    ("gb300", "GB300"), ("gb200", "GB200"), ("b200", "B200"), ("l40s", "L40S"),
    ("rtx 3090 ti", "RTX 3090 Ti"), ("rtx 3090", "RTX 3090"), ("3090", "RTX 3090"),
    ("rtx 4090", "RTX 4090"), ("rtx 5090 laptop", None), ("rtx 5090", "RTX 5090"),
    ("rtx pro 6000", "RTX PRO 6000 Blackwell"), ("rtx pro 4500", "RTX PRO 4500 Blackwell"), ("mi300x", "MI300X"), ("rtx 4080", "RTX 4080"),
    ("4070 ti", None), ("rtx 5060 ti", "RTX 5060 Ti 16GB"),
]

UNMODELLED = [  # other_knobs: mechanisms vramfit does not price (lower-case substrings)
    ("kv-transfer", "KV transfer connector"), ("lmcache", "LMCache"), ("dflash", "speculative draft"),
    ("speculative", "speculative draft"), ("pooling", "pooling model"),
    ("estimate_cudagraphs", "CUDA-graph estimate switch"), ("cg_estimate", "CUDA-graph estimate switch"),
    ("block_size", "block size"), ("cpu-offload", "CPU offload"), ("data+expert", "data parallel"),
    ("dep2", "data parallel"), ("swap_space", "swap space"),
]

NEED, POOL = "need", "pool"
VLLM_FIGS = {  # figure -> (side, unit bytes or None for a count)
    "weights_gib": (NEED, GIB), "non_torch_gib": (NEED, GIB), "activation_peak_gib": (NEED, GIB),
    "cuda_graph_gib": (NEED, GIB), "kv_cache_gib": (POOL, GIB), "kv_tokens": (POOL, None), "oom": ("verdict", None),
    # the device's memory as vLLM reads it (a larger one is a larger budget), its KV blocks of 16 tokens
    # and the requests of max_model_len they hold, and what nvidia-smi shows while serving
    "total_gpu_gib": (POOL, GIB), "gpu_blocks": (POOL, None), "max_concurrency": (POOL, None),
    "nvidia_smi_mib": (NEED, MIB),
}
LC_FIGS = {"cuda_model_mib": "model", "gpu_model_mib": "model", "kv_mib": "context", "compute_mib": "compute",
           "host_model_mib": "host_model", "host_compute_mib": "host_compute", "oom": "verdict"}


def norm(name):
    n = name.split(" (")[0].strip().split("/")[-1].lower()
    n = re.sub(r"[^a-z0-9.]", "", n).replace(".", "")
    n = re.sub(r"^meta", "", n)
    fp8 = n.endswith("fp8")
    n = n[:-3] if fp8 else n
    for s in ("instruct", "chat", "hf"):
        n = re.sub(s + "$", "", n)
    return n + ("fp8" if fp8 else "")


def catalog():
    out = subprocess.run([VF, "models"], capture_output=True, text=True).stdout.split("\n")[1:]
    return {norm(l.split()[0]): l.split()[0] for l in out if l.strip()}


CATALOG = None


def model_of(name):
    """(catalog model, extra args) or (None, why)."""
    n = norm(name)
    if n in CATALOG:
        return CATALOG[n], []
    if n.endswith("fp8") and n[:-3] in CATALOG:  # which tensors an FP8 checkpoint keeps wide is its own
        return None, "FP8 checkpoint not in the catalog: " + name.split(" (")[0]
    return None, "model not in the catalog: " + name.split(" (")[0]


def quant_args(q, model):
    q = q.lower()
    if q in ("", "unknown", "bfloat16", "bf16", "fp16", "float16", "auto") or "checkpoint" in q and "fp8" not in q:
        return []
    if q.startswith("fp8"):
        return [] if model.lower().endswith("fp8") else ["--weights", "fp8"]
    if "awq" in q:
        return ["--weights", "awq"]
    if "gptq" in q:
        return ["--weights", "gptq"]
    if "mxfp4" in q and "gpt-oss" in model:
        return []
    return None


def gpu_of(g):
    g = g.lower()
    for k, name in GPUS:
        if k in g:
            return name
    return None


def num(v):
    m = re.match(r"\s*(-?[0-9]+(?:\.[0-9]+)?)", v or "")
    return float(m.group(1)) if m else None


def vllm_version(v):
    lv = v.lower()
    if any(k in lv for k in ("fork", "plugin", "custom", "rocm/")):
        return None, "fork or plugin build: " + v
    ver = ""  # vramfit's default: the current release
    m = re.search(r"\b0\.(\d+)(?:\.(\d+))?", v)
    d = re.search(r"(20\d\d-\d\d)", v)
    if m and not v.startswith("0.1.dev"):
        ver = "0.%s.%s" % (m.group(1), m.group(2) or "0")
    elif d:
        rel = [r for dd, r in RELEASES if dd <= d.group(1)]
        if rel and d.group(1) <= RELEASES[-1][0]:
            ver = rel[-1]
    # the engine the log names, where the release let one choose (0.7-0.10)
    mv = re.match(r"0\.(\d+)\.", ver)
    if mv and 7 <= int(mv.group(1)) <= 10 and re.search(r"\bV0\b", v):
        ver += "/v0"
    elif mv and int(mv.group(1)) == 7 and re.search(r"\bV1\b", v):
        ver += "/v1"
    return ver, None


def vllm_args(r):
    """vramfit arguments and the figures they can express, or (None, why)."""
    model, extra = model_of(r["model"])
    if model is None:
        return None, extra
    q = quant_args(r["dtype_or_quant"], model)
    if q is None:
        return None, "quantization not expressible: " + r["dtype_or_quant"]
    ver, why = vllm_version(r["vllm_version"])
    if ver is None:
        return None, why
    ok = r["other_knobs"].lower()
    for k, why in UNMODELLED:
        if k in ok:
            return None, "not modelled: " + why
    gpu = gpu_of(r["gpu"])
    count = num(r["gpu_count"]) if re.match(r"^\d+$", r["gpu_count"].strip()) else None
    tp = num(r["tp"]) if re.match(r"^\d+$", r["tp"].strip()) else None
    if count and count > 1 and not tp:
        return None, "tensor parallel size not stated for %d GPUs" % count
    n = int(tp or 1)
    a = [model, "--runtime", "vllm", "--offline", "--json", "--explain"] + q
    a += ["--gpu", "%sx%d" % (gpu or "H100 SXM 80GB", n), "--tp", str(n)]
    if ver:
        a += ["--vllm-version", ver]
    for col, flag in (("max_model_len", "--max-model-len"), ("max_num_seqs", "--max-num-seqs"),
                      ("max_num_batched_tokens", "--max-num-batched-tokens")):
        v = r[col].split(" ")[0]
        if re.match(r"^\d+$", v):
            a += [flag, v]
    u = num(r["gpu_memory_utilization"])
    if u:
        a += ["--gpu-util", str(u)]
    if r["enforce_eager"].lower().split(" ")[0] in ("yes", "true"):
        a.append("--enforce-eager")
    kv = r["kv_cache_dtype"].lower()
    if kv.startswith("fp8"):
        a += ["--kv", "fp8"]
    elif kv not in ("", "unknown", "default", "auto"):
        return None, "KV cache dtype not expressible: " + kv
    if "expert_parallel" in ok or "expert-parallel" in ok:
        a += ["--ep", str(n)]
    return (a, gpu is not None), None


def vllm_figures(d):
    ex = "\n".join(d.get("explain", []))
    m = re.search(r"non-torch (\d+)", ex)
    f = {"weights_gib": d["components"]["weights"], "activation_peak_gib": d["components"]["activations"],
         "cuda_graph_gib": d.get("runtime_buffers", {}).get("cuda_graphs", 0),
         "kv_cache_gib": d["components"]["kv_cache"], "kv_tokens": d.get("kv_cache_tokens"),
         "oom": d.get("starts"),
         "max_concurrency": d.get("max_concurrency"),
         # nvidia-smi after start-up: serving, the profile's activations freed
         "nvidia_smi_mib": d.get("phases", {}).get("serving_idle_bytes", d.get("device_bytes"))}
    notes = d.get("assumptions", {})
    notes = [str(a) for a in (notes.values() if isinstance(notes, dict) else notes)]
    # vLLM's "# GPU blocks" are 16-token blocks except in a hybrid layout (its own block size)
    if d.get("kv_cache_tokens") is not None and not any("hybrid KV cache" in a for a in notes):
        f["gpu_blocks"] = d["kv_cache_tokens"] // 16
    if m:
        f["non_torch_gib"] = int(m.group(1))
    for a in notes:
        g = re.search(r"gpu ([0-9.]+) GiB x gpu_memory_utilization", a)
        if g:
            f["total_gpu_gib"] = float(g.group(1)) * GIB
    return f


def run(a):
    p = subprocess.run([VF, "estimate"] + a, capture_output=True, text=True)
    if p.returncode == 2 and "vLLM" in p.stderr:  # a layout vLLM refuses: does not start
        return {"refused": p.stderr.strip()}, None
    if p.returncode not in (0, 1):
        return None, "vramfit: " + p.stderr.strip().split("\n")[0]
    return json.loads(p.stdout), None


class Score:
    def __init__(self):
        self.expressed, self.not_expressed, self.unsafe, self.false_refusals = 0, [], [], []
        self.worst_under, self.worst_over = (0.0, ""), (0.0, "")

    def add(self, label, side, got, want):
        self.expressed += 1
        err = (got - want) / abs(want) if want else (0.0 if got == want else float("inf"))
        if err < self.worst_under[0]:
            self.worst_under = (err, label)
        if err > self.worst_over[0]:
            self.worst_over = (err, label)
        if (side == NEED and err < -TOL) or (side == POOL and err > TOL):
            self.unsafe.append("%s: vramfit %.4g vs log %.4g (%+.1f %%)" % (label, got, want, 100 * err))
        return err

    def verdict(self, label, starts, started):
        self.expressed += 1
        if starts and not started:
            self.unsafe.append("%s: vramfit says it starts, the log says it did not" % label)
        elif started and not starts:
            self.false_refusals.append(label)


def started_of(v):
    v = v.lower()
    if v.startswith("no-start") or v.startswith("yes"):
        return False
    return True if v.startswith("no") else None


def answered_runs(rows, figures, args_of):
    """Each run's scored figures with vramfit's answer: (run id, rows, args, answer, why not)."""
    runs = {}
    for r in rows:
        runs.setdefault(r["run_id"], []).append(r)
    for rid, rs in runs.items():
        figs = [r for r in rs if r["figure"] in figures]
        if not figs:
            continue
        ar, why = args_of(rs[0])
        d = None
        if ar:
            d, why = run(ar[0])
        yield rid, figs, ar, d, why


def score_vllm(rows, sc, show):
    for rid, figs, ar, d, why in answered_runs(rows, VLLM_FIGS, vllm_args):
        for r in figs:
            label = "vllm %s %s" % (rid, r["figure"])
            if not d:
                sc.not_expressed.append((label, why))
                continue
            if not ar[1] and r["figure"] != "weights_gib":
                sc.not_expressed.append((label, "GPU not stated"))
                continue
            if "refused" in d:
                if r["figure"] == "oom":
                    sc.verdict(label, False, started_of(r["value"]))
                else:
                    sc.not_expressed.append((label, "vramfit refuses the layout: " + d["refused"][:80]))
                continue
            got = vllm_figures(d)
            if r["figure"] == "oom":
                s = started_of(r["value"])
                if s is None:
                    sc.not_expressed.append((label, "outcome not stated: " + r["value"]))
                else:
                    sc.verdict(label, got["oom"], s)
                    if show:
                        print("  %-60s vramfit %s  log %s" % (label, "starts" if got["oom"] else "does not start",
                                                               "started" if s else "did not start"))
                continue
            want = num(r["value"])
            if want is None:
                sc.not_expressed.append((label, "figure not a number: " + r["value"]))
                continue
            if "?" in r["value"]:
                sc.not_expressed.append((label, "the figure's meaning is uncertain in the log: " + r["value"]))
                continue
            if got.get(r["figure"]) is None:
                sc.not_expressed.append((label, "vramfit gives no such figure"))
                continue
            side, unit = VLLM_FIGS[r["figure"]]
            g = got[r["figure"]] / unit if unit else got[r["figure"]]
            err = sc.add(label, side, g, want)
            if show:
                print("  %-60s vramfit %10.4g  log %10.4g  %+6.1f %%" % (label, g, want, 100 * err))


# a GGUF file name's tail: shard counter, then the file type (llama.cpp's LLAMA_FTYPE names,
# plus the -L/-XL variants of the quantizers that keep embeddings/output at Q8_0)
LC_QUANT = re.compile(r"[-._ ]((?:I?Q\d(?:_[0-9A-Z]+)*(?:_[LMS]|_XL|_XS|_XXS)?)|MXFP4(?:_MOE)?|F16|BF16|F32)$", re.I)
LC_SHARD = re.compile(r"-\d{5}-of-\d{5}$")
# fine-tunes that keep the base model's tensors and shapes (abliteration edits weights only)
LC_SAME_SHAPE = ("-heretic", "-abliterated", "-uncensored")
LC_FORKS = ("ik_llama", "llamafile", "buun", "fork")
# full fine-tunes that keep their base's tensors and shapes, by the base_model their model card
# names (a source apart from the logs): tobil/qmd-query-expansion-1.7B is an SFT of Qwen3-1.7B
# (https://huggingface.co/tobil/qmd-query-expansion-1.7B, card front matter base_model)
LC_FINETUNE_BASE = {"qmd-query-expansion-1.7B": "Qwen/Qwen3-1.7B"}
# GPU families whose members share one chip architecture and backend path (so every buffer of a
# fully offloaded model is the same on each) and differ only in memory: a log naming the family
# but not the member is priced on the largest, as "GPU kind not stated" would be; Jetson Orin
# (Nano, NX, AGX: all SM 8.7, ggml-cuda's integrated-GPU path)
LC_GPU_FAMILIES = (("jetson orin", "Jetson AGX Orin 64GB"),)


def lc_file(f):
    """(model name, file type or '') from a GGUF file name as the log gives it."""
    n = f.split(" (")[0].strip().split("/")[-1]
    n = re.sub(r"\.gguf$", "", n, flags=re.I)
    n = LC_SHARD.sub("", n)
    m = LC_QUANT.search(n)
    q = ""
    if m:
        q, n = m.group(1), n[:m.start()]
    for t in LC_SAME_SHAPE:
        if n.lower().endswith(t):
            n = n[:-len(t)]
    return n, q.lower()


def lc_gpus(g):
    """[catalog name] * count, or None: 'A + B', '2x A', '2 x A'."""
    out = []
    for part in g.split("+"):
        part = part.strip()
        m = re.match(r"^(\d+)\s*[x×]\s*(.*)$", part, re.I)
        k, part = (int(m.group(1)), m.group(2)) if m else (1, part)
        out += [gpu_of(part)] * k
    return out


def lc_args(r):
    b = r["build"].lower()
    if any(k in b for k in LC_FORKS) and "mainline" not in b:
        return None, "fork build: " + r["build"].split(" (")[0]
    if re.search(r"[-._]UD-", r["model_file"]):  # Unsloth's dynamic quants choose each tensor's type
        return None, "dynamic quant (per-tensor types not stated): " + r["model_file"].split(" (")[0]
    name, fq = lc_file(r["model_file"])
    if re.match(r"^hf_[^_]+_", name):  # node-llama-cpp's download name: hf_{user}_{file}
        name = name.split("_", 2)[2]
    if name in LC_FINETUNE_BASE:
        name = LC_FINETUNE_BASE[name]
    model, extra = model_of(name)
    if model is None and "_" in name:  # a quantizer's "Org_Model" file name (bartowski: Qwen_Qwen3.5-27B)
        model, extra2 = model_of(name.split("_", 1)[1])
        extra = extra if model is None else extra2
    if model is None:
        return None, extra
    if "mmproj" in r["model_file"].lower():
        return None, "multimodal projector file not available offline"
    a = [model, "--runtime", "llamacpp", "--offline", "--json"]
    q = r["quant"].split(" ")[0].lower()
    q = fq if q in ("unknown", "") else q
    if not q:
        return None, "quant not stated (a GGUF's buffers are its file type's)"
    if not re.match(r"^(q\d|iq\d|f16|bf16|f32)", q):
        return None, "quant not expressible: " + q
    a += ["--weights", q]
    bm = re.search(r"(?:^|\bb)(\d{4,5})\b", r["build"])
    if bm:
        a += ["--llamacpp-build", bm.group(1)]
    names = lc_gpus(r["gpus"])
    known = True
    fam = [n for k, n in LC_GPU_FAMILIES if k in r["gpus"].lower()]
    if fam and all(n is None for n in names) and len(names) == 1:
        names = fam
    if all(n is None for n in names):
        # devices of an unstated kind: a count ("8 NVIDIA GPUs", "1 GPU (CUDA0 ...)") on a placeholder
        # large enough that nothing is fitted away; only the host buffers, which no device's size
        # changes once every layer is offloaded, are compared (as the vLLM weights rule)
        m = re.match(r"^\s*(\d+)\s+(?:nvidia\s+)?gpus?\b", r["gpus"], re.I)
        if not m or not re.match(r"^(all|\d+)", r["ngl"].lower()):
            return None, "GPUs not stated: " + r["gpus"]
        names, known = ["RTX PRO 6000 Blackwell"] * int(m.group(1)), False
    if any(n is None for n in names) or len(set(names)) > 1:
        return None, "GPUs not stated or mixed: " + r["gpus"]
    a += ["--gpu", "%sx%d" % (names[0], len(names))]
    for col, flag in (("n_ctx", "--context"), ("n_batch", "--lc-batch"), ("n_ubatch", "--ubatch")):
        v = r[col].split(" ")[0]
        if re.match(r"^\d+$", v):
            a += [flag, v]
    ngl = r["ngl"].split(" ")[0]
    if re.match(r"^\d+$", ngl):
        a += ["--n-gpu-layers", ngl]
    fa = r["flash_attn"].lower()
    if fa.startswith("enabled") or fa.startswith("on") or fa.startswith("1"):
        a += ["--flash-attn", "on"]
    elif fa.startswith("disabled") or fa.startswith("off") or fa.startswith("0"):
        a += ["--flash-attn", "off"]
    k, v = r["cache_type_k"].split(" ")[0].lower(), r["cache_type_v"].split(" ")[0].lower()
    if re.match(r"^(f16|q8_0|q4_0|bf16)$", k) and re.match(r"^(f16|q8_0|q4_0|bf16)$", v):
        a += ["--kv", "%s,%s" % (k, v)]
    ot = r["override_tensor"].lower()
    if "unknown" in ot:
        return None, "tensor placement not stated"
    if ot not in ("none", "", "n/a"):
        a += ["--override-tensor", r["override_tensor"].split(" ")[0]]
    if r["cpu_moe"].lower().startswith("yes"):
        a.append("--cpu-moe")
    if re.match(r"^\d+$", r["n_cpu_moe"]):
        a += ["--n-cpu-moe", r["n_cpu_moe"]]
    ts = r["tensor_split"].lower()
    if "-sm" in ts or "row" in ts or "tensor" in ts:
        return None, "split mode not modelled: " + r["tensor_split"]
    m = re.match(r"^(?:-ts\s*)?([0-9.]+(?:[,/][0-9.]+)+)", ts)
    if m:
        a += ["--tensor-split", m.group(1).replace("/", ",")]
    return (a, known), None


def lc_device_index(dev, prefixes=("cuda", "rocm", "vulkan", "mtl", "gpu")):
    m = re.match(r"^(%s)(\d+)$" % "|".join(prefixes), dev.lower())
    return int(m.group(2)) if m else None


def score_llamacpp(rows, sc, show):
    for rid, figs, ar, d, why in answered_runs(rows, LC_FIGS, lc_args):
        for r in figs:
            label = "llama.cpp %s %s %s" % (rid, r["figure"], r["device"])
            if not d:
                sc.not_expressed.append((label, why))
                continue
            rb = d.get("runtime_buffers", {})
            kind = LC_FIGS[r["figure"]]
            if kind == "verdict":
                sc.not_expressed.append((label, "llama.cpp start verdict: vramfit estimate gives none"))
                continue
            dev = r["device"].lower()
            if not ar[1] and not kind.startswith("host"):
                sc.not_expressed.append((label, "GPU kind not stated (only host buffers compared)"))
                continue
            if kind.startswith("host"):
                got = rb.get(kind)
            elif dev in ("total", "all"):
                got = rb.get(kind)
            else:
                i = lc_device_index(dev)
                devs = rb.get("devices") or []
                got = devs[i].get(kind) if i is not None and i < len(devs) else None
                if got is not None and kind == "compute":  # the device's compute buffer holds the op-offload copies
                    got += devs[i].get("op_offload", 0)
            want = num(r["value"])
            if got is None or want is None:
                sc.not_expressed.append((label, "figure not comparable"))
                continue
            err = sc.add(label, NEED, got / MIB, want)
            if show:
                print("  %-60s vramfit %10.4g  log %10.4g  %+6.1f %%" % (label, got / MIB, want, 100 * err))


def report(name, sc):
    print("%s: %d figures expressed, %d not; %d unsafe (> 3 %%), %d false refusals" %
          (name, sc.expressed, len(sc.not_expressed), len(sc.unsafe), len(sc.false_refusals)))
    print("  worst under (vramfit below the log): %+.1f %% (%s)" % (100 * sc.worst_under[0], sc.worst_under[1] or "-"))
    print("  worst over (vramfit above the log):  %+.1f %% (%s)" % (100 * sc.worst_over[0], sc.worst_over[1] or "-"))
    for u in sc.unsafe:
        print("  unsafe: " + u)
    for f in sc.false_refusals:
        print("  false refusal: " + f)


def main():
    global CATALOG
    show = "--rows" in sys.argv
    why = "--why" in sys.argv
    only = sys.argv[sys.argv.index("--runtime") + 1] if "--runtime" in sys.argv[:-1] else ""
    CATALOG = catalog()
    for s in ("calibration", "verification"):
        sc = Score()
        print("== %s ==" % s)
        if only in ("", "vllm"):
            with open(os.path.join(DIR, "vllm.tsv")) as f:
                score_vllm([r for r in csv.DictReader(f, delimiter="\t") if r["set"] == s], sc, show)
        if only in ("", "llamacpp"):
            with open(os.path.join(DIR, "llamacpp.tsv")) as f:
                score_llamacpp([r for r in csv.DictReader(f, delimiter="\t") if r["set"] == s], sc, show)
        report(s, sc)
        if why:
            reasons = {}
            for label, w in sc.not_expressed:
                reasons.setdefault(w, []).append(label)
            for w, ls in sorted(reasons.items(), key=lambda x: -len(x[1])):
                print("  not expressed (%d): %s" % (len(ls), w))
        print()


if __name__ == "__main__":
    main()
