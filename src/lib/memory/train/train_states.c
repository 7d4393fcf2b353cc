/* train_states.c — parameters, gradients and optimizer states, per tensor.
 * Which parameters train (full fine-tuning, LoRA adapters), what the frozen
 * base costs at its storage precision (bf16, or NF4 with its block scales),
 * and each optimizer's state from its definition (sources in
 * docs/memory-model.md "Training"). */
#include "memory/train/train_internal.h"

#include <string.h>

/* bitsandbytes 8-bit optimizers: uint8 states with one fp32 absmax per block
 * of 256 (bitsandbytes/optim/optimizer.py init_state, block_wise), and plain
 * fp32 states for tensors under min_8bit_size = 4096 elements. */
#define BNB_BLOCK 256u
#define BNB_MIN_8BIT 4096u
/* NF4 (QLoRA, Dettmers et al. 2023): 4 bits per weight, one absmax per 64
 * weights; fp32 absmax, or with double quantization 8-bit absmax plus one fp32
 * scale per 256 absmax values. */
#define NF4_BLOCK 64u
#define NF4_DQ_BLOCK 256u

static uint64_t ceil_div(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }

/* bitsandbytes' paged optimizers (Optimizer8bit.get_state_buffer): a state
 * of a tensor of 1e5 elements or more is F.get_paged (cudaMallocManaged),
 * the rest torch.zeros_like; the paged 8-bit AdamW's two uint8 states live
 * there, outside the caching allocator, paged to the host under pressure
 * (their block absmax are ordinary tensors). */
uint64_t vf__optim_paged_bytes(vf_optimizer o, uint64_t n)
{
    if (n < 100000)
        return 0;
    return o == VF_OPT_PAGED_ADAMW_8BIT ? 2 * n : o == VF_OPT_PAGED_ADAMW ? 8 * n : 0;
}

uint64_t vf__optim_state_bytes(vf_optimizer o, const vf__tcfg *c, const uint64_t *shape, uint32_t n_dims, uint64_t n)
{
    uint64_t st = c->st_bytes;
    switch (o) {
    case VF_OPT_ADAMW:
    case VF_OPT_ADAM:
        /* exp_avg + exp_avg_sq like the parameter, plus torch's 0-dim fp32 step tensor */
        return 2 * n * st + 4;
    case VF_OPT_ADAMW_8BIT:
    case VF_OPT_PAGED_ADAMW_8BIT:
        if (n < BNB_MIN_8BIT)
            return 2 * n * 4;
        return 2 * n + 2 * 4 * ceil_div(n, BNB_BLOCK);
    case VF_OPT_PAGED_ADAMW:
        /* optim_bits=32: state1 and state2 fp32 whatever the parameter's
         * dtype (Optimizer2State.init_state); step is a Python int */
        return 2 * n * 4;
    case VF_OPT_SGD:
        return 0;
    case VF_OPT_SGD_MOMENTUM:
        return n * st; /* momentum_buffer */
    case VF_OPT_LION:
        return n * st; /* exp_avg only */
    case VF_OPT_ADAGRAD:
        return n * st + 4; /* sum + step tensor */
    case VF_OPT_ADAFACTOR:
        /* factored second moment for matrices: a row and a column vector
         * (shape[:-1] and shape[:-2]+shape[-1:]); full for vectors; no first
         * moment with beta1 = None (HF Adafactor's default) */
        if (n_dims >= 2 && shape && shape[n_dims - 1] && shape[n_dims - 2]) {
            uint64_t rows = n / shape[n_dims - 1], cols = n / shape[n_dims - 2];
            return (rows + cols) * st;
        }
        return n * st;
    }
    return 0;
}

/* The optimizer step's temporaries for one tensor of n elements, given the
 * previous tensor's (the per-tensor loop keeps the previous denominator alive
 * while building the next: max_k(|p_k-1| + 2|p_k|) for AdamW). */
static uint64_t step_temp_loop(vf_optimizer o, const vf__tcfg *c, uint64_t prev, uint64_t n)
{
    uint64_t st = c->st_bytes;
    switch (o) {
    case VF_OPT_ADAMW:
    case VF_OPT_ADAM:
        return (prev + 2 * n) * st;
    case VF_OPT_ADAGRAD:
        return (prev + n) * st; /* std = sum.sqrt().add_(eps) */
    case VF_OPT_LION:
        return n * st; /* the interpolated update before sign_() */
    case VF_OPT_ADAFACTOR:
        return 2 * n * st; /* grad**2 and the approximated update */
    default:
        return 0; /* in place, or one fused kernel (bitsandbytes) */
    }
}

