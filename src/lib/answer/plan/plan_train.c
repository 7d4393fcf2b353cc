/* plan_train.c — training launches that run as written on one node or many:
 * the DeepSpeed config with a hostfile, the deepspeed and torchrun commands,
 * an accelerate config with accelerate launch, and the Trainer arguments the
 * script must pass (gradient checkpointing is the model's, switched on by
 * TrainingArguments(gradient_checkpointing=True): DeepSpeed's own
 * activation_checkpointing block acts only through deepspeed.checkpointing,
 * which a Hugging Face model does not call). Every key and flag is checked
 * against the documented lists in tests/data/plan/ (with their sources). */
#include "answer/plan/plan_internal.h"

#include <stdio.h>

#define MASTER_PORT 29500

/* The ZeRO stage the knobs ask for (FSDP full shard is ZeRO-3, grad-op ZeRO-2). */
static int zero_stage(const vf_train_opts *t)
{
    if (t->fsdp == 1)
        return 3;
    if (t->fsdp == 2 && t->zero < 2)
        return 2;
    return t->zero;
}

static bool bf16(const vf_train_opts *t)
{
    return t->precision == VF_PREC_BF16_MIXED || t->precision == VF_PREC_BF16;
}

static const char *offload_device(const vf_train_opts *t, bool params)
{
    bool on = params ? (t->offload == VF_OFFLOAD_PARAMS || t->offload == VF_OFFLOAD_BOTH)
                     : (t->offload == VF_OFFLOAD_OPTIMIZER || t->offload == VF_OFFLOAD_BOTH);
    return !on ? "none" : t->offload_nvme ? "nvme" : "cpu";
}

/* TrainingArguments the script passes: the same batch figures as the
 * config (the integration refuses a mismatch), precision, the 8-bit
 * optimizer when asked, and gradient checkpointing. */
static void trainer_args(vf__sbuf *b, const vf_estimate_opts *o, const char *ds_config)
{
    const vf_train_opts *t = &o->train;
    vf__put(b, "# In train.py (a Hugging Face Trainer script), the TrainingArguments this launch needs:\n");
    vf__put(b, "TrainingArguments(per_device_train_batch_size=%llu, gradient_accumulation_steps=%u",
            (unsigned long long)(t->micro_batch ? t->micro_batch : 1), t->grad_accum ? t->grad_accum : 1);
    if (bf16(t))
        vf__put(b, ", bf16=True");
    else if (t->precision == VF_PREC_FP16_MIXED)
        vf__put(b, ", fp16=True");
    if (t->optimizer == VF_OPT_ADAMW_8BIT)
        vf__put(b, ", optim=\"adamw_bnb_8bit\"");
    else if (t->optimizer == VF_OPT_PAGED_ADAMW_8BIT)
        vf__put(b, ", optim=\"paged_adamw_8bit\"");
    else if (t->optimizer == VF_OPT_PAGED_ADAMW)
        vf__put(b, ", optim=\"paged_adamw_32bit\"");
    if (t->recompute != VF_RECOMPUTE_NONE)
        vf__put(b, ", gradient_checkpointing=True");
    if (ds_config)
        vf__put(b, ", deepspeed=\"%s\"", ds_config);
    vf__put(b, ")\n");
}

static void ds_config(vf__sbuf *b, const vf_estimate_opts *o, const vf__layout *l)
{
    const vf_train_opts *t = &o->train;
    uint64_t mb = t->micro_batch ? t->micro_batch : 1, ga = t->grad_accum ? t->grad_accum : 1;
    int stage = zero_stage(t);
    vf__put(b, "# ds_config.json\n");
    vf__put(b, "{\n  \"train_micro_batch_size_per_gpu\": %llu,\n", (unsigned long long)mb);
    vf__put(b, "  \"gradient_accumulation_steps\": %llu,\n", (unsigned long long)ga);
    vf__put(b, "  \"train_batch_size\": %llu,\n", (unsigned long long)(mb * ga * l->gpus));
    vf__put(b, "  \"bf16\": {\"enabled\": %s},\n", bf16(t) ? "true" : "false");
    vf__put(b, "  \"fp16\": {\"enabled\": %s},\n", t->precision == VF_PREC_FP16_MIXED ? "true" : "false");
    vf__put(b, "  \"zero_optimization\": {\n    \"stage\": %d", stage);
    if (t->offload == VF_OFFLOAD_OPTIMIZER || t->offload == VF_OFFLOAD_BOTH)
        vf__put(b, ",\n    \"offload_optimizer\": {\"device\": \"%s\", \"pin_memory\": true}",
                offload_device(t, false));
    if ((t->offload == VF_OFFLOAD_PARAMS || t->offload == VF_OFFLOAD_BOTH) && stage == 3)
        vf__put(b, ",\n    \"offload_param\": {\"device\": \"%s\", \"pin_memory\": true}", offload_device(t, true));
    vf__put(b, "\n  }\n}\n");
}

