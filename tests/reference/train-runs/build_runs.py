#!/usr/bin/python3
"""Published fine-tuning memory figures -> runs.jsonl + runs.tsv, with the calibration/verification split.

Every record is transcribed from one public source (url + verbatim quote).  Knobs the source does not
state are "unknown".  A value suffixed " (cfg)" is not in the quoted table/sentence but is the default
of the recipe/config file the source names, read at the commit in the url (the source says it used
that config; it does not restate the knob).  Split rule (fixed before transcription, see README):
    h = sha256((url + "#" + id).encode()).hexdigest(); verification iff int(h[:8], 16) < 0x55555555
"""
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ["id", "set", "source", "url", "model", "trainer", "trainer_version", "gpu", "n_gpus", "precision",
          "load_dtype", "method", "lora_r", "lora_alpha", "lora_targets", "batch", "seq_len", "grad_accum",
          "grad_ckpt", "optimizer", "zero_fsdp", "offload", "attn", "ce", "compile", "act_offload", "packed",
          "outcome", "figure", "unit", "figure_kind", "quote", "notes"]
U = "unknown"
RUNS = []


def split(url, rid):
    h = hashlib.sha256((url + "#" + rid).encode("utf-8")).hexdigest()
    return "verification" if int(h[:8], 16) < 0x55555555 else "calibration"


def R(rid, url, **kw):
    d = {k: U for k in FIELDS}
    d.update(kw)
    d["id"], d["url"] = rid, url
    d["set"] = split(url, rid)
    for k in kw:
        assert k in FIELDS, k
    RUNS.append(d)


# ---------------------------------------------------------------------------------------------------
# torchtune README, 2024-09-25 (Llama 3.1 table): "all the below numbers are provided for batch size 2
# (without gradient accumulation), a dataset packed to sequence length 2048, and torch compile enabled."
# Figure = torchtune's logged peak memory (torch.cuda.max_memory_allocated-based "Peak Memory per GPU").
TT = "https://github.com/pytorch/torchtune/blob/3a6d328e7072ce29d858c7db7904aa79071329d2/README.md"
TT_NOTE = ("README: 'all the below numbers are provided for batch size 2 (without gradient accumulation), a "
           "dataset packed to sequence length 2048, and torch compile enabled'; '*= Measured over one full "
           "training epoch'; '**= Uses CPU offload with fused optimizer'")
tt_common = dict(source="torchtune README (2024-09)", trainer="torchtune", trainer_version="main@3a6d328e (2024-09-25)",
                 precision="bf16 (cfg)", load_dtype="bf16 (cfg)", batch=2, seq_len=2048, grad_accum=1,
                 packed="yes", compile="yes", outcome="ran", unit="GiB", figure_kind="peak memory per GPU (torchtune log)",
                 ce="CEWithChunkedOutputLoss (cfg)", notes=TT_NOTE)
for rid, model, meth, gpu, n, fig, quote, extra in [
    ("llama3.1-8b-full-1x4090", "meta-llama/Llama-3.1-8B", "full", "RTX 4090", 1, 18.9,
     "| Llama 3.1 8B | Full finetune | 1x 4090 | 18.9 GiB | 1650 |",
     dict(optimizer="bitsandbytes PagedAdamW8bit, optimizer_in_bwd=True (cfg 8B_full_single_device)", grad_ckpt="yes (cfg)")),
    ("llama3.1-8b-full-1xA6000", "meta-llama/Llama-3.1-8B", "full", "RTX A6000", 1, 37.4,
     "| Llama 3.1 8B | Full finetune | 1x A6000 | 37.4 GiB |  2579|", dict()),
    ("llama3.1-8b-lora-1x4090", "meta-llama/Llama-3.1-8B-Instruct", "LoRA", "RTX 4090", 1, 16.2,
     "| Llama 3.1 8B | LoRA | 1x 4090 |  16.2 GiB | 3083 |",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)")),
    ("llama3.1-8b-lora-1xA6000", "meta-llama/Llama-3.1-8B-Instruct", "LoRA", "RTX A6000", 1, 30.3,
     "| Llama 3.1 8B | LoRA | 1x A6000 | 30.3 GiB  | 4699 |", dict()),
    ("llama3.1-8b-qlora-1x4090", "meta-llama/Llama-3.1-8B-Instruct", "QLoRA (torchao NF4)", "RTX 4090", 1, 7.4,
     "| Llama 3.1 8B | QLoRA | 1x 4090 | 7.4 GiB | 2413  |",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q,k,v,output_proj + MLP (cfg)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)")),
    ("llama3.1-70b-full-8xA100", "meta-llama/Llama-3.1-70B", "full", "A100", 8, 13.9,
     "| Llama 3.1 70B | Full finetune | 8x A100  | 13.9 GiB ** | 1568  |",
     dict(zero_fsdp="FSDP (full_finetune_distributed)", offload="CPU offload with fused optimizer (** footnote)")),
    ("llama3.1-70b-lora-8xA100", "meta-llama/Llama-3.1-70B-Instruct", "LoRA", "A100", 8, 27.6,
     "| Llama 3.1 70B | LoRA | 8x A100 | 27.6 GiB  | 3497  |",
     dict(zero_fsdp="FSDP (lora_finetune_distributed)", lora_r="16 (cfg)", lora_alpha="32 (cfg)", lora_targets="q,k,v (cfg)", grad_ckpt="yes (cfg)")),
    ("llama3.1-405b-qlora-8xA100", "meta-llama/Llama-3.1-405B-Instruct", "QLoRA (torchao NF4)", "A100", 8, 44.8,
     "| Llama 3.1 405B | QLoRA | 8x A100 | 44.8 GB  | 653  |",
     dict(zero_fsdp="FSDP (lora_finetune_distributed)", lora_r="16 (cfg)", lora_alpha="32 (cfg)", unit="GB (as printed)")),
]:
    d = dict(tt_common, model=model, method=meth, gpu=gpu, n_gpus=n, figure=fig, quote=quote)
    d.update(extra)
    R("torchtune-readme-2024-09#" + rid, TT, **d)

# torchtune README (HEAD, added 2024-11-18 'add flags to readme'): Llama 3.2 3B, sequential techniques.
TTF = "https://github.com/pytorch/torchtune/blob/bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1/README.md"
flags_note = ("'Baseline uses Recipe=full_finetune_single_device, Model=Llama 3.2 3B, Batch size=2, Max sequence length=4096, "
              "Precision=bf16, Hardware=A100'; 'Each technique is added on top of the previous one, except for LoRA and QLoRA, "
              "which do not use optimizer_in_bwd or AdamW8bit optimizer.'")
steps = [("baseline", 25.5, "| Baseline | 25.5 | - | 2091 | - |"),
         ("packed", 60.0, "| [+ Packed Dataset](https://pytorch.org/torchtune/main/basics/packing.html) | 60.0 | +135.16% | 7075 | +238.40% |"),
         ("compile", 51.0, "| [+ Compile](https://pytorch.org/tutorials/intermediate/torch_compile_tutorial.html) | 51.0 | -14.93% | 8998 | +27.18% |"),
         ("chunkedce", 42.9, "| [+ Chunked Cross Entropy](...CEWithChunkedOutputLoss.html) | 42.9 | -15.83% | 9174 | +1.96% |"),
         ("actckpt", 24.9, "| [+ Activation Checkpointing](...#activation-checkpointing) | 24.9 | -41.93% | 7210 | -21.41% |"),
         ("optinbwd", 23.1, "| [+ Fuse optimizer step into backward](...#fusing-optimizer-step-into-backward-pass) | 23.1 | -7.29% | 7309 | +1.38% |"),
         ("actoffload", 21.8, "| [+ Activation Offloading](...#activation-offloading) | 21.8 | -5.48% | 7301 | -0.11% |"),
         ("adamw8bit", 17.6, "| [+ 8-bit AdamW](...#lower-precision-optimizers) | 17.6 | -19.63% | 6960 | -4.67% |"),
         ("lora", 8.5, "| [LoRA](...#glossary-lora) | 8.5 | -51.61% | 8210 | +17.96% |"),
         ("qlora", 4.6, "| [QLoRA](...#quantized-low-rank-adaptation-qlora) | 4.6 | -45.71% | 8035 | -2.13% |")]