bool vf__train_matrix_role(vf_role r)
{
    switch (r) {
    case VF_ROLE_ATTN_Q: case VF_ROLE_ATTN_K: case VF_ROLE_ATTN_V: case VF_ROLE_ATTN_QKV:
    case VF_ROLE_ATTN_O: case VF_ROLE_ATTN_LORA: case VF_ROLE_MLP_GATE: case VF_ROLE_MLP_UP:
    case VF_ROLE_MLP_DOWN: case VF_ROLE_EXPERT: case VF_ROLE_SHARED_EXPERT:
        return true;
    default:
        return false;
    }
}

/* LoRA targets → roles. "" means PEFT's default for Llama-style models: q,v. */
vf_status vf__lora_targets(const char *spec, bool on[VF_ROLE_COUNT], vf_error *err)
{
    memset(on, 0, sizeof(bool) * VF_ROLE_COUNT);
    if (!spec || !spec[0])
        spec = "q,v";
    char buf[128];
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "all-linear") || !strcmp(tok, "all")) {
            for (int r = 0; r < VF_ROLE_COUNT; r++)
                on[r] = vf__train_matrix_role((vf_role)r);
        } else if (!strcmp(tok, "q") || !strcmp(tok, "q_proj")) {
            on[VF_ROLE_ATTN_Q] = on[VF_ROLE_ATTN_QKV] = true;
        } else if (!strcmp(tok, "k") || !strcmp(tok, "k_proj")) {
            on[VF_ROLE_ATTN_K] = on[VF_ROLE_ATTN_QKV] = true;
        } else if (!strcmp(tok, "v") || !strcmp(tok, "v_proj")) {
            on[VF_ROLE_ATTN_V] = on[VF_ROLE_ATTN_QKV] = true;
        } else if (!strcmp(tok, "o") || !strcmp(tok, "o_proj")) {
            on[VF_ROLE_ATTN_O] = true;
        } else if (!strcmp(tok, "gate") || !strcmp(tok, "gate_proj")) {
            on[VF_ROLE_MLP_GATE] = true;
        } else if (!strcmp(tok, "up") || !strcmp(tok, "up_proj")) {
            on[VF_ROLE_MLP_UP] = true;
        } else if (!strcmp(tok, "down") || !strcmp(tok, "down_proj")) {
            on[VF_ROLE_MLP_DOWN] = true;
        } else {
            return vf__err(err, VF_EINVAL, "", "unknown lora target '%s' (q,k,v,o,gate,up,down or all-linear)", tok);
        }
    }
    return VF_OK;
}

/* LitGPT's BitsandbytesPrecision gets no ignore_modules: every nn.Linear,
 * the head included, becomes 4-bit (litgpt/finetune/lora.py) */
static bool quantized_role(const vf__tcfg *c, vf_role r)
{
    return vf__train_matrix_role(r) || (c->litgpt && r == VF_ROLE_OUTPUT);
}

static uint64_t nf4_bytes(const char *qlora, uint64_t n)
{
    uint64_t blocks = ceil_div(n, NF4_BLOCK);
    uint64_t b = ceil_div(n, 2);
    if (!strcmp(qlora, "nf4-dq"))
        return b + blocks + 4 * ceil_div(blocks, NF4_DQ_BLOCK);
    return b + 4 * blocks;
}

/* Bytes a frozen tensor of n params occupies: NF4 for QLoRA's block matrices,
 * else the compute dtype. */
bool vf__train_quantized(const vf__tcfg *c, const vf_tensor *t)
{
    return c->qlora && quantized_role(c, t->role) && t->n_dims >= 2;
}

uint64_t vf__train_frozen_bytes(const vf__tcfg *c, const char *qlora, const vf_tensor *t, uint64_t n)
{
    if (vf__train_quantized(c, t))
        return nf4_bytes(qlora, n);
    return n * (c->kbit_fp32 ? 4u : (uint64_t)c->frozen_bytes);
}

/* How many LoRA adapters a matrix gets and the rows of each A. LitGPT builds
 * its own modules from a Hugging Face checkpoint: a fused gate_up_proj
 * (Phi-3) becomes LLaMAMLP's fc_1 and fc_2, two LoRALinear with their own A,
 * B and dropout on the same input; a fused qkv_proj stays one LoRAQKVLinear,
 * whose A has r rows per adapted q, k, v (litgpt/lora.py). */
void vf__lora_adapter_layout(const vf__tcfg *c, uint32_t qkv_mask, const vf_tensor *tn, uint64_t *copies,
                             uint64_t *a_rows)
{
    *copies = 1;
    *a_rows = c->lora_rank;
    if (!c->litgpt)
        return;
    if (tn->role == VF_ROLE_MLP_UP && strstr(tn->name, "gate_up_proj"))
        *copies = 2;
    if (tn->role == VF_ROLE_ATTN_QKV) {
        uint32_t m = qkv_mask;
        *a_rows = (uint64_t)c->lora_rank * ((m & 1u) + ((m >> 1) & 1u) + ((m >> 2) & 1u));
    }
}