void vf__emit_deepspeed(vf__sbuf *b, const vf_estimate_opts *o, const vf__layout *l)
{
    ds_config(b, o, l);
    uint32_t per = l->nodes > 1 ? l->per_node : l->gpus;
    if (l->nodes > 1) {
        vf__put(b, "# hostfile: one line per node, its address and GPUs; node1 is the first\n");
        for (uint32_t i = 0; i < l->nodes; i++)
            vf__put(b, "node%u slots=%u\n", i + 1, per);
    }
    trainer_args(b, o, "ds_config.json");
    if (l->nodes > 1) {
        vf__put(b, "# Launch on node1 (the launcher reaches the other nodes over passwordless ssh):\n");
        vf__put(b, "deepspeed --hostfile hostfile --num_nodes %u --num_gpus %u --master_addr node1 --master_port %d "
                   "train.py --deepspeed ds_config.json\n",
                l->nodes, per, MASTER_PORT);
        vf__put(b, "# Or without ssh: on every node, NODE_RANK 0 on node1, 1 on the next, up to %u:\n", l->nodes - 1);
        vf__put(b, "torchrun --nnodes %u --nproc-per-node %u --node-rank NODE_RANK --master-addr node1 "
                   "--master-port %d train.py --deepspeed ds_config.json\n",
                l->nodes, per, MASTER_PORT);
    } else {
        vf__put(b, "# Launch:\n");
        vf__put(b, "deepspeed --num_gpus %u train.py --deepspeed ds_config.json\n", per);
    }
}

/* accelerate config: FSDP when the knobs ask for it, DeepSpeed for a ZeRO
 * stage, plain multi-GPU data parallel otherwise. */
static void accelerate_config(vf__sbuf *b, const vf_estimate_opts *o, const vf__layout *l)
{
    const vf_train_opts *t = &o->train;
    bool fsdp = t->fsdp == 1 || t->fsdp == 2 || t->fsdp == 3;
    int stage = zero_stage(t);
    vf__put(b, "# The file 'accelerate config' writes, for every node:\n# accelerate.yaml\n");
    vf__put(b, "compute_environment: LOCAL_MACHINE\n");
    vf__put(b, "distributed_type: %s\n", fsdp ? "FSDP" : stage >= 1 ? "DEEPSPEED" : l->gpus > 1 ? "MULTI_GPU" : "NO");
    vf__put(b, "mixed_precision: %s\n", bf16(t) ? "bf16" : t->precision == VF_PREC_FP16_MIXED ? "fp16" : "'no'");
    vf__put(b, "num_machines: %u\nnum_processes: %u\nmachine_rank: 0\n", l->nodes, l->gpus);
    if (l->nodes > 1)
        vf__put(b, "main_process_ip: node1\nmain_process_port: %d\nrdzv_backend: static\nsame_network: true\n",
                MASTER_PORT);
    if (fsdp) {
        const char *strategy = t->fsdp == 1 ? "FULL_SHARD" : t->fsdp == 2 ? "SHARD_GRAD_OP" : "NO_SHARD";
        bool off = t->offload != VF_OFFLOAD_NONE;
        vf__put(b, "fsdp_config:\n  fsdp_sharding_strategy: %s\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                   "  fsdp_offload_params: %s\n  fsdp_state_dict_type: SHARDED_STATE_DICT\n",
                strategy, off ? "true" : "false");
    } else if (stage >= 1) {
        vf__put(b, "deepspeed_config:\n  zero_stage: %d\n  gradient_accumulation_steps: %u\n"
                   "  offload_optimizer_device: %s\n  offload_param_device: %s\n",
                stage, t->grad_accum ? t->grad_accum : 1, offload_device(t, false),
                stage == 3 ? offload_device(t, true) : "none");
        if (stage == 3)
            vf__put(b, "  zero3_init_flag: true\n");
        if (l->nodes > 1)
            vf__put(b, "  deepspeed_multinode_launcher: standard\n");
    }
}

void vf__emit_accelerate_train(vf__sbuf *b, const vf_estimate_opts *o, const vf__layout *l)
{
    accelerate_config(b, o, l);
    trainer_args(b, o, NULL);
    if (l->nodes > 1) {
        vf__put(b, "# On every node, MACHINE_RANK 0 on node1 (main_process_ip), 1 on the next, up to %u:\n",
                l->nodes - 1);
        vf__put(b, "accelerate launch --config_file accelerate.yaml --machine_rank MACHINE_RANK train.py\n");
    } else {
        vf__put(b, "# Launch:\n");
        vf__put(b, "accelerate launch --config_file accelerate.yaml train.py\n");
    }
}
