#!/usr/bin/python3
"""Allocation traces of small LLM training steps (CPU, Debian python3-torch 1.13.1).

Method (same as tests/reference/torch and torch-cnn/oracle.py): torch.profiler(profile_memory=True),
every [memory] event of the event tree in time order, +bytes alloc / -bytes free paired by pointer,
phases cut by marker allocations of odd sizes (never written to the trace), saved tensors counted with
saved_tensors_hooks (deduplicated by storage).  What is alive before the profiling window (parameters,
buffers, input ids, labels, 4-bit packed weights) is written as synthetic 'setup' allocations, so a trace
is self-contained: the running sum of its 'bytes' column is the live tensor bytes at every event.

Usage:  OMP_NUM_THREADS=1 /usr/bin/python3 trace.py [--only SUBSTR] [--list]
Writes traces/CASE.tsv and traces/summary.tsv, traces/summary.json.
"""
import gc
import json
import math
import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torch.profiler as tprof  # noqa: E402
import torch.utils.checkpoint  # noqa: E402

torch.set_num_threads(1)
EVT = torch._C._profiler._EventType
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "traces")

# =============================================================================
# Model: HF-style decoder (LlamaForCausalLM / GemmaForCausalLM / Qwen2ForCausalLM, eager attention)
# =============================================================================
ARCH = {
    # llama-like: GQA 8 q heads / 2 kv heads, SwiGLU, untied head
    "llama": dict(hidden=256, layers=2, heads=8, kv_heads=2, head_dim=32, inter=688, vocab=8192,
                  tie=False, qkv_bias=False, act="silu", gemma=False, rope_theta=500000.0),
    "llama4L": dict(hidden=256, layers=4, heads=8, kv_heads=2, head_dim=32, inter=688, vocab=8192,
                    tie=False, qkv_bias=False, act="silu", gemma=False, rope_theta=500000.0),
    # llama-3.2-like: tied head, 32k vocab
    "llamaTied32k": dict(hidden=256, layers=2, heads=8, kv_heads=2, head_dim=32, inter=688, vocab=32000,
                         tie=True, qkv_bias=False, act="silu", gemma=False, rope_theta=500000.0),
    # gemma-like: MQA (1 kv head), head_dim 64, GeGLU (gelu tanh), (1+w) RMSNorm in fp32, sqrt(hidden)
    # embedding scale, tied head, large vocab relative to hidden
    "gemma": dict(hidden=256, layers=2, heads=4, kv_heads=1, head_dim=64, inter=1024, vocab=32768,
                  tie=True, qkv_bias=False, act="gelu_tanh", gemma=True, rope_theta=10000.0),
    # qwen2-like: bias on q/k/v, GQA 6/2, tied head
    "qwen": dict(hidden=384, layers=2, heads=6, kv_heads=2, head_dim=64, inter=1024, vocab=16384,
                 tie=True, qkv_bias=True, act="silu", gemma=False, rope_theta=1000000.0),
}

NF4_BLOCK = 64
try:
    import subprocess
    DPKG = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "python3-torch"], capture_output=True,
                          text=True).stdout.strip()
except Exception:  # noqa: BLE001
    DPKG = "unknown"