/* Adapters A [rows, in] and B [out, r] for one adapted matrix (per expert when
 * stacked): parameters, optimizer states, the step's temporaries, and what
 * the activations need (each B keeps A's output, each adapter's dropout its
 * input). */
static void add_adapters(const vf_train_opts *t, const vf__tcfg *c, const vf_tensor *tn, vf__tstates *s,
                         uint64_t *prev, uint64_t *temp, uint64_t *sum_tr)
{
    uint64_t e = tn->n_experts > 1 ? tn->n_experts : 1, copies, rows;
    vf__lora_adapter_layout(c, s->lora_qkv_mask, tn, &copies, &rows);
    e *= copies;
    uint64_t out = tn->shape[tn->n_dims - 2] / copies, in = tn->shape[tn->n_dims - 1];
    uint64_t shA[2] = {rows, in}, shB[2] = {out, t->lora_rank};
    uint64_t nA = rows * in, nB = out * t->lora_rank;
    s->trainable += e * (nA + nB);
    s->n_trainable_tensors += 2 * e;
    s->lora_act_extra += e * (rows / (t->lora_rank ? t->lora_rank : 1));
    s->lora_in_sum += e * in;
    if (tn->role == VF_ROLE_ATTN_Q || tn->role == VF_ROLE_ATTN_K || tn->role == VF_ROLE_ATTN_V)
        s->lora_qkv_in += e * in;
    s->state_bytes += e * (vf__optim_state_bytes(t->optimizer, c, shA, 2, nA) +
                           vf__optim_state_bytes(t->optimizer, c, shB, 2, nB));
    s->paged_bytes += e * (vf__optim_paged_bytes(t->optimizer, nA) + vf__optim_paged_bytes(t->optimizer, nB));
    uint64_t tA = step_temp_loop(t->optimizer, c, *prev, nA), tB = step_temp_loop(t->optimizer, c, nA, nB);
    if (tA > *temp)
        *temp = tA;
    if (tB > *temp)
        *temp = tB;
    *prev = nB;
    *sum_tr += e * (nA + nB);
    uint64_t big = nA > nB ? nA : nB;
    if (big > s->largest_trainable)
        s->largest_trainable = big;
}

