/* estimate_opts.h — the estimate knobs as getopt_long tables and parsers,
 * shared by 'vramfit estimate' and 'vramfit fit' (and any command that runs
 * the memory model). Inference knobs live in estimate_opts.c, training knobs
 * in train_opts.c. */
#ifndef VF_ESTIMATE_OPTS_H
#define VF_ESTIMATE_OPTS_H

#include "cli.h"

#include <getopt.h>

/* Option codes: long-only options use values from 256 up; the inference
 * table uses 256..399, the training table 400..599, commands 600 and up. */
enum {
    VF_OPT_RUNTIME = 256, VF_OPT_WEIGHTS, VF_OPT_KV, VF_OPT_ATTN, VF_OPT_BATCH, VF_OPT_CONTEXT, VF_OPT_PROMPT,
    VF_OPT_GPU, VF_OPT_GPU_UTIL, VF_OPT_MAX_MODEL_LEN, VF_OPT_MAX_NUM_SEQS, VF_OPT_MAX_BATCHED, VF_OPT_TP,
    VF_OPT_PP, VF_OPT_GPUS, VF_OPT_VLLM_VERSION, VF_OPT_ENFORCE_EAGER, VF_OPT_UBATCH, VF_OPT_LC_BATCH,
    VF_OPT_PARALLEL, VF_OPT_FLASH_ATTN, VF_OPT_SWA_FULL, VF_OPT_NGL, VF_OPT_TENSOR_SPLIT, VF_OPT_KEEP_DTYPE, VF_OPT_KV_UNIFIED, VF_OPT_LOGITS,
    VF_OPT_ALLOC_CONF, VF_OPT_CUDA_CONTEXT, VF_OPT_CUDA_VERSION,
    VF_OPT_DRAFT, VF_OPT_DRAFT_TOKENS, VF_OPT_MMPROJ, VF_OPT_MAX_IMAGES, VF_OPT_IMAGE_SIZE, VF_OPT_ENABLE_LORA,
    VF_OPT_MAX_LORAS, VF_OPT_MAX_LORA_RANK,
    VF_OPT_INPUT, VF_OPT_MARGIN, VF_OPT_OVERRIDE_TENSOR, VF_OPT_CPU_MOE, VF_OPT_N_CPU_MOE,
    VF_OPT_LLAMACPP_BUILD,
    VF_OPT_INFER_END_,
    VF_OPT_TRAIN_FIRST = 400,
    VF_OPT_CMD_FIRST = 600
};

/* Inference (and shared: --runtime, --weights, --tp, --gpu) knobs,
 * terminated by a zero entry. */
extern const struct option vf_cli_estimate_options[];
/* Training knobs (train_opts.c), terminated by a zero entry. */
extern const struct option vf_cli_train_options[];

/* Parse one option of its table into o. Returns 1 when handled, 0 when the
 * code is not one of this table's, -1 after printing a usage error. */
int vf_cli_parse_infer_opt(int c, const char *arg, vf_estimate_opts *o);
int vf_cli_parse_train_opt(int c, const char *arg, vf_estimate_opts *o);
/* The option's name when c is a knob only training prices (train_opts.c), else NULL. */
const char *vf_cli_train_only(int c);
/* A usage error (2) when a training-only knob was given without --train, else -1. */
int vf_cli_train_only_check(const char *cmd, const char *given, const vf_estimate_opts *o);
/* The serving extras (serving_opts.c): --draft, --mmproj, images, LoRA slots. */
int vf_cli_parse_serving_opt(int c, const char *arg, vf_estimate_opts *o);
void vf_cli_serving_opts_help(FILE *f);

/* Shared by the tables' parsers: a usage error "--OPT ARG: WHY" (returns -1),
 * and a whole number in [lo, hi] into out (returns 1, or -1 after the usage
 * error: why, or the range when why is NULL). */
int vf_cli_opt_bad(const char *opt, const char *arg, const char *why);
int vf_cli_opt_number(const char *opt, const char *arg, uint64_t lo, uint64_t hi, const char *why, uint64_t *out);

/* Defaults a command takes from the environment before its options:
 * PYTORCH_CUDA_ALLOC_CONF, as the PyTorch process would read it. */
void vf_cli_env_defaults(vf_estimate_opts *o);

/* Help text for the tables' options (for a command's --help). */
void vf_cli_infer_opts_help(FILE *f);
void vf_cli_train_opts_help(FILE *f);

/* Concatenates tables (each zero-terminated) into out (cap entries, last one
 * zeroed); returns false when out is too small. */
bool vf_cli_options_merge(struct option *out, size_t cap, const struct option *const *tables, size_t n);

/* The engine an estimate models when --runtime is not given: a GGUF file
 * is served by llama.cpp, anything else runs on PyTorch + transformers
 * (inference and Trainer). The "generic" plain sum omits the engine's own
 * memory, so it is never the silent default of a does-it-fit answer. */
void vf_cli_default_runtime(vf_estimate_opts *o, const vf_model *m);
/* The runtime's name as printed: "pytorch" for a graph on the PyTorch runtime. */
const char *vf_cli_runtime_label(vf_runtime r, bool graph);

/* estimate's own options (serve reads the table to know what estimate takes). */
enum { OPT_TRAIN = VF_OPT_CMD_FIRST, OPT_JSON, OPT_EXPLAIN, OPT_UNITS, OPT_HELP };
extern const struct option vf_cli_estimate_cmd_options[];

/* models' own options (args/models_args.c, vf_cli_models_options in cli.h) */
enum { M_JSON = VF_OPT_CMD_FIRST, M_FAMILY, M_FITS, M_LOCAL, M_HOST, M_MAX_PARAMS, M_TASK, M_TRAIN, M_UNITS, M_HELP };

#endif