on = set()
for i, (k, fig, q) in enumerate(steps):
    if k not in ("lora", "qlora"):
        on.add(k)
        cur = set(on)
    else:
        cur = set(on) - {"optinbwd", "adamw8bit"}
    d = dict(source="torchtune README optimization-flags table", trainer="torchtune",
             trainer_version="main (table added 2024-11-18, #2003)", model="meta-llama/Llama-3.2-3B", gpu="A100", n_gpus=1,
             precision="bf16", load_dtype="bf16", batch=2, seq_len=4096, grad_accum=1,
             method={"lora": "LoRA", "qlora": "QLoRA (torchao NF4)"}.get(k, "full"),
             packed="yes" if "packed" in cur else "no", compile="yes" if "compile" in cur else "no",
             ce="CEWithChunkedOutputLoss" if "chunkedce" in cur else "standard CE (recipe baseline)",
             grad_ckpt="yes" if "actckpt" in cur else "no (implied)",
             optimizer=("bnb AdamW8bit" if "adamw8bit" in cur else "AdamW (implied: 8-bit is a later step)") + (", optimizer_in_bwd" if "optinbwd" in cur else ""),
             act_offload="yes" if "actoffload" in cur else "no (implied)", outcome="ran", figure=fig, unit="GiB",
             figure_kind="peak memory active (torch.cuda memory_stats active_bytes peak)", quote=q, notes=flags_note)
    if k in ("lora", "qlora"):
        d["notes"] += "; reproduce command for the final row: llama3_2/3B_qlora_single_device ... optimizer=torch.optim.AdamW (rank 64/alpha 128 in cfg)"
        d.update(lora_r="64 (cfg)", lora_alpha="128 (cfg)", lora_targets="q,v,output_proj + MLP (cfg)")
    R("torchtune-readme-flags#3b-step%d-%s" % (i, k), TTF, **d)