vf_status vf__train_states(const vf_model *m, const vf_train_opts *t, const vf__tcfg *c, vf__tstates *s,
                           vf_error *err)
{
    memset(s, 0, sizeof *s);
    bool target[VF_ROLE_COUNT];
    if (c->lora) {
        vf_status st = vf__lora_targets(t->lora_targets, target, err);
        if (st != VF_OK)
            return st;
        s->lora_qkv_mask = (target[VF_ROLE_ATTN_Q] ? 1u : 0u) | (target[VF_ROLE_ATTN_K] ? 2u : 0u) |
                           (target[VF_ROLE_ATTN_V] ? 4u : 0u);
    }
    /* LitGPT's LoRA layers feed A the dropped copy when lora_dropout > 0 and
     * the frozen base saves nothing, so the input itself is not kept */
    bool a_keeps_input = !(c->litgpt && c->lora_dropout > 0) && !c->adapter_in;
    for (int r = 0; r < VF_ROLE_COUNT; r++)
        s->linear_saves_input[r] = !c->lora || (target[r] && a_keeps_input) ||
                                   (c->bnb_keeps_input && vf__train_matrix_role((vf_role)r));

    uint64_t prev = 0, temp = 0, sum_tr = 0;
    /* DeepSpeed's largest layer: the params one module owns directly
     * (weight + bias share the name prefix). */
    const char *cur_mod = NULL;
    size_t cur_len = 0;
    uint64_t cur_sum = 0;
    for (size_t i = 0; i < m->n_tensors; i++) {
        const vf_tensor *tn = &m->tensors[i];
        if (tn->flags & VF_TENSOR_NOT_PARAM) {
            s->buffer_bytes += tn->n_bytes;
            continue;
        }
        uint64_t n = tn->n_params ? tn->n_params : tn->n_elements;
        s->params += n;
        s->n_param_tensors++;
        if (tn->role == VF_ROLE_EXPERT)
            s->expert_params += n;
        if (c->qlora && c->litgpt && tn->role == VF_ROLE_OUTPUT && tn->n_dims >= 2 && n > s->largest_linear)
            s->largest_linear = n; /* the 4-bit head too: dequantized whole for each matmul */
        if (vf__train_matrix_role(tn->role) && tn->n_dims >= 2) {
            s->block_linear_params += n;
            uint64_t per = tn->n_experts > 1 ? n / tn->n_experts : n;
            if (per > s->largest_linear)
                s->largest_linear = per;
        }
        const char *dot = strrchr(tn->name, '.');
        size_t mlen = dot ? (size_t)(dot - tn->name) : strlen(tn->name);
        if (cur_mod && mlen == cur_len && !strncmp(cur_mod, tn->name, mlen)) {
            cur_sum += n;
        } else {
            cur_mod = tn->name;
            cur_len = mlen;
            cur_sum = n;
        }
        if (cur_sum > s->largest_module)
            s->largest_module = cur_sum;

        if (!c->lora) {
            s->trainable += n;
            s->n_trainable_tensors++;
            s->state_bytes += vf__optim_state_bytes(t->optimizer, c, tn->shape, tn->n_dims, n);
            s->paged_bytes += vf__optim_paged_bytes(t->optimizer, n);
            uint64_t tt = step_temp_loop(t->optimizer, c, prev, n);
            if (tt > temp)
                temp = tt;
            if (n > s->largest_trainable)
                s->largest_trainable = n;
            prev = n;
            sum_tr += n;
            continue;
        }
        s->frozen += n;
        s->weight_bytes += vf__train_frozen_bytes(c, t->qlora, tn, n);
        if (vf__train_matrix_role(tn->role) && tn->n_dims >= 2 && target[tn->role])
            add_adapters(t, c, tn, s, &prev, &temp, &sum_tr);
    }
    if (c->head_shape[0] && s->params) {
        /* LitGPT's own head beside the embedding it was copied from (train.c) */
        uint64_t n = c->head_shape[0] * c->head_shape[1];
        s->params += n;
        s->n_param_tensors++;
        if (c->lora) {
            s->frozen += n;
            s->weight_bytes += c->qlora ? nf4_bytes(t->qlora, n) : n * (uint64_t)c->frozen_bytes;
            if (c->qlora && n > s->largest_linear)
                s->largest_linear = n;
        } else {
            s->trainable += n;
            s->n_trainable_tensors++;
            s->state_bytes += vf__optim_state_bytes(t->optimizer, c, c->head_shape, 2, n);
            s->paged_bytes += vf__optim_paged_bytes(t->optimizer, n);
            uint64_t tt = step_temp_loop(t->optimizer, c, prev, n);
            if (tt > temp)
                temp = tt;
            if (n > s->largest_trainable)
                s->largest_trainable = n;
            sum_tr += n;
        }
    }
    if (!s->params)
        return vf__err(err, VF_EUNSUPPORTED, m->source ? m->source : "", "model has no parameters");
    if (c->lora && !s->trainable)
        return vf__err(err, VF_EINVAL, m->source ? m->source : "", "no lora target matches a matrix of this model");

    s->weight_bytes += s->trainable * c->w_bytes;
    s->grad_bytes = s->trainable * c->g_bytes;
    s->master_bytes = s->trainable * c->master;
    vf_optim_impl impl = t->optim_impl;
    if (c->zero >= 1 && !t->fsdp && impl == VF_OPTIM_FOREACH &&
        (t->optimizer == VF_OPT_ADAMW || t->optimizer == VF_OPT_ADAM))
        impl = VF_OPTIM_FUSED; /* DeepSpeed steps with its multi-tensor FusedAdam / CPUAdam */
    if (c->optim_in_bwd) {
        /* one optimizer per parameter, stepped alone in its hook: the
         * foreach lists and the loop's temporaries are one tensor's, the
         * largest's at most */
        sum_tr = s->largest_trainable;
        temp = step_temp_loop(t->optimizer, c, 0, s->largest_trainable);
    }
    switch (impl) {
    case VF_OPTIM_FOR_LOOP:
        s->step_temp_bytes = temp;
        break;
    case VF_OPTIM_FUSED:
        s->step_temp_bytes = 0;
        break;
    case VF_OPTIM_FOREACH:
    case VF_OPTIM_FOREACH_LEGACY: {
        /* the foreach step builds whole-model lists: sqrt(v) for AdamW (torch
         * 2.x adds eps in place; 1.13's _foreach_add made a second list, as
         * measured in tests/reference/torch), Adagrad's std, Lion's update */
        uint64_t k = impl == VF_OPTIM_FOREACH_LEGACY ? 2 : 1;
        if (t->optimizer == VF_OPT_ADAMW || t->optimizer == VF_OPT_ADAM)
            s->step_temp_bytes = k * sum_tr * c->st_bytes;
        else if (t->optimizer == VF_OPT_ADAGRAD || t->optimizer == VF_OPT_LION)
            s->step_temp_bytes = sum_tr * c->st_bytes;
        else
            s->step_temp_bytes = temp;
        break;
    }
    }
    return VF_OK;
}