class Linear4bitSim(nn.Module):
    """bitsandbytes Linear4bit (nf4, double quant) as far as memory goes: storage = packed uint8
    (numel/2 bytes) + uint8 absmax per 64-block + fp32 absmax2 per 256 absmax; forward/backward dequantize
    the whole weight to the compute dtype (one transient out x in tensor), like bnb.matmul_4bit's
    MatMul4Bit, which saves no activation (only the quantized weight).  The numeric values come from a
    shadow bf16 copy that lives outside the traced device memory (it stands in for the dequant kernel
    reading the packed bytes)."""

    def __init__(self, lin, compute_dtype=torch.bfloat16):
        super().__init__()
        self.in_features, self.out_features = lin.in_features, lin.out_features
        n = lin.weight.numel()
        self.register_buffer("packed", torch.zeros(n // 2, dtype=torch.uint8))
        self.register_buffer("absmax", torch.zeros(n // NF4_BLOCK, dtype=torch.uint8))
        self.register_buffer("absmax2", torch.zeros(max(1, n // NF4_BLOCK // 256), dtype=torch.float32))
        self._shadow = lin.weight.detach().to(compute_dtype).clone()  # not a buffer: not device memory
        self.bias = None if lin.bias is None else nn.Parameter(lin.bias.detach().to(compute_dtype).clone(),
                                                               requires_grad=False)
        self.compute_dtype = compute_dtype

    def dequant(self):
        w = torch.empty((self.out_features, self.in_features), dtype=self.compute_dtype)
        with torch.no_grad():
            w.copy_(self._shadow)
        return w

    def forward(self, x):
        inp_dtype = x.dtype
        x = x.to(self.compute_dtype)
        out = _MatMul4Bit.apply(x, self)
        if self.bias is not None:
            out = out + self.bias
        return out.to(inp_dtype)


class _MatMul4Bit(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, mod):
        ctx.mod = mod
        w = mod.dequant()
        out = F.linear(x, w)
        del w
        return out

    @staticmethod
    def backward(ctx, g):
        w = ctx.mod.dequant()
        gx = torch.matmul(g, w)
        del w
        return gx, None


class LoraLinear(nn.Module):
    """peft lora.Linear / lora.Linear4bit forward (dropout 0 -> Identity).  Adapters in `adapter_dtype`
    (fp32 = peft autocast_adapter_dtype=True on a bf16 base)."""

    def __init__(self, base, r, alpha, adapter_dtype, quantized):
        super().__init__()
        self.base_layer = base
        fin = base.in_features
        fout = base.out_features
        self.lora_A = nn.Linear(fin, r, bias=False).to(adapter_dtype)
        self.lora_B = nn.Linear(r, fout, bias=False).to(adapter_dtype)
        nn.init.normal_(self.lora_B.weight, std=0.02)  # nonzero so every grad path is real
        self.scaling = alpha / r
        self.quantized = quantized

    def forward(self, x):
        result = self.base_layer(x)
        if self.quantized:  # peft lora/bnb.py Linear4bit.forward
            expected = result.dtype
            xa = x.to(self.lora_A.weight.dtype)
            out = self.lora_B(self.lora_A(xa))
            out = out.to(expected)
            return result + out * self.scaling
        torch_result_dtype = result.dtype  # peft lora/layer.py Linear.forward
        xa = x.to(self.lora_A.weight.dtype)
        result = result + self.lora_B(self.lora_A(xa)) * self.scaling
        return result.to(torch_result_dtype)


class RMSNorm(nn.Module):
    def __init__(self, n, gemma, eps=1e-6):
        super().__init__()
        self.gemma = gemma
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(n) if gemma else torch.ones(n))

    def forward(self, x):
        if self.gemma:  # GemmaRMSNorm
            xf = x.float()
            out = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
            out = out * (1.0 + self.weight.float())
            return out.type_as(x)
        input_dtype = x.dtype  # LlamaRMSNorm
        h = x.to(torch.float32)
        var = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(var + self.eps)
        return self.weight * h.to(input_dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, dim, theta):
        super().__init__()
        inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        self.register_buffer("inv_freq", inv, persistent=False)

    def forward(self, x, pos):  # LlamaRotaryEmbedding.forward
        inv = self.inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
        p = pos[:, None, :].float()
        freqs = (inv.float() @ p.float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, hd = c["hidden"], c["head_dim"]
        self.nh, self.nkv, self.hd = c["heads"], c["kv_heads"], hd
        self.q_proj = nn.Linear(h, self.nh * hd, bias=c["qkv_bias"])
        self.k_proj = nn.Linear(h, self.nkv * hd, bias=c["qkv_bias"])
        self.v_proj = nn.Linear(h, self.nkv * hd, bias=c["qkv_bias"])
        self.o_proj = nn.Linear(self.nh * hd, h, bias=False)
        self.scaling = hd ** -0.5

    def forward(self, x, cos, sin, mask):
        b, s, _ = x.shape
        q = self.q_proj(x).view(b, s, -1, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, s, -1, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, s, -1, self.hd).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        rep = self.nh // self.nkv
        if rep > 1:  # repeat_kv
            k = k[:, :, None].expand(b, self.nkv, rep, s, self.hd).reshape(b, self.nh, s, self.hd)
            v = v[:, :, None].expand(b, self.nkv, rep, s, self.hd).reshape(b, self.nh, s, self.hd)
        w = torch.matmul(q, k.transpose(2, 3)) * self.scaling
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v)
        o = o.transpose(1, 2).contiguous().reshape(b, s, -1)
        return self.o_proj(o)


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["hidden"], c["inter"]
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)
        self.act = c["act"]

    def forward(self, x):
        g = self.gate_proj(x)
        g = F.silu(g) if self.act == "silu" else F.gelu(g, approximate="tanh")
        return self.down_proj(g * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden"], c["gemma"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden"], c["gemma"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, mask):
        r = x
        x = self.self_attn(self.input_layernorm(x), cos, sin, mask)
        x = r + x
        r = x
        x = self.mlp(self.post_attention_layernorm(x))
        return r + x


class CausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = nn.Embedding(c["vocab"], c["hidden"])
        self.layers = nn.ModuleList([Layer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["hidden"], c["gemma"])
        self.rotary = Rotary(c["head_dim"], c["rope_theta"])
        self.lm_head = nn.Linear(c["hidden"], c["vocab"], bias=False)
        if c["tie"]:
            self.lm_head.weight = self.embed_tokens.weight
        self.gc = None  # None | "reentrant" | "nonreentrant"
        self.input_require_grads = False
        self.num_output_chunks = 0

    def forward(self, ids):
        b, s = ids.shape
        h = self.embed_tokens(ids)
        if self.input_require_grads:  # transformers enable_input_require_grads (forward hook)
            h.requires_grad_(True)
        if self.c["gemma"]:
            h = h * torch.tensor(self.c["hidden"] ** 0.5, dtype=h.dtype)
        pos = torch.arange(s).unsqueeze(0).expand(b, -1)
        cos, sin = self.rotary(h, pos)
        mn = torch.finfo(h.dtype).min
        mask = torch.full((s, s), mn, dtype=h.dtype).triu(1)[None, None].expand(b, 1, s, s)
        for layer in self.layers:
            if self.gc and self.training and torch.is_grad_enabled():
                h = torch.utils.checkpoint.checkpoint(layer, h, cos, sin, mask,
                                                      use_reentrant=(self.gc == "reentrant"))
            else:
                h = layer(h, cos, sin, mask)
        h = self.norm(h)
        if self.num_output_chunks:  # torchtune TransformerDecoder.chunked_output
            return [self.lm_head(ch) for ch in h.chunk(self.num_output_chunks, dim=1)]
        return self.lm_head(h)


def loss_hf(logits, labels):
    """transformers ForCausalLMLoss (>=4.46): upcast the whole logits to fp32, pad-shift labels."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=-100)
    shift = labels[..., 1:].contiguous()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), shift.view(-1), ignore_index=-100)


def loss_hf_legacy(logits, labels):
    """transformers < 4.46 LlamaForCausalLM: logits.float(), shift_logits[..., :-1, :].contiguous()."""
    logits = logits.float()
    sl = logits[..., :-1, :].contiguous()
    lb = labels[..., 1:].contiguous()
    return F.cross_entropy(sl.view(-1, sl.size(-1)), lb.view(-1))


def loss_chunked(chunks, labels):
    """torchtune CEWithChunkedOutputLoss (labels shifted by the recipe with an ignore column)."""
    labels = torch.hstack((labels[..., 1:], torch.full((labels.shape[0], 1), -100, dtype=labels.dtype)))
    n = (labels != -100).sum()
    lab = [t.reshape(-1) for t in labels.chunk(len(chunks), dim=1)]
    lg = [c.reshape(-1, c.size(-1)) for c in chunks]
    total = torch.tensor(0.0)
    for c, t in zip(lg, lab):
        total = total + F.cross_entropy(c.float(), t, ignore_index=-100, reduction="sum")
    return total / n


LOSSES = {"hf": loss_hf, "hf_legacy": loss_hf_legacy, "chunked": loss_chunked}

# =============================================================================
# Cases
# =============================================================================
ATTN = ["q_proj", "k_proj", "v_proj", "o_proj"]
MLPN = ["gate_proj", "up_proj", "down_proj"]


def build(case):
    torch.manual_seed(0)
    c = ARCH[case["arch"]]
    m = CausalLM(c)
    method = case["method"]
    if method in ("full_fp32",):
        pass
    elif method == "full_bf16":
        m.to(torch.bfloat16)
    elif method in ("lora", "qlora_kbit"):
        m.to(torch.bfloat16)
        for p in m.parameters():
            p.requires_grad_(False)
        quant = method == "qlora_kbit"
        for layer in m.layers:
            for parent, names in ((layer.self_attn, ATTN), (layer.mlp, MLPN)):
                for n in names:
                    lin = getattr(parent, n)
                    base = Linear4bitSim(lin) if quant else lin
                    if n in case["targets"]:
                        setattr(parent, n, LoraLinear(base, case["r"], case["alpha"], torch.float32, quant))
                    else:
                        setattr(parent, n, base)
        if quant:  # peft prepare_model_for_kbit_training: non-4bit fp16/bf16 params -> fp32, frozen
            for name, p in m.named_parameters():
                if p.dtype in (torch.float16, torch.bfloat16):
                    p.data = p.data.to(torch.float32)
            if c["tie"]:
                m.lm_head.weight = m.embed_tokens.weight
        if case.get("input_grads", quant or case.get("gc") == "reentrant"):
            m.input_require_grads = True
    else:
        raise ValueError(method)
    m.gc = case.get("gc")
    if case.get("loss") == "chunked":
        m.num_output_chunks = case.get("chunks", 8)
    return m


def cases():
    out = []
    S3 = [(1, 128), (2, 256), (4, 256)]
    S2 = [(1, 128), (2, 256)]

    def add(name, sizes, **kw):
        kw.setdefault("loss", "hf")
        kw.setdefault("ga", 1)
        kw.setdefault("foreach", True)
        for b, s in sizes:
            d = dict(kw, batch=b, seq=s)
            d["case"] = f"{name}_b{b}s{s}"
            out.append(d)
    add("llama_full_fp32", S3, arch="llama", method="full_fp32")
    add("llama_full_bf16", S3, arch="llama", method="full_bf16")
    add("llama_full_bf16_noforeach", [(2, 256)], arch="llama", method="full_bf16", foreach=False)
    add("llama_full_bf16_legacyCE", [(2, 256)], arch="llama", method="full_bf16", loss="hf_legacy")
    add("llama_full_bf16_chunkedCE", S2, arch="llama", method="full_bf16", loss="chunked")
    add("llama_full_bf16_gcre", S2, arch="llama", method="full_bf16", gc="reentrant")
    add("llama_full_bf16_gcnr", S2, arch="llama", method="full_bf16", gc="nonreentrant")
    add("llama_full_bf16_ga2", [(2, 256)], arch="llama", method="full_bf16", ga=2)
    add("llama4L_full_bf16", [(2, 256)], arch="llama4L", method="full_bf16")
    add("llama4L_full_bf16_gcnr_chunkedCE", [(2, 256)], arch="llama4L", method="full_bf16",
        gc="nonreentrant", loss="chunked")
    add("llama_lora_r8_qv", S3, arch="llama", method="lora", r=8, alpha=16, targets=["q_proj", "v_proj"])
    add("llama_lora_r16_all", S2, arch="llama", method="lora", r=16, alpha=32, targets=ATTN + MLPN)
    add("llama_lora_r16_all_gcre", S2, arch="llama", method="lora", r=16, alpha=32, targets=ATTN + MLPN,
        gc="reentrant")
    add("llama_lora_r8_qv_gcnr_chunkedCE", S2, arch="llama", method="lora", r=8, alpha=16,
        targets=["q_proj", "v_proj"], gc="nonreentrant", loss="chunked")
    add("llama_lora_r8_qv_ga2", [(2, 256)], arch="llama", method="lora", r=8, alpha=16,
        targets=["q_proj", "v_proj"], ga=2)
    add("llama_qlora_kbit_r16_all_gcre", S3, arch="llama", method="qlora_kbit", r=16, alpha=32,
        targets=ATTN + MLPN, gc="reentrant")
    add("llama_qlora_kbit_r16_all_nogc", S2, arch="llama", method="qlora_kbit", r=16, alpha=32,
        targets=ATTN + MLPN)
    add("llama_qlora_kbit_r16_all_gcnr", [(2, 256)], arch="llama", method="qlora_kbit", r=16, alpha=32,
        targets=ATTN + MLPN, gc="nonreentrant")
    add("llamaTied32k_full_bf16", S2, arch="llamaTied32k", method="full_bf16")
    add("llamaTied32k_full_bf16_chunkedCE", S2, arch="llamaTied32k", method="full_bf16", loss="chunked")
    add("llamaTied32k_lora_r16_all_gcnr", [(2, 256)], arch="llamaTied32k", method="lora", r=16, alpha=32,
        targets=ATTN + MLPN, gc="nonreentrant")
    add("gemma_full_bf16", S2, arch="gemma", method="full_bf16")
    add("gemma_full_fp32", [(1, 128)], arch="gemma", method="full_fp32")
    add("gemma_lora_r16_all", S2, arch="gemma", method="lora", r=16, alpha=32, targets=ATTN + MLPN)
    add("gemma_qlora_kbit_r16_all_gcre", [(2, 256)], arch="gemma", method="qlora_kbit", r=16, alpha=32,
        targets=ATTN + MLPN, gc="reentrant")
    add("gemma_full_bf16_chunkedCE_gcnr", [(2, 256)], arch="gemma", method="full_bf16", loss="chunked",
        gc="nonreentrant")
    add("qwen_full_bf16", S2, arch="qwen", method="full_bf16")
    add("qwen_lora_r8_qv", S2, arch="qwen", method="lora", r=8, alpha=16, targets=["q_proj", "v_proj"])
    add("qwen_qlora_kbit_r16_all_gcre", [(2, 256)], arch="qwen", method="qlora_kbit", r=16, alpha=32,
        targets=ATTN + MLPN, gc="reentrant")
    add("qwen_full_fp32_gcnr", [(2, 256)], arch="qwen", method="full_fp32", gc="nonreentrant")
    return out


# =============================================================================
# Profiling
# =============================================================================
MARK_BASE = 7_777_777


def mark(k):
    t = torch.empty(MARK_BASE + k, dtype=torch.uint8)
    del t


def is_mark(nb):
    return MARK_BASE <= abs(nb) < MARK_BASE + 1000


def skey(t):
    s = t.storage()
    return s.data_ptr(), s.nbytes()


def tree_allocations(prof):
    """(time, dfs, bytes, ptr, outer_aten_op, nearest_non_aten_ancestor, outer_op_instance_id)."""
    roots = prof.profiler.kineto_results.experimental_event_tree()
    out = []
    stack = [(r, None, None, None) for r in reversed(roots)]
    dfs = 0
    while stack:
        node, top, fn, topid = stack.pop()
        if node.tag == EVT.Allocation:
            ef = node.extra_fields
            if str(ef.device).startswith("cpu"):
                out.append((node.start_time_ns, dfs, int(ef.alloc_size), int(ef.ptr), top, fn, topid))
            dfs += 1
            continue
        ntop, ntopid, nfn = top, topid, fn
        if node.name.startswith("aten::"):
            if top is None:
                ntop, ntopid = node.name, node.id
        else:
            nfn = node.name
        for ch in reversed(node.children):
            stack.append((ch, ntop, nfn, ntopid))
        dfs += 1
    out.sort(key=lambda r: (r[0], r[1]))
    return out


def short_fn(fn):
    if fn is None:
        return ""
    fn = fn.replace("autograd::engine::evaluate_function: ", "bwd:")
    if fn.startswith("Optimizer.step#"):
        return "optimizer.step"
    if fn.startswith("Optimizer.zero_grad#"):
        return "optimizer.zero_grad"
    return fn


def run_case(case):
    model = build(case)
    model.train()
    c = model.c
    b, s = case["batch"], case["seq"]
    g = torch.Generator().manual_seed(1)
    ga = case["ga"]
    ids = [torch.randint(0, c["vocab"], (b, s), generator=g) for _ in range(ga)]
    labels = [i.clone() for i in ids]
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, weight_decay=0.0, foreach=case["foreach"])
    lossf = LOSSES[case["loss"]]

    # parameter / buffer inventory
    seen = set()
    nparam = ntrain = pbytes = 0
    for p in model.parameters():
        k = skey(p)
        if k[0] in seen:
            continue
        seen.add(k[0])
        nparam += p.numel()
        pbytes += k[1]
        if p.requires_grad:
            ntrain += p.numel()
    q4 = [m for m in model.modules() if isinstance(m, Linear4bitSim)]
    nparam += sum(m.in_features * m.out_features for m in q4)

    # setup (what is alive before the window): params, buffers, inputs
    setup = []
    live_ptr = {}
    for kind, ts in (("param", list(model.parameters())), ("buffer", list(model.buffers())),
                     ("input", ids + labels)):
        for t in ts:
            p, nb = skey(t)
            if p in live_ptr:
                continue
            live_ptr[p] = len(setup)
            setup.append((nb, kind))

    phases = []
    recs = {}
    param_ptrs = {skey(p)[0] for p in model.parameters()} | {skey(x)[0] for x in model.buffers()}
    input_ptrs = {skey(x)[0] for x in ids + labels}

    def pack(t):
        p, nb = skey(t)
        if p not in param_ptrs and p not in input_ptrs:
            recs[p] = nb
        return t

    def unpack(t):
        return t

    def ph(name):
        phases.append(name)
        mark(len(phases) - 1)

    gc.collect()
    t0 = time.time()
    saved_hook_bytes = None
    with tprof.profile(activities=[tprof.ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        for step in (1, 2):
            ph(f"s{step}.zero_grad")
            opt.zero_grad(set_to_none=True)
            for mb in range(ga):
                ph(f"s{step}.m{mb}.forward")
                if step == 1 and mb == 0:
                    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                        out = model(ids[mb])
                        loss = lossf(out, labels[mb])
                    saved_hook_bytes = sum(recs.values())
                else:
                    out = model(ids[mb])
                    loss = lossf(out, labels[mb])
                if ga > 1:
                    loss = loss / ga
                del out
                ph(f"s{step}.m{mb}.backward")
                loss.backward()
                del loss
            ph(f"s{step}.optimizer")
            opt.step()
        ph("eval.forward")
        model.eval()
        with torch.no_grad():
            out = model(ids[0])
            loss = lossf(out, labels[0])
            del out
        del loss
        model.train()
        ph("end")
    wall = time.time() - t0
    ev = tree_allocations(prof)

    # build trace rows
    opnames = {}

    def oid(name):
        if name not in opnames:
            opnames[name] = len(opnames)
        return opnames[name]

    rows = []  # (bytes, id, phase_idx, op_idx, fn_idx, intra)
    for i, (nb, kind) in enumerate(setup):
        rows.append([nb, i, -1, oid("setup:" + kind), oid(""), 0])
    nid = len(setup)
    alloc_row = {}
    ptr_id = dict(live_ptr)  # ptr -> id
    ptr_row = {p: i for p, i in live_ptr.items()}
    cur = -1
    unmatched = 0
    for (tns, d, nb, ptr, top, fn, topid) in ev:
        if is_mark(nb):
            if nb > 0:
                cur = nb - MARK_BASE
            continue
        if nb > 0:
            rid = nid
            nid += 1
            ptr_id[ptr] = rid
            ptr_row[ptr] = len(rows)
            alloc_row[rid] = (len(rows), topid)
            rows.append([nb, rid, cur, oid(top or ""), oid(short_fn(fn)), 0])
        else:
            rid = ptr_id.pop(ptr, None)
            if rid is None:
                unmatched += 1
                rid = -1
            else:
                ar = alloc_row.get(rid)
                if ar is not None and ar[1] is not None and ar[1] == topid:
                    rows[ar[0]][5] = 1
                    intra = 1
                else:
                    intra = 0
            rows.append([nb, rid, cur, oid(top or ""), oid(short_fn(fn)), intra if rid >= 0 else 0])

    # analysis
    run = 0
    peak = 0
    peak_row = None
    ph_peak = {}
    ph_end = {}
    run_ex = 0
    peak_ex = 0
    for k, r in enumerate(rows):
        run += r[0]
        if r[5] == 0:
            run_ex += r[0]
            peak_ex = max(peak_ex, run_ex)
        if run > peak:
            peak, peak_row = run, k
        p = r[2]
        ph_peak[p] = max(ph_peak.get(p, 0), run)
        ph_end[p] = run
    setup_bytes = sum(nb for nb, _ in setup)
    names = {v: k for k, v in opnames.items()}
    pidx = {n: i for i, n in enumerate(phases)}
    fwd0 = pidx["s1.m0.forward"]
    bwd0 = pidx["s1.m0.backward"]
    live_before_fwd = ph_end.get(pidx["s1.zero_grad"], setup_bytes)
    retained = ph_end[fwd0] - live_before_fwd
    eval_i = pidx["eval.forward"]
    eval_start = ph_end[pidx["s2.optimizer"]]
    opt_bytes = 0
    for st in opt.state.values():
        for v in st.values():
            if torch.is_tensor(v) and v.numel() > 1:
                opt_bytes += skey(v)[1]
            elif torch.is_tensor(v):
                opt_bytes += skey(v)[1]
    grad_bytes = sum(skey(p.grad)[1] for p in trainable if p.grad is not None)
    summ = {
        "case": case["case"], "arch": case["arch"], "method": case["method"],
        "config": {k: v for k, v in c.items()},
        "batch": b, "seq": s, "ga": ga, "loss": case["loss"], "gc": case.get("gc") or "none",
        "lora": ({"r": case["r"], "alpha": case["alpha"], "targets": case["targets"], "adapter_dtype": "fp32"}
                 if "r" in case else None),
        "optimizer": f"torch.optim.AdamW(foreach={case['foreach']}, weight_decay=0)",
        "params": nparam, "trainable_params": ntrain,
        "setup_bytes": setup_bytes, "param_bytes_device": pbytes,
        "grad_bytes": grad_bytes, "optimizer_state_bytes": opt_bytes,
        "peak_allocated": peak,
        "peak_phase": phases[rows[peak_row][2]] if rows[peak_row][2] >= 0 else "setup",
        "peak_op": names[rows[peak_row][3]], "peak_fn": names[rows[peak_row][4]],
        "peak_allocated_excl_intra_op": peak_ex,
        "saved_activation_bytes_hooks": saved_hook_bytes,
        "retained_after_forward_step1": retained,
        "phase_peak": {phases[k]: v for k, v in ph_peak.items() if k >= 0},
        "phase_end": {phases[k]: v for k, v in ph_end.items() if k >= 0},
        "step1_peak": max(v for k, v in ph_peak.items() if k >= 0 and phases[k].startswith("s1.")),
        "step2_peak": max(v for k, v in ph_peak.items() if k >= 0 and phases[k].startswith("s2.")),
        "eval_peak": ph_peak[eval_i], "eval_peak_above_start": ph_peak[eval_i] - eval_start,
        "n_events": len(rows) - len(setup), "unmatched_frees": unmatched,
        "final_live": run, "wall_s": round(wall, 2),
        "torch": torch.__version__, "debian_python3_torch": DPKG, "num_threads": torch.get_num_threads(),
    }
    return summ, rows, phases, names


def write_trace(summ, rows, phases, names):
    path = os.path.join(OUT, summ["case"] + ".tsv")
    with open(path, "w") as f:
        f.write("# " + json.dumps({k: v for k, v in summ.items() if k not in ("phase_peak", "phase_end")}) + "\n")
        f.write("# phases " + json.dumps(["setup"] + phases) + "\n")
        f.write("# ops " + json.dumps([names[i] for i in range(len(names))]) + "\n")
        f.write("# columns: bytes(+alloc/-free)\tid(pairs alloc with free; -1 = free of a block not seen)"
                "\tphase(index into phases, 0=setup)\top(outermost aten op, index into ops)"
                "\tfn(nearest non-aten scope: bwd:XBackward0, optimizer.step, ...; index into ops)"
                "\tintra(1 = allocated and freed inside one outermost aten op call)\n")
        for r in rows:
            f.write(f"{r[0]}\t{r[1]}\t{r[2] + 1}\t{r[3]}\t{r[4]}\t{r[5]}\n")
    return path


def selftest():
    """Known sequence: 1000 B alloc, 3000 B alloc, free 1000, free 3000 -> peak 4000, final 0."""
    with tprof.profile(activities=[tprof.ProfilerActivity.CPU], profile_memory=True) as prof:
        a = torch.empty(1000, dtype=torch.uint8)
        b = torch.empty(3000, dtype=torch.uint8)
        del a
        del b
    ev = [e[2] for e in tree_allocations(prof)]
    assert ev == [1000, 3000, -1000, -3000], ev


def main():
    os.makedirs(OUT, exist_ok=True)
    selftest()
    cs = cases()
    if "--list" in sys.argv:
        for c in cs:
            print(c["case"])
        return
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    sp = os.path.join(OUT, "summary.json")
    allsum = json.load(open(sp)) if os.path.exists(sp) else {}
    for c in cs:
        if only and only not in c["case"]:
            continue
        summ, rows, phases, names = run_case(c)
        write_trace(summ, rows, phases, names)
        allsum[c["case"]] = summ
        json.dump(allsum, open(sp, "w"), indent=1, sort_keys=True)
        print(f"{summ['case']:45s} peak {summ['peak_allocated']:>11d} phase {summ['peak_phase']:16s} "
              f"saved {summ['saved_activation_bytes_hooks']:>10d} ev {summ['n_events']:>6d} "
              f"unm {summ['unmatched_frees']} {summ['wall_s']}s", flush=True)
        del rows
        gc.collect()
    write_summary_tsv(allsum)


def write_summary_tsv(allsum):
    cols = ["case", "arch", "method", "batch", "seq", "ga", "loss", "gc", "params", "trainable_params",
            "setup_bytes", "grad_bytes", "optimizer_state_bytes", "saved_activation_bytes_hooks",
            "retained_after_forward_step1", "peak_allocated", "peak_phase", "peak_op",
            "peak_allocated_excl_intra_op", "step1_peak", "step2_peak", "eval_peak", "n_events"]
    with open(os.path.join(OUT, "summary.tsv"), "w") as f:
        f.write("\t".join(cols) + "\n")
        for k in sorted(allsum):
            f.write("\t".join(str(allsum[k][c]) for c in cols) + "\n")


if __name__ == "__main__":
    main()