# torchtune README 2024-08 (and 2024-06) Llama2 table
TT2 = "https://github.com/pytorch/torchtune/blob/6be89c037548cbfa75927de2825c599225426e57/README.md"
for rid, gpu, n, meth, model, bs, sl, fig, q, extra in [
    ("llama2-7b-qlora-1x4090", "RTX 4090", 1, "QLoRA (torchao NF4)", "meta-llama/Llama-2-7b-hf", 4, 2048, 12.3,
     "| 1 x RTX 4090 |     QLoRA **         |  Llama2-7B      |    Batch Size = 4, Seq Length = 2048   | 12.3 GB | 3155  |",
     dict(compile="yes (** footnote)", lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q,k,v,output_proj + MLP (cfg)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)")),
    ("llama2-7b-lora-1x4090", "RTX 4090", 1, "LoRA", "meta-llama/Llama-2-7b-hf", 4, 2048, 21.3,
     "| 1 x RTX 4090 |     LoRA          |  Llama2-7B      |    Batch Size = 4, Seq Length = 2048   | 21.3 GB | 2582  |",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)")),
    ("llama2-7b-lora-2x4090", "RTX 4090", 2, "LoRA", "meta-llama/Llama-2-7b-hf", 4, 2048, 16.2,
     "| 2 x RTX 4090 |     LoRA          |  Llama2-7B      |    Batch Size = 4, Seq Length = 2048   | 16.2 GB | 2768  |",
     dict(zero_fsdp="FSDP (lora_finetune_distributed)", lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)", grad_ckpt="no (cfg 7B_lora)")),
    ("llama2-7b-full-1x4090", "RTX 4090", 1, "full", "meta-llama/Llama-2-7b-hf", 4, 2048, 24.1,
     "| 1 x RTX 4090 |   Full finetune *   |  Llama2-7B      |    Batch Size = 4, Seq Length = 2048   | 24.1 GB | 702  |",
     dict(optimizer="bitsandbytes PagedAdamW (* footnote), optimizer_in_bwd=True (cfg 7B_full_low_memory)", grad_ckpt="yes (cfg)")),
    ("llama2-7b-full-4x4090", "RTX 4090", 4, "full", "meta-llama/Llama-2-7b-hf", 4, 2048, 24.1,
     "| 4 x RTX 4090 |   Full finetune   |  Llama2-7B      |    Batch Size = 4, Seq Length = 2048   | 24.1 GB | 1388  |",
     dict(zero_fsdp="FSDP (full_finetune_distributed)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)")),
    ("llama2-70b-lora-8xA100", "A100", 8, "LoRA", "meta-llama/Llama-2-70b-hf", 4, 4096, 26.4,
     "| 8 x A100     |     LoRA          |  Llama2-70B     |    Batch Size = 4, Seq Length = 4096   | 26.4 GB | 3384  |",
     dict(zero_fsdp="FSDP (lora_finetune_distributed)", lora_r="16 (cfg)", lora_alpha="32 (cfg)", lora_targets="q,k,v (cfg)", grad_ckpt="yes (cfg)")),
    ("llama2-70b-full-8xA100", "A100", 8, "full", "meta-llama/Llama-2-70b-hf", 4, 4096, 70.4,
     "| 8 x A100     |   Full Finetune *   |  Llama2-70B     |    Batch Size = 4, Seq Length = 4096   | 70.4 GB | 2032  |",
     dict(zero_fsdp="FSDP (full_finetune_distributed)", optimizer="bitsandbytes PagedAdamW (* footnote)")),
]:
    d = dict(source="torchtune README (2024-06..08)", trainer="torchtune", trainer_version="main@6be89c03 (2024-08-12)",
             model=model, gpu=gpu, n_gpus=n, method=meth, batch=bs, seq_len=sl, precision="bf16 (cfg)", load_dtype="bf16 (cfg)",
             outcome="ran", figure=fig, unit="GB (as printed)", figure_kind="peak memory per GPU (torchtune log)", quote=q,
             notes="'*= Uses PagedAdamW from bitsandbytes'; '**= Uses torch compile'")
    d.update(extra)
    R("torchtune-readme-2024-08#" + rid, TT2, **d)

# torchtune README 2024-04 ("minimum memory requirements ... using the associated configs")
TT3 = "https://github.com/pytorch/torchtune/blob/c69fba18b7c3c6d952623a184fd52cdc86564fc7/README.md"
for rid, gpu, n, meth, cfg, fig, q, extra in [
    ("llama2-7b-qlora-1x4090", "RTX 4090", 1, "QLoRA (torchao NF4)", "7B_qlora_single_device", 8.57,
     "| 1 x RTX 4090 |     QLoRA          | [qlora_finetune_single_device](recipes/configs/llama2/7B_qlora_single_device.yaml)         |    Llama2-7B      |     8.57 GB            |",
     dict(batch="2 (cfg)", lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q,k,v,output_proj + MLP (cfg)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)", grad_accum="16 (cfg)")),
    ("llama2-7b-lora-2x4090", "RTX 4090", 2, "LoRA", "7B_lora", 20.95,
     "| 2 x RTX 4090 |     LoRA          | [lora_finetune_distributed](recipes/configs/llama2/7B_lora.yaml)         |    Llama2-7B      |    20.95 GB            |",
     dict(batch="2 (cfg)", zero_fsdp="FSDP", lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)", grad_ckpt="no (cfg)", grad_accum="32 (cfg)")),
    ("llama2-7b-lora-1x4090", "RTX 4090", 1, "LoRA", "7B_lora_single_device", 17.18,
     "| 1 x RTX 4090 |     LoRA          | [lora_finetune_single_device](recipes/configs/llama2/7B_lora_single_device.yaml)     |    Llama2-7B      | 17.18 GB           |",
     dict(batch="2 (cfg)", lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)", grad_accum="64 (cfg)")),
    ("llama2-7b-full-1x4090", "RTX 4090", 1, "full", "7B_full_low_memory", 14.97,
     "| 1 x RTX 4090 |   Full finetune   | [full_finetune_single_device](recipes/configs/llama2/7B_full_low_memory.yaml)     |    Llama2-7B      |    14.97 GB            |",
     dict(batch="2 (cfg)", optimizer="bitsandbytes PagedAdamW, optimizer_in_bwd=True (cfg)", grad_ckpt="yes (cfg)", grad_accum="1 (cfg)")),
    ("llama2-7b-full-4x4090", "RTX 4090", 4, "full", "7B_full", 22.9,
     "| 4 x RTX 4090 |   Full finetune   | [full_finetune_distributed](recipes/configs/llama2/7B_full.yaml)         |    Llama2-7B      |    22.9 GB           |",
     dict(batch="2 (cfg)", zero_fsdp="FSDP", optimizer="torch AdamW (cfg)", grad_ckpt="yes (cfg)", grad_accum="1 (cfg)")),
]:
    d = dict(source="torchtune README (2024-04)", trainer="torchtune", trainer_version="main@c69fba18 (2024-04-19)",
             model="meta-llama/Llama-2-7b-hf", gpu=gpu, n_gpus=n, method=meth, precision="bf16 (cfg)", load_dtype="bf16 (cfg)",
             seq_len="dataset-dependent (alpaca, unpacked)", packed="no (cfg)", compile="no (cfg)", outcome="ran", figure=fig,
             unit="GB (as printed)", figure_kind="peak memory per GPU (torchtune log)", quote=q,
             notes="config " + cfg + "; '* these are averaged over multiple runs, but there might be some variance based on the setup.'")
    d.update(extra)
    R("torchtune-readme-2024-04#" + rid, TT3, **d)
for rid, meth, fig, q, extra in [
    ("llama3-8b-qlora-approx9", "QLoRA (torchao NF4)", 9,
     "In our initial experiments for Llama3-8B, QLoRA has a peak allocated memory of ``~9GB``",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q,k,v,output_proj + MLP (cfg)")),
    ("llama3-8b-lora-approx19", "LoRA", 19,
     "while LoRA on a single GPU has a peak allocated memory of ``~19GB``",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)")),
]:
    d = dict(source="torchtune README (2024-04)", trainer="torchtune", trainer_version="main@c69fba18 (2024-04-19)",
             model="meta-llama/Meta-Llama-3-8B-Instruct", gpu=U, n_gpus=1, method=meth, precision="bf16 (cfg)",
             batch="2 (cfg)", grad_ckpt="yes (cfg)", optimizer="torch AdamW (cfg)", outcome="ran", figure=fig,
             unit="GB (approx.)", figure_kind="peak allocated", quote=q)
    d.update(extra)
    R("torchtune-readme-2024-04#" + rid, TT3, **d)

# torchtune docs
TTD = "https://github.com/pytorch/torchtune/blob/bd2a0fc7c31430972728494fa01aaeeb0ebf1ba1/docs/source/tutorials/"
for rid, page, meth, fig, kind, q, extra in [
    ("lora-train-reserved", "qlora_finetune.rst", "LoRA", 15.57, "peak memory reserved, training",
     "LoRA                   13.98 GB                            15.57 GB",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)")),
    ("qlora-train-reserved", "qlora_finetune.rst", "QLoRA (torchao NF4)", 9.29, "peak memory reserved, training",
     "QLoRA                  9.13 GB                             9.29 GB",
     dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q,k,v,output_proj + MLP (cfg)")),
    ("lora-init-allocated", "qlora_finetune.rst", "LoRA", 13.96, "peak memory allocated after model init (no training)",
     "GPU peak memory allocation: 13.96 GB", dict(lora_r="8 (cfg)", lora_alpha="16 (cfg)")),
]:
    d = dict(source="torchtune docs: QLoRA tutorial", trainer="torchtune", trainer_version="docs@bd2a0fc7",
             model="meta-llama/Llama-2-7b-hf", gpu=U, n_gpus=1, method=meth, precision="bf16 (cfg)", batch="2 (cfg)",
             grad_ckpt="yes (cfg)", optimizer="torch AdamW (cfg)", outcome="ran", figure=fig, unit="GB (as printed)",
             figure_kind=kind, quote=q, notes="configs llama2/7B_lora_single_device and llama2/7B_qlora_single_device")
    d.update(extra)
    R("torchtune-docs-qlora#" + rid, TTD + page, **d)
for rid, tgt, r, a, fig in [("qv-r8", "q_proj,v_proj", 8, 16, 15.57), ("all-r8", "q,k,v,output_proj + MLP", 8, 16, 15.87),
                            ("qv-r64", "q_proj,v_proj", 64, 128, 15.86), ("all-r64", "q,k,v,output_proj + MLP", 64, 128, 17.04)]:
    R("torchtune-docs-lora#" + rid, TTD + "lora_finetune.rst", source="torchtune docs: LoRA tutorial table",
      trainer="torchtune", trainer_version="docs@bd2a0fc7", model="meta-llama/Llama-2-7b-hf", n_gpus=1, method="LoRA",
      precision="bf16 (cfg)", lora_r=r, lora_alpha=a, lora_targets=tgt, batch=2, grad_ckpt="yes (cfg)",
      optimizer="torch AdamW (cfg)", outcome="ran", figure=fig, unit="GB (as printed)", figure_kind="peak memory",
      quote="* - %s / %d / %d / %s GB" % ("Q and V only" if tgt.startswith("q_proj") else "all layers", r, a, fig),
      notes="'All the finetuning runs below use the llama2/7B_lora_single_device config, which has a default batch size of 2'")
R("torchtune-docs-llama3#8b-lora-18.5", TTD + "llama3.rst", source="torchtune docs: Llama3 tutorial", trainer="torchtune",
  trainer_version="docs@bd2a0fc7", model="meta-llama/Meta-Llama-3-8B-Instruct", n_gpus=1, method="LoRA",
  precision="bf16 (cfg)", batch="2 (cfg)", lora_r="8 (cfg)", lora_alpha="16 (cfg)", lora_targets="q_proj,v_proj (cfg)",
  outcome="ran", figure=18.5, unit="GB", figure_kind="peak memory",
  quote="In our experiments, we observed a peak memory usage of 18.5 GB. The default config can be trained on a consumer GPU with 24 GB VRAM.",
  notes="config llama3/8B_lora_single_device")
R("torchtune-docs-e2e#3b-lora-16", TTD + "e2e_flow.rst", source="torchtune docs: end-to-end tutorial", trainer="torchtune",
  trainer_version="docs@bd2a0fc7", model="meta-llama/Llama-3.2-3B-Instruct", n_gpus=1, gpu="RTX 3090/4090 (stated target)",
  method="LoRA", precision="bf16", batch=4, lora_r="64 (cfg)", lora_alpha="128 (cfg)", lora_targets="q,v,output_proj + MLP (cfg)",
  grad_ckpt="yes (log hint)", act_offload="no (log hint)", grad_accum="8 (cfg)", outcome="ran", figure=16, unit="GB (approx.)",
  figure_kind="peak memory", quote="This will fine-tune our model using a ``batch_size=4`` and ``dtype=bfloat16``. With these settings the model should have a peak memory usage of ~16GB")

# torchtune PRs
R("torchtune-pr527#llama2-7b-full-pagedadamw-optinbwd", "https://github.com/meta-pytorch/torchtune/pull/527",
  source="torchtune PR #527 'Full finetune < 16GB'", trainer="torchtune", trainer_version="PR #527 (2024-03)",
  model="meta-llama/Llama-2-7b-hf", n_gpus=1, method="full", precision="bf16 (full bf16)", optimizer="bitsandbytes PagedAdamW, optimizer in backward",
  outcome="ran", figure=13.993540096, unit="GB (1e9 B)", figure_kind="peak allocated (reserved 15.974006784 GB)",
  quote="GPU peak memory allocation: 13.993540096GB, GPU peak memory reserved: 15.974006784GB, GPU peak memory active: 13.993540096GB")
for rid, fig, q in [("llama2-7b-full-fsdp-before", 31.5, "peak memory is optimized from 31.5GB to 21.2GB, saves 32.6%"),
                    ("llama2-7b-full-fsdp-optinbwd", 21.2, "peak memory is optimized from 31.5GB to 21.2GB, saves 32.6%")]:
    R("torchtune-pr1530#" + rid, "https://github.com/meta-pytorch/torchtune/pull/1530",
      source="torchtune PR #1530 optimizer-in-backward for FullFinetuneDistributed", trainer="torchtune",
      trainer_version="PR #1530 (2024-09)", model="meta-llama/Llama-2-7b-hf", method="full", zero_fsdp="FSDP (full_finetune_distributed)",
      optimizer="AdamW" + (" in backward" if "optinbwd" in rid else ""), outcome="ran", figure=fig, unit="GB", figure_kind="peak memory",
      quote="By the local testing with llama2/7B_full, " + q, notes="GPU count not stated")
R("torchtune-pr389#llama2-7b-full-adamw-noforeach", "https://github.com/meta-pytorch/torchtune/pull/389",
  source="torchtune PR #389 RFC single-device full FT", trainer="torchtune", trainer_version="RFC (2024-02)",
  model="meta-llama/Llama-2-7b-hf", n_gpus=1, method="full", precision="bf16 (true bf16)", optimizer="torch AdamW foreach=False",
  outcome="ran", figure=54, unit="GB (approx.)", figure_kind="peak memory",
  quote="Disabling this and things look more in line with our expectation. Namely, peak memory is ~54GB WITH AdamW.")
R("torchtune-pr389#llama2-7b-full-sgd-bf16", "https://github.com/meta-pytorch/torchtune/pull/389",
  source="torchtune PR #389 RFC single-device full FT", trainer="torchtune", trainer_version="RFC (2024-02)",
  model="meta-llama/Llama-2-7b-hf", n_gpus=1, method="full", precision="bf16 (true bf16)", optimizer="SGD (no state)",
  outcome="ran", figure=27.83, unit="GB", figure_kind="peak memory (torch stats)",
  quote="Memory Allocated: 13.51 GB / Memory Reserved: 28.14 GB / Peak Memory: 27.83 GB",
  notes="logged 'After Model Setup' in the true-bf16 SGD section; the text: 'the peak memory is after bwd (during opt step)'")

# ---------------------------------------------------------------------------------------------------
# Unsloth README (0acd1c7e, 2026-03): max context that fits, Llama 3.1 8B QLoRA r=32 all linear, batch 1.
US = "https://github.com/unslothai/unsloth/blob/0acd1c7eec2a6c6adb43367a333dd0e30332b1b0/README.md"
us_note = ("'We tested Llama 3.1 (8B) Instruct and did 4bit QLoRA on all linear layers (Q, K, V, O, gate, up and down) with rank = 32 "
           "with a batch size of 1. We padded all sequences to a certain maximum sequence length to mimic long context finetuning workloads.'")
for vram, uc, hf, row in [(8, 2972, None, "| 8 GB     | 2,972                 | OOM             |"),
                          (12, 21848, 932, "| 12 GB    | 21,848                | 932             |"),
                          (16, 40724, 2551, "| 16 GB    | 40,724                | 2,551           |"),
                          (24, 78475, 5789, "| 24 GB    | 78,475                | 5,789           |"),
                          (40, 153977, 12264, "| 40 GB    | 153,977               | 12,264          |"),
                          (48, 191728, 15502, "| 48 GB    | 191,728               | 15,502          |"),
                          (80, 342733, 28454, "| 80 GB    | 342,733               | 28,454          |")]:
    base = dict(source="Unsloth README context-length benchmark", model="meta-llama/Llama-3.1-8B-Instruct", n_gpus=1,
                gpu="%d GB GPU (model unstated)" % vram, method="QLoRA (bnb 4-bit)", lora_r=32, lora_targets="q,k,v,o,gate,up,down",
                batch=1, quote=row, notes=us_note, unit="GB (GPU capacity)", figure=vram,
                figure_kind="max sequence length that fits in the GPU (figure = capacity)")
    R("unsloth-readme-ctx8b#%dGB-unsloth" % vram, US, trainer="Unsloth", attn="unsloth (FA2/xformers)",
      grad_ckpt="unsloth offloaded checkpointing (default 'unsloth')", seq_len=uc, outcome="ran (max context)", **base)
    R("unsloth-readme-ctx8b#%dGB-hf" % vram, US, trainer="Hugging Face + FA2", attn="flash_attention_2",
      seq_len=(hf if hf else "any (even shortest)"), outcome=("ran (max context)" if hf else "OOM"), **base)
us_note70 = us_note.replace("Llama 3.1 (8B) Instruct", "Llama 3.3 (70B) Instruct on a 80GB A100")
for vram, uc, hf, row in [(48, 12106, None, "| 48 GB    | 12,106                | OOM              |"),
                          (80, 89389, 6916, "| 80 GB    | 89,389                | 6,916            |")]:
    base = dict(source="Unsloth README context-length benchmark", model="meta-llama/Llama-3.3-70B-Instruct", n_gpus=1,
                gpu="%s" % ("A100 80GB" if vram == 80 else "48 GB GPU"), method="QLoRA (bnb 4-bit)", lora_r=32,
                lora_targets="q,k,v,o,gate,up,down", batch=1, quote=row, notes=us_note70, unit="GB (GPU capacity)", figure=vram,
                figure_kind="max sequence length that fits in the GPU (figure = capacity)")
    R("unsloth-readme-ctx70b#%dGB-unsloth" % vram, US, trainer="Unsloth", seq_len=uc, outcome="ran (max context)", **base)
    R("unsloth-readme-ctx70b#%dGB-hf" % vram, US, trainer="Hugging Face + FA2", attn="flash_attention_2",
      seq_len=(hf if hf else "any"), outcome=("ran (max context)" if hf else "OOM"), **base)

# ---------------------------------------------------------------------------------------------------
# LitGPT resource tables (A100-SXM4-40GB, commit 8641822 of lit-gpt, PyTorch 2.1.0, bnb 0.41.1, bf16-true).
# finetune/lora.py @8641822: r=8 alpha=16 dropout=0.05 on query+value only; AdamW (PagedAdamW when quantized);
# 1 GPU: no activation checkpointing; >1 GPU: FSDP with activation_checkpointing_policy={Block};
# figure printed as torch.cuda.max_memory_allocated()/1e9.
LG = "https://github.com/Lightning-AI/litgpt/blob/26857050fe3ff627cd714fe92f5838f51a3d5efa/tutorials/resource-tables.md"
lg_models = {"phi-1.5": "microsoft/phi-1_5", "StableLM Alpha": "stabilityai/stablelm-base-alpha-3b", "Llama 2": "meta-llama/Llama-2-%s-hf",
             "Falcon": "tiiuae/falcon-40b"}
LG_ROWS = """| 1.3 B | phi-1.5        | None         | 1               | 1,572,864            | 4.82 GB     | 1.62 min           |
| 1.3 B | phi-1.5        | bnb.nf4      | 1               | 1,572,864            | 3.78 GB     | 1.77 min           |
| 1.3 B | phi-1.5        | bnb.nf4-dq   | 1               | 1,572,864            | 3.72 GB     | 1.87 min           |
| 1.3 B | phi-1.5        | None         | 2               | 1,572,864            | 6.76 GB     | 1.65 min           |
| 1.3 B | phi-1.5        | None         | 4               | 1,572,864            | 10.68 GB    | 1.70 min           |
| 3 B   | StableLM Alpha | None         | 1               | 2,097,152            | 9.69 GB     | 1.24 min           |
| 3 B   | StableLM Alpha | bnb.nf4      | 1               | 2,097,152            | 6.35 GB     | 1.82 min           |
| 3 B   | StableLM Alpha | bnb.nf4-dq   | 1               | 2,097,152            | 6.19 GB     | 1.87 min           |
| 3 B   | StableLM Alpha | None         | 2               | 2,097,152            | 12.10 GB    | 1.33 min           |
| 3 B   | StableLM Alpha | None         | 4               | 2,097,152            | 16.92 GB    | 1.50 min           |
| 7 B   | Llama 2        | None         | 1               | 4,194,304            | 21.30 GB    | 2.36 min           |
| 7 B   | Llama 2        | bnb.nf4      | 1               | 4,194,304            | 14.14 GB    | 3.68 min           |
| 7 B   | Llama 2        | bnb.nf4-dq   | 1               | 4,194,304            | 13.84 GB    | 3.83 min           |
| 7 B   | Llama 2        | None         | 2               | 4,194,304            | 29.07 GB    | 2.52 min           |
| 7 B   | Llama 2        | None         | 4               | 4,194,304            | OOM         | -                  |
| 13 B  | Llama 2        | None         | 1               | 6,553,600            | 38.12 GB    | 3.19 min           |
| 13 B  | Llama 2        | bnb.nf4      | 1               | 6,553,600            | 23.14 GB    | 6.38 min           |
| 13 B  | Llama 2        | bnb.nf4-dq   | 1               | 6,553,600            | 22.55 GB    | 6.55 min           |
| 13 B  | Llama 2        | None         | 2               | 6,553,600            | OOM         | -                  |
| 13 B  | Llama 2        | None         | 4               | 6,553,600            | OOM         | -                  |
| 40 B  | Falcon         | None         | 1               | 12,042,240           | OOM         | -                  |
| 40 B  | Falcon         | bnb.nf4      | 1               | 12,042,240           | OOM         | -                  |
| 40 B  | Falcon         | bnb.nf4-dq   | 1               | 12,042,240           | OOM         | -                  |"""
LG_MULTI = """| 1.3 B | phi-1.5        | None         | 1               | 1,572,864            | 2 x A100 | 4.86 GB     | 3.81 min           |
| 1.3 B | phi-1.5        | None         | 2               | 1,572,864            | 2 x A100 | 5.05 GB     | 3.63 min           |
| 1.3 B | phi-1.5        | None         | 4               | 1,572,864            | 2 x A100 | 5.88 GB     | 3.64 min           |
| 3 B   | StableLM Alpha | None         | 1               | 2,097,152            | 2 x A100 | 12.75 GB    | 2.92 min           |
| 3 B   | StableLM Alpha | None         | 2               | 2,097,152            | 2 x A100 | 12.94 GB    | 3.06 min           |
| 3 B   | StableLM Alpha | None         | 4               | 2,097,152            | 2 x A100 | 13.45 GB    | 3.86 min           |
| 7 B   | Llama 2        | None         | 1               | 4,194,304            | 2 x A100 | 22.18 GB    | 5.93 min           |
| 7 B   | Llama 2        | None         | 2               | 4,194,304            | 2 x A100 | 22.47 GB    | 6.48 min           |
| 7 B   | Llama 2        | None         | 4               | 4,194,304            | 2 x A100 | 23.39 GB    | 8.66 min           |
| 13 B  | Llama 2        | None         | 1               | 6,553,600            | 2 x A100 | OOM         | -                  |
| 13 B  | Llama 2        | None         | 1               | 6,553,600            | 4 x A100 | 35.57 GB    | 10.25 min          |
| 40 B  | Falcon         | None         | 1               | 12,042,240           | 4 x A100 | OOM         | -                  |"""
lg_note = ("'All experiments were run using 16-bit brain floating point precision (--precision bf16-true)'; Alpaca, longest "
           "example 1304 tokens (Llama 2) / 1044 (phi1.5) / 1034 (StableLM) / 1079 (Falcon); 'minibatch size of 128' "
           "(grad accumulation = 128 / microbatch); trainable parameters column = LoRA r=8 on query+value (defaults of "
           "finetune/lora.py @8641822)")
for multi, block in ((False, LG_ROWS), (True, LG_MULTI)):
    for line in block.splitlines():
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        if multi:
            size, name, quant, mb, tp, gpus, mem, _ = c
        else:
            size, name, quant, mb, tp, mem, _ = c
            gpus = "1 x A100"
        n = int(gpus.split()[0])
        model = lg_models[name]
        if "%s" in model:
            model = model % size.replace(" ", "").lower()
        rid = "litgpt-resource-tables#lora-%s-%s-mb%s-%dgpu" % (name.replace(" ", "").replace(".", ""), size.replace(" ", ""), mb, n)
        if quant != "None":
            rid += "-" + quant
        oom = mem == "OOM"
        R(rid, LG, source="LitGPT resource tables (2023-10-20)", model=model, trainer="lit-gpt finetune/lora.py",
          trainer_version="commit 8641822 (PyTorch 2.1.0+cu121, bitsandbytes 0.41.1)", gpu="A100-SXM4-40GB", n_gpus=n,
          precision="bf16-true", load_dtype=("bf16 + %s" % quant if quant != "None" else "bf16"),
          method=("QLoRA (%s)" % quant if quant != "None" else "LoRA"), lora_r="8 (script default)", lora_alpha="16 (script default)",
          lora_targets="query,value (script default)", batch=int(mb), seq_len="<=longest Alpaca sample (padded per batch)",
          grad_accum=128 // int(mb), grad_ckpt=("yes (FSDP activation_checkpointing_policy=Block)" if n > 1 else "no"),
          optimizer=("bnb PagedAdamW (32-bit)" if quant != "None" else "torch AdamW"),
          zero_fsdp=("FSDP full shard (Fabric FSDPStrategy)" if n > 1 else "none"), attn="torch SDPA (lit-gpt)",
          outcome=("OOM" if oom else "ran"), figure=(40 if oom else float(mem.split()[0])),
          unit="GB (1e9 B)" if not oom else "GB (GPU capacity)", figure_kind=("OOM on 40 GB" if oom else "torch.cuda.max_memory_allocated"),
          quote=line.strip(), notes=lg_note + ("; trainable params %s" % tp))

# ---------------------------------------------------------------------------------------------------
# Liger-Kernel README
LIG = "https://github.com/linkedin/Liger-Kernel/blob/ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c/README.md"
lig = dict(source="Liger-Kernel README", model="meta-llama/Meta-Llama-3-8B", n_gpus=8, gpu="A100", precision="bf16", method="full",
           batch=8, optimizer="AdamW", grad_ckpt="yes", zero_fsdp="FSDP1",
           notes="'Benchmark conditions: LLaMA 3-8B, Batch Size = 8, Data Type = bf16, Optimizer = AdamW, Gradient Checkpointing = True, Distributed Strategy = FSDP1 on 8 A100s.'")
R("liger-readme#hf-4k-oom", LIG, trainer="Hugging Face (transformers)", seq_len=4096, outcome="OOM", figure=U, unit=U,
  figure_kind="OOM (A100 memory size not stated)", ce="standard (fp32 upcast logits)",
  quote="Hugging Face models start to OOM at a 4K context length, whereas Hugging Face + Liger Kernel scales up to 16K.", **lig)
R("liger-readme#liger-16k-ran", LIG, trainer="Hugging Face + Liger Kernel", seq_len=16384, outcome="ran", figure=U, unit=U,
  figure_kind="ran (A100 memory size not stated)", ce="Liger FusedLinearCrossEntropy",
  quote="Hugging Face models start to OOM at a 4K context length, whereas Hugging Face + Liger Kernel scales up to 16K.", **lig)

# ---------------------------------------------------------------------------------------------------
# LLaMA-Factory README hardware table: explicitly '* estimated' -> figure_kind estimate (not a measurement)
LF = "https://github.com/hiyouga/LLaMA-Factory/blob/ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30/README.md"
for meth, bits, row in [("full (bf16/fp16 AMP)", 32, "| Full (`bf16` or `fp16`)             |  32  | 120GB | 240GB | 600GB | 1200GB | `18x`GB |"),
                        ("full (pure_bf16)", 16, "| Full (`pure_bf16`)                  |  16  |  60GB | 120GB | 300GB |  600GB |  `8x`GB |"),
                        ("LoRA/Freeze/GaLore", 16, "| Freeze/LoRA/GaLore/APOLLO/BAdam/OFT |  16  |  16GB |  32GB |  64GB |  160GB |  `2x`GB |"),
                        ("QLoRA", 8, "| QLoRA / QOFT                        |   8  |  10GB |  20GB |  40GB |   80GB |   `x`GB |"),
                        ("QLoRA", 4, "| QLoRA / QOFT                        |   4  |   6GB |  12GB |  24GB |   48GB | `x/2`GB |"),
                        ("QLoRA", 2, "| QLoRA / QOFT                        |   2  |   4GB |   8GB |  16GB |   24GB | `x/4`GB |")]:
    vals = [x.strip() for x in row.strip().strip("|").split("|")][2:6]
    for size, v in zip(("7B", "14B", "30B", "70B"), vals):
        R("llamafactory-readme-hw#%s-%dbit-%s" % (meth.split()[0].split("/")[0].lower(), bits, size), LF,
          source="LLaMA-Factory README 'Hardware Requirement' (* estimated)", model="generic %s" % size, trainer="LLaMA-Factory",
          trainer_version="main@ff6d4d12", method=meth, load_dtype="%d-bit" % bits, outcome="estimate", figure=float(v[:-2]),
          unit="GB", figure_kind="published ESTIMATE (not a measurement)", quote=row)

# ---------------------------------------------------------------------------------------------------
# PEFT README (2022-12) and docs
PR = "https://github.com/huggingface/peft/blob/5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40/README.md"
pnote = "'training the following models on the ought/raft/twitter_complaints dataset with an A100 80GB GPU with more than 64GB of CPU RAM.'"
for model, row, vals in [
    ("bigscience/T0_3B", "| bigscience/T0_3B (3B params) | 47.14GB GPU / 2.96GB CPU  | 14.4GB GPU / 2.96GB CPU | 9.8GB GPU / 17.8GB CPU |", (47.14, 14.4, 9.8)),
    ("bigscience/mt0-xxl", "| bigscience/mt0-xxl (12B params) | OOM GPU | 56GB GPU / 3GB CPU | 22GB GPU / 52GB CPU |", (None, 56, 22)),
    ("bigscience/bloomz-7b1", "| bigscience/bloomz-7b1 (7B params) | OOM GPU | 32GB GPU / 3.8GB CPU | 18.1GB GPU / 35GB CPU |", (None, 32, 18.1))]:
    for meth, v, z, off in (("full", vals[0], "none", "none"), ("LoRA", vals[1], "none", "none"),
                            ("LoRA", vals[2], "DeepSpeed (ZeRO-3 per peft example name)", "CPU offload")):
        tag = {"none": "pytorch", "CPU offload": "ds-offload"}[off] if meth == "LoRA" else "full"
        R("peft-readme#%s-%s" % (model.split("/")[1], tag), PR, source="PEFT README memory table (2022-12)", model=model,
          trainer="PEFT examples (accelerate)", trainer_version="peft 0.1-era", gpu="A100 80GB", n_gpus=1, method=meth,
          zero_fsdp=z, offload=off, outcome=("OOM" if v is None else "ran"), figure=(80 if v is None else v),
          unit="GB", figure_kind=("OOM on 80 GB" if v is None else "GPU peak (example's TorchTracemalloc: torch.cuda.max_memory_allocated)"),
          quote=row, notes=pnote)
R("peft-issue76#bloomz-7b1-lora-a100-40gb", "https://github.com/huggingface/peft/issues/76",
  source="peft issue #76", model="bigscience/bloomz-7b1", trainer="peft_lora_clm_accelerate_ds_zero3_offload.py (DeepSpeed not active)",
  gpu="A100 40GB", n_gpus=1, method="LoRA", zero_fsdp="none (is_ds_zero_3 False per reporter)", outcome="ran", figure=32037, unit="MiB (2**20)",
  figure_kind="torch.cuda.max_memory_allocated (TorchTracemalloc, 'GPU Total Peak Memory')",
  quote="GPU Memory before entering the train : 27026 ... GPU Peak Memory consumed during the train (max-begin): 5011 / GPU Total Peak Memory consumed during the train (max): 32037")
PD = "https://github.com/huggingface/peft/blob/5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40/docs/source/accelerate/"
R("peft-docs-deepspeed#llama2-70b-lora-zero3-8xH100", PD + "deepspeed.md", source="PEFT docs DeepSpeed guide",
  model="meta-llama/Llama-2-70b-hf", trainer="TRL SFTTrainer (peft examples/sft/train.py) + accelerate", gpu="H100 80GB", n_gpus=8,
  precision="bf16", method="LoRA", lora_r=8, lora_alpha=16, lora_targets="all-linear", batch=8, seq_len=2048, grad_accum=4,
  grad_ckpt="yes, use_reentrant=False", zero_fsdp="DeepSpeed ZeRO-3", attn="flash_attention_2", packed="yes", outcome="ran",
  figure=64, unit="GB", figure_kind="nvidia-smi-like screenshot per GPU",
  quote="In the above example, the memory consumed per GPU is 64 GB (80%) as seen in the screenshot below:")
R("peft-docs-deepspeed#llama2-70b-qlora-zero3-2x40GB", PD + "deepspeed.md", source="PEFT docs DeepSpeed guide",
  model="meta-llama/Llama-2-70b-hf", trainer="TRL SFTTrainer (peft examples/sft/train.py) + accelerate", gpu="40GB GPU (A100 40GB)", n_gpus=2,
  precision="bf16", load_dtype="bnb nf4, double quant, quant_storage bf16", method="QLoRA (bnb 4-bit)", lora_r=8, lora_alpha=16,
  lora_targets="all-linear", batch=2, seq_len=2048, grad_accum=2, grad_ckpt="yes, use_reentrant=True", zero_fsdp="DeepSpeed ZeRO-3 (zero3_init)",
  attn="flash_attention_2", outcome="ran", figure=36.6, unit="GB", figure_kind="per GPU memory",
  quote="In the above example, the memory consumed per GPU is **36.6 GB**.")
R("peft-docs-fsdp#llama2-70b-lora-fsdp-8xH100", PD + "fsdp.md", source="PEFT docs FSDP guide", model="meta-llama/Llama-2-70b-hf",
  trainer="TRL SFTTrainer (peft examples/sft/train.py) + accelerate", gpu="H100 80GB", n_gpus=8, precision="bf16", method="LoRA",
  lora_r=8, lora_alpha=16, lora_targets="all-linear", batch=8, seq_len=2048, grad_accum=4, grad_ckpt="yes, use_reentrant=False",
  zero_fsdp="FSDP FULL_SHARD (use_orig_params=False)", attn="flash_attention_2", packed="yes", outcome="ran", figure="72-80",
  unit="GB", figure_kind="per GPU memory (screenshot)",
  quote="In the above example, the memory consumed per GPU is  72-80 GB (90-98%) as seen in the screenshot below.")
for rid, off, fig in [("llama2-70b-qlora-fsdp-2x24GB-offload", "fsdp_offload_params: true", 19.6),
                      ("llama2-70b-qlora-fsdp-2x24GB-nooffload", "none", 35.6)]:
    R("peft-docs-fsdp#" + rid, PD + "fsdp.md", source="PEFT docs FSDP guide", model="meta-llama/Llama-2-70b-hf",
      trainer="TRL SFTTrainer (peft examples/sft/train.py) + accelerate", gpu=("24GB GPU" if rid.endswith("-offload") else "unknown (35.6 GB exceeds the 24 GB target)"),
      n_gpus=2, precision="bf16", load_dtype="bnb nf4, double quant, quant_storage bf16", method="QLoRA (bnb 4-bit)", lora_r=8, lora_alpha=16,
      lora_targets="all-linear", batch=2, seq_len=2048, grad_accum=2, grad_ckpt="yes, use_reentrant=True", zero_fsdp="FSDP",
      offload=off, attn="flash_attention_2", outcome="ran", figure=fig, unit="GB", figure_kind="per GPU memory",
      quote="the memory consumed per GPU is **19.6 GB** while CPU RAM usage is around **107 GB**. When disabling CPU offloading, the GPU memory usage is  **35.6 GB/ GPU**.",
      notes="35.6 GB exceeds a 24 GB card: the no-offload figure was necessarily measured on a larger GPU")

# ---------------------------------------------------------------------------------------------------
# GitHub issue / PR reports
YM = "https://github.com/ymcui/Chinese-LLaMA-Alpaca-2/pull/229"
for emb, vals in (("frozen-emb", ((4, 9425), (8, 12555), (16, 18303))), ("train-emb-head", ((4, 17075), (8, 20639), (16, None)))):
    for bits, v in vals:
        R("ymcui-pr229#%s-%dbit" % (emb, bits), YM, source="Chinese-LLaMA-Alpaca-2 PR #229", model="meta-llama/Llama-2-7b-hf",
          trainer="Chinese-LLaMA-Alpaca-2 run_clm_pt_with_peft.py (HF Trainer + PEFT)", gpu="Tesla P40 (24 GB)", n_gpus=1,
          load_dtype={4: "load_in_4bit", 8: "load_in_8bit", 16: "fp16"}[bits], precision="fp16",
          method=("QLoRA" if bits == 4 else "LoRA (8-bit base)" if bits == 8 else "LoRA") + (" + trainable embed_tokens/lm_head" if "train" in emb else ""),
          grad_ckpt="yes", outcome=("OOM" if v is None else "ran"), figure=(24 if v is None else v),
          unit=("GB (GPU capacity)" if v is None else "MiB (as 'M')"), figure_kind="VRAM usage (likely nvidia-smi)",
          quote=("With training `embed_tokens` and `lm_head`: | 17075M| 20639M| OOM |" if "train" in emb else
                 "Without training `embed_tokens` and `lm_head`: | 9425M| 12555M| 18303M |"),
          notes="pre-training (causal LM) with LoRA; 'When gradient_checkpointing is enabled during pre-training of the llama-2-7b, the VRAM usage is as follows(Tesla P40)'")
LF1 = "https://github.com/hiyouga/LlamaFactory/issues/4772"
for q, meth, fig in (("qlora", "QLoRA (bnb 4-bit)", 72), ("lora", "LoRA", 66)):
    R("llamafactory-issue4772#glm4-9b-" + q, LF1, source="LLaMA-Factory issue #4772", model="THUDM/glm-4-9b-chat", trainer="LLaMA-Factory",
      gpu="A100 (runpod)", n_gpus=1, precision="bf16", method=meth, lora_targets="all", batch=1, seq_len="cutoff_len 10240",
      grad_accum=16, outcome="ran", figure=fig, unit="GB (approx.)", figure_kind="screenshot (nvidia-smi-like)",
      quote=("`llamafactory-cli train examples/train_qlora/llama3_lora_sft_otfq.yaml` uses around 72 GB memory" if q == "qlora"
             else "Same config after removing quantization part runs with 66 GB"),
      notes="QLoRA used MORE memory than LoRA here (issue title 'QLORA using more memory than LORA')")
R("llamafactory-issue260#baichuan-7b-full-v100-oom", "https://github.com/hiyouga/LlamaFactory/issues/260",
  source="LLaMA-Factory issue #260", model="baichuan-inc/Baichuan-7B", trainer="LLaMA-Efficient-Tuning (LLaMA-Factory)",
  gpu="V100 32GB", n_gpus=1, method="full", outcome="OOM", figure=31.75, unit="GiB (total capacity)",
  figure_kind="OOM message", quote="Tried to allocate 26.08 GiB (GPU 0; 31.75 GiB total capacity; 26.14 GiB already allocated; 4.77 GiB free; 26.15 GiB reserved in total by PyTorch)")
R("llamafactory-issue260#baichuan-7b-full-8xv100-zero2-oom", "https://github.com/hiyouga/LlamaFactory/issues/260",
  source="LLaMA-Factory issue #260", model="baichuan-inc/Baichuan-7B", trainer="LLaMA-Efficient-Tuning (LLaMA-Factory)",
  gpu="V100 32GB", n_gpus=8, method="full", zero_fsdp="DeepSpeed ZeRO-2", batch=1, outcome="OOM", figure=32, unit="GB (GPU capacity)",
  figure_kind="OOM report", quote="I use 8 V100 32G, which is also 240G,  but encounter `CUDA out of memory` Error. I use deepspeed Zero-2 following instructions and set per_device_train_batch_size=1.")
R("deepseekcoder-issue78#33b-full-zero3-8xA800-oom", "https://github.com/deepseek-ai/DeepSeek-Coder/issues/78",
  source="DeepSeek-Coder issue #78", model="deepseek-ai/deepseek-coder-33b-instruct", trainer="DeepSeek-Coder finetune script (HF Trainer + DeepSpeed)",
  gpu="A800 80GB", n_gpus=8, method="full", zero_fsdp="DeepSpeed ZeRO-3", batch=1, outcome="OOM", figure=79.35, unit="GiB (total capacity)",
  figure_kind="OOM message", quote="CUDA out of memory. Tried to allocate 3.50 GiB (GPU 3; 79.35 GiB total capacity; 77.08 GiB already allocated; 415.19 MiB free; 77.54 GiB reserved in total by PyTorch)",
  notes="later solved with ZeRO-3 CPU offload, micro batch 1, max length < 2048 ('use 1T memmory and deepspeed zero3 offload')")
R("deepspeed-issue4527#7b-zero3-offload-4gpu", "https://github.com/deepspeedai/DeepSpeed/issues/4527",
  source="DeepSpeed issue #4527", model="6805M-param model (LLaMA-7B class)", trainer="DeepSpeed engine (custom loop)", n_gpus=4,
  method="full", zero_fsdp="DeepSpeed ZeRO-3", offload="offload_param=cpu, offload_optimizer=cpu", outcome="ran", figure=21272,
  unit="MiB", figure_kind="GPU memory usage (nvidia-smi style) after second forward",
  quote="the GPU memory usage is 14678MiB after `deepspeed.initialize()`, 19890MiB after the first forward `engine(input_token)`, 20148MiB after the first backward `engine.backward(loss)` and `engine.step()`, 1838MiB before the second forward, 21272MiB after the second",
  notes="estimator said 0.49GB per GPU for params/optim/grads with both offloads")
R("litgpt-issue1112#tinyllama-lora-vs-qlora", "https://github.com/Lightning-AI/litgpt/issues/1112", source="LitGPT issue #1112",
  model="TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T", trainer="litgpt finetune lora", trainer_version="2024-03", n_gpus=1,
  precision="bf16-true", method="LoRA vs QLoRA", lora_r=32, lora_alpha=16, lora_targets="query,value", batch=8, seq_len=512,
  outcome="ran", figure=U, unit=U, figure_kind="issue title: QLoRA used more memory than LoRA",
  quote="'lora_r': 32, ... 'micro_batch_size=8, ... max_seq_length=512' (issue 'Higher memory use with QLoRA')",
  notes="figures in the issue not captured in the excerpt; kept as a qualitative record")
R("trl-issue1111#openllama-3b-qlora", "https://github.com/huggingface/trl/issues/1111", source="TRL issue #1111",
  model="openlm-research/open_llama_3b_v2", trainer="TRL SFTTrainer", n_gpus=1, precision="fp16 (AMP)", load_dtype="bnb nf4, double quant, compute bf16",
  method="QLoRA (bnb 4-bit)", lora_r=16, lora_alpha=32, lora_targets="peft default", batch=1, seq_len=512, grad_accum=4,
  optimizer="paged_adamw_8bit", outcome="ran", figure=10, unit="GB (approx.)", figure_kind="GPU memory reported in title",
  quote="QLoRA memory requirement with 3B model loads GPU with 10GB of memory with 4bit quantization")
R("fastchat-issue1637#vicuna-7b-lora-17gb", "https://github.com/lm-sys/FastChat/issues/1637", source="FastChat issue #1637",
  model="lmsys/vicuna-7b (LLaMA-7B)", trainer="FastChat train_lora.py", method="LoRA", outcome="ran", figure=17, unit="GB (approx.)",
  figure_kind="user statement", quote="As for 7B model, LoRA consumes about 17GB gpu memory.")
R("fastchat-issue1637#vicuna-7b-lora-24gb-oom", "https://github.com/lm-sys/FastChat/issues/1637", source="FastChat issue #1637",
  model="lmsys/vicuna-7b (LLaMA-7B)", trainer="FastChat train_lora.py", gpu="24 GB GPU (23.70 GiB total)", n_gpus=1, method="LoRA",
  grad_ckpt="unknown (follow-up asks whether it was enabled)", outcome="OOM", figure=23.70, unit="GiB (total capacity)", figure_kind="OOM message",
  quote="CUDA out of memory. Tried to allocate 64.00 MiB (GPU 5; 23.70 GiB total capacity; 23.29 GiB already allocated; 58.56 MiB free; 23.29 GiB reserved in total by PyTorch)")
for rid, meth, fig in (("lora", "LoRA", 7), ("qlora", "QLoRA (bnb 4-bit)", 4.5), ("full", "full", 21)):
    R("axolotl-pr602#openllama-3b-" + rid, "https://github.com/axolotl-ai-cloud/axolotl/pull/602", source="axolotl PR #602",
      model="openlm-research/open_llama_3b_v2", trainer="axolotl", trainer_version="2023-09 (examples/openllama-3b configs)", n_gpus=1,
      method=meth, outcome="ran", figure=fig, unit="GB", figure_kind="VRAM usage (maintainer, likely nvidia-smi)",
      quote="verified on single gpu. vram usage recorded / lora - 7gb vram / qlora - 4.5gb vram / full ft - 21gb vram")
for rid, seq, oc in (("ctx1400-before-ran", 1400, "ran"), ("ctx600-after-ran", 600, "ran"), ("ctx1400-after-oom", 1400, "OOM")):
    R("axolotl-issue1127#yi-34b-qlora-" + rid, "https://github.com/axolotl-ai-cloud/axolotl/issues/1127", source="axolotl issue #1127",
      model="01-ai/Yi-34B (merged LoRA variant)", trainer="axolotl",
      trainer_version=("commit 0ce1a65" if "before" in rid else "commit 2f2582e and later"), gpu="RTX 3090 Ti 24GB", n_gpus=1,
      method="QLoRA (bnb 4-bit)", seq_len=seq, outcome=oc, figure=24, unit="GB (GPU capacity; some VRAM used by desktop)",
      figure_kind="fits / OOM", quote="On commit 0ce1a65 and earlier I am able to do QLoRA SFT Yi-34B finetune on context length of 1400. On commit 2f2582e and later, this is around 600 tokens - running it with sequence length 1400 results in OOM a few steps after starting.",
      notes="VRAM regression between two axolotl commits: same config")
R("axolotl-issue849#packing-4096-oom", "https://github.com/axolotl-ai-cloud/axolotl/issues/849", source="axolotl issue #849",
  model=U, trainer="axolotl", trainer_version="2023-11", gpu="24 GB GPU (23.68 GiB)", method=U, seq_len=4096, packed="yes (sample_packing)",
  attn="flash_attn varlen", outcome="OOM", figure=23.68, unit="GiB (total capacity)", figure_kind="OOM message",
  quote="Tried to allocate 8.81 GiB (GPU 1; 23.68 GiB total capacity; 14.97 GiB already allocated; 7.56 GiB free; 15.71 GiB reserved in total by PyTorch)",
  notes="'The crash only happens when the sample is filling up the context (4096 tokens, in this case).' sample_packing=False fits")
R("chatbloom-issue1#bloom-1b7-full-fp16", "https://github.com/NicholasCao/ChatBLOOM/issues/1", source="ChatBLOOM issue #1",
  model="bigscience/bloom-1b7", trainer="ChatBLOOM (DeepSpeed-Chat style)", precision="fp16", method="full", batch=1, seq_len=512,
  grad_accum=8, outcome="ran", figure=28, unit="GB", figure_kind="GPU RAM on GPU #0",
  quote="When I set batch_size=1, accumulation_steps=8, max_len=512, which requires 28G GPU RAM  in GPU #0",
  notes="maintainer later recommends ZeRO-2; the 28G run's ZeRO setting is not stated")
R("llamacookbook-issue413#llama2-7b-full-a100-80gb-oom", "https://github.com/meta-llama/llama-cookbook/issues/413",
  source="llama-recipes issue #413", model="meta-llama/Llama-2-7b-hf", trainer="llama-recipes finetuning.py", trainer_version="torch 2.2.1",
  gpu="A100-SXM4-80GB", n_gpus=1, method="full", outcome="OOM", figure=80, unit="GB (GPU capacity)", figure_kind="OOM report",
  quote="I wanted to finetune the llama-7b model without any PEFT and Quantization on Samsum dataset. However, I am getting Cuda out of memory error even with NVIDIA A100-SXM4-80GB.",
  notes="default finetuning.py config (no FSDP, single GPU)")
R("torchtune-issue1758#hf-llama-3b-full-a100", "https://github.com/meta-pytorch/torchtune/issues/1758", source="torchtune issue #1758",
  model="Llama 3B (Llama 3.2 3B)", trainer="Hugging Face TRL/Transformers", gpu="A100", n_gpus=1, method="full", outcome="ran",
  figure=35, unit="GB (approx.)", figure_kind="user statement",
  quote="Full fine-tuning of LLaMA 3B with Hugging Face libraries takes about 35GB on an A100 GPU.")
R("xtuner-issue88#llama2-70b-qlora-40gb-zero2offload-oom", "https://github.com/InternLM/xtuner/issues/88", source="xtuner issue #88",
  model="meta-llama/Llama-2-70b-hf", trainer="xtuner", gpu="A100 40GB", method="QLoRA (bnb 4-bit)", zero_fsdp="DeepSpeed ZeRO-2",
  offload="deepspeed_zero2_offload", outcome="OOM", figure=40, unit="GB (GPU capacity)", figure_kind="maintainer statement",
  quote="It seems that 40GB memory is not enough for 70B-QLoRA, even with `deepspeed_zero2_offload`.")
R("trl-issue1589#unknown-sft-bs2", "https://github.com/huggingface/trl/issues/1589", source="TRL issue #1589", model=U,
  trainer="TRL SFTTrainer", method=U, batch=2, outcome="ran", figure=47, unit="GB", figure_kind="user statement (screenshot)",
  quote="batchsize=2，memory use 47G，batchsize=1，memory use 31G")
R("trl-issue1589#unknown-sft-bs1", "https://github.com/huggingface/trl/issues/1589", source="TRL issue #1589", model=U,
  trainer="TRL SFTTrainer", method=U, batch=1, outcome="ran", figure=31, unit="GB", figure_kind="user statement (screenshot)",
  quote="batchsize=2，memory use 47G，batchsize=1，memory use 31G", notes="batch 1 -> 2 adds 16 GB: activation slope")
R("peft-issue1469#bloomz-560m-lora", "https://github.com/huggingface/peft/issues/1469", source="peft issue #1469 (maintainer test)",
  model="bigscience/bloomz-560m", trainer="PEFT sequence-classification LoRA notebook", method="LoRA", outcome="ran", figure=U, unit="GiB",
  figure_kind="torchtune get_memory_stats after optimizer.step()",
  quote="facebook/esm2_t6_8M_UR50D: {'peak_memory_active': 0.7242832183837891, 'peak_memory_alloc': 0.7242832183837891, 'peak_memory_reserved': 1.9453125}",
  notes="excerpt truncated before the bloomz figure; esm2/bert figures: esm2 alloc 0.724 / reserved 1.945 GiB, bert-base alloc 1.545 / reserved 3.340 GiB")
for m, a, rsv in (("facebook/esm2_t6_8M_UR50D", 0.7242832183837891, 1.9453125), ("bert-base-uncased", 1.5451140403747559, 3.33984375)):
    R("peft-issue1469#%s-lora" % m.split("/")[-1], "https://github.com/huggingface/peft/issues/1469",
      source="peft issue #1469 (maintainer test)", model=m, trainer="PEFT sequence-classification LoRA notebook (examples/sequence_classification/LoRA.ipynb)",
      method="LoRA", outcome="ran", figure=a, unit="GiB", figure_kind="peak allocated (reserved %s GiB)" % rsv,
      quote="%s: {'peak_memory_active': %s, 'peak_memory_alloc': %s, 'peak_memory_reserved': %s}" % (m, a, a, rsv),
      notes="'reserved memory is larger than allocated memory (which is expected), but the bigger the model, the smaller the gap.'")
RUNS[:] = [r for r in RUNS if r["id"] not in ("peft-issue1469#bloomz-560m-lora", "litgpt-issue1112#tinyllama-lora-vs-qlora")]  # no figure captured


def main():
    ids = [r["id"] for r in RUNS]
    assert len(ids) == len(set(ids)), "duplicate ids"
    with open(os.path.join(HERE, "runs.jsonl"), "w") as f:
        for r in RUNS:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "runs.tsv"), "w") as f:
        f.write("\t".join(FIELDS) + "\n")
        for r in RUNS:
            f.write("\t".join(str(r[k]).replace("\t", " ").replace("\n", " ") for k in FIELDS) + "\n")
    from collections import Counter
    c = Counter(r["set"] for r in RUNS)
    print(len(RUNS), dict(c))
    print(Counter((r["source"].split(" ")[0], r["set"]) for r in RUNS))


if __name__ == "__main__":
    main()
