/* cmd_plan.c — vramfit plan MODEL --emit vllm|llamacpp|deepspeed|accelerate:
 * a launch configuration from the plan fit finds (the knobs as given when
 * they fit; else the fewest GPUs, on as many nodes as they need; else the
 * cheapest change the engine can make to this checkpoint at launch). */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit plan MODEL --emit vllm|llamacpp|deepspeed|accelerate [--gpu G[xN]] [--nodes N]\n"
           "                    [--gpus-per-node G] [knobs] [--train] [--json]\n\n"
           "Writes a launch configuration for an existing engine from the plan 'vramfit fit' finds:\n"
           "the knobs as given when they fit; else the fewest GPUs of that kind (on several nodes\n"
           "when they need them); else the cheapest change the engine applies to this checkpoint at\n"
           "launch (one that needs another checkpoint or a script change is named, not launched).\n"
           "Without --gpu, the smallest catalog GPU that fits. Notes on what was chosen go to stderr.\n"
           "Lines starting with # are comments. Exit status 1 when nothing fits.\n\n"
           "  vllm        vllm serve MODEL --tensor-parallel-size --max-model-len ...; past one node\n"
           "              ray start --head / ray start --address first, and the Ray executor\n"
           "  llamacpp    llama-server -m FILE -ngl -c -b -ub --tensor-split -ctk -ctv -fa; past one\n"
           "              host rpc-server on the others and --rpc\n"
           "  deepspeed   training: ds_config.json, a hostfile past one node, the TrainingArguments\n"
           "              the script passes, deepspeed and torchrun commands\n"
           "  accelerate  inference: from_pretrained with device_map and max_memory; with --train an\n"
           "              accelerate config (FSDP, DeepSpeed or multi-GPU) and accelerate launch\n\n"
           "  --emit E     the engine: vllm, llamacpp, deepspeed (training) or accelerate\n"
           "  --gpu G[xN]  a catalog GPU (\"RTX 4090\", \"H100x8\") or a size (\"24GiB\")\n"
           "  --local      this machine's devices (NVML), their free memory\n"
           "  --nodes N    machines (with a catalog --gpu and no count: N x its node size devices)\n"
           "  --gpus-per-node G  devices per machine (default: the catalog GPU's node)\n"
           "  --train      training: with --emit deepspeed (which implies it) or accelerate\n"
           "  --json       {\"engine\", \"gpu\", \"gpus\", \"nodes\", \"gpu_bytes\", \"needed_bytes\", \"approximate\",\n"
           "               \"config\"}\n"
           "  --approximate  plan for a config.json of an unknown model_type (a guessed tensor list;\n"
           "               refused without it, exit 3)\n"
           "Knobs are those of 'vramfit estimate' and 'vramfit fit' (see 'vramfit fit --help').\n"
           "For llamacpp, --context is the total -c that the --parallel (-np) slots share.\n");
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "vramfit: note: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* The engine decides the accounting: DeepSpeed trains, vLLM and llama.cpp
 * serve, accelerate does either. -1 to go on, else an exit code. */
static int settle_engine(vf_cli_fit_args *a, vf_engine *engine)
{
    if (!a->emit)
        return vf_usage_error("plan", "missing --emit vllm|llamacpp|deepspeed|accelerate");
    if (vf_engine_parse(a->emit, engine) != VF_OK)
        return vf_usage_error("plan", "--emit: '%s' is not vllm, llamacpp, deepspeed or accelerate", a->emit);
    if (*engine == VF_ENGINE_DEEPSPEED)
        a->est.mode = VF_MODE_TRAINING;
    else if (a->est.mode == VF_MODE_TRAINING && *engine != VF_ENGINE_ACCELERATE)
        return vf_usage_error("plan", "--emit %s is for inference; --train goes with --emit deepspeed or accelerate",
                              a->emit);
    if (!a->runtime_set && a->est.mode == VF_MODE_INFERENCE) {
        a->est.runtime = *engine == VF_ENGINE_VLLM       ? VF_RUNTIME_VLLM
                         : *engine == VF_ENGINE_LLAMACPP ? VF_RUNTIME_LLAMACPP
                                                         : VF_RUNTIME_TRANSFORMERS;
        a->runtime_set = true;
    }
    return -1;
}

/* Without --gpu: the smallest catalog GPU one of which holds the model. */
static int smallest_gpu(const vf_cli_fit_args *a, const vf_model *m, vf_fit *f, vf_gpu_choice *c)
{
    const vf_gpu *best = NULL;
    vf_error e = {0};
    for (size_t i = 0; i < vf_gpu_count(); i++) {
        const vf_gpu *g = vf_gpu_get(i);
        if ((best && g->memory_bytes >= best->memory_bytes) || !vf_runtime_runs_on(a->est.runtime, g))
            continue;
        vf_fit_opts fo = {.est = a->est, .gpu_bytes = g->memory_bytes, .gpus = 1, .gpu = g, .no_search = true};
        if (vf_fit_run(m, &fo, f, &e) != VF_OK)
            return vf_report_error(&e);
        if (vf_fit_fits(f))
            best = g;
    }
    if (!best) {
        fprintf(stderr, "vramfit: %s: fits on no single catalog gpu; name one with --gpu G for a multi-gpu plan\n",
                a->model);
        return VF_EXIT_NOFIT;
    }
    if (vf_gpu_lookup(best->name, c, &e) != VF_OK)
        return vf_report_error(&e);
    note("no --gpu given: planning for %s, the smallest catalog GPU that fits", best->name);
    return -1;
}

typedef struct chosen {
    vf_estimate_opts o;
    uint64_t gpu_bytes;
    uint32_t gpus;
} chosen;

/* The cheapest fitting change the engine makes at launch; a cheaper one
 * that needs another checkpoint or a script change is named in a note. */
static const vf_suggestion *launchable(const vf_fit *f)
{
    const vf_suggestion *pick = NULL, *other = NULL;
    for (size_t i = 0; i < vf_fit_suggestion_count(f) && !pick; i++) {
        const vf_suggestion *s = vf_fit_suggestion(f, i);
        if (!s->fits)
            continue;
        if (s->needs)
            other = other ? other : s;
        else
            pick = s;
    }
    if (other)
        note("%s would fit%s, but needs %s", other->change, pick ? " too" : "", vf_needs_words(other->needs));
    return pick;
}

/* llama.cpp on the devices stated (GxN): its own --fit moves tensors to
 * host memory on the devices it has rather than asking for more, so the
 * plan takes a placement that fits there before more GPUs. */
static const vf_suggestion *llamacpp_placement(const vf_cli_fit_args *a, const vf_fit *f, const vf_gpu_choice *c)
{
    if (a->est.runtime != VF_RUNTIME_LLAMACPP || !c->count_given)
        return NULL;
    for (size_t i = 0; i < vf_fit_suggestion_count(f); i++) {
        const vf_suggestion *s = vf_fit_suggestion(f, i);
        if (s->fits && !s->needs && s->gpus == c->count &&
            (s->opts.n_cpu_moe != a->est.n_cpu_moe || s->opts.infer.n_gpu_layers != a->est.infer.n_gpu_layers))
            return s;
    }
    return NULL;
}

/* What to launch: as asked when it fits, else the fewest GPUs, else the
 * cheapest launchable change. -1 to go on, else an exit code. */
static int choose(const vf_cli_fit_args *a, const vf_model *m, const vf_gpu_choice *c, const vf_fit *f, uint32_t per_node,
                  chosen *ch)
{
    ch->o = a->est;
    ch->gpu_bytes = c->gpu.memory_bytes;
    ch->gpus = c->count;
    if (vf_fit_fits(f)) {
        if (ch->gpus > 1 && ch->o.mode == VF_MODE_INFERENCE && !ch->o.tp && !ch->o.pp) {
            if (vf_fit_min_gpus(f) == ch->gpus) {
                ch->o.tp = vf_fit_min_tp(f);
                ch->o.pp = vf_fit_min_pp(f);
            } else {
                vf_estimate_opts_spread(m, &ch->o, ch->gpus);
            }
        }
        if (!ch->o.gpus)
            ch->o.gpus = ch->gpus;
        if (ch->o.mode == VF_MODE_TRAINING && ch->gpus > per_node && ch->gpus % per_node) {
            ch->gpus += per_node - ch->gpus % per_node;
            ch->o.gpus = ch->gpus;
            note("training past one node takes whole nodes: planning for %u GPUs", ch->gpus);
        }
        return -1;
    }
    const vf_suggestion *place = llamacpp_placement(a, f, c);
    if (place) {
        ch->o = place->opts;
        ch->gpu_bytes = place->gpu_bytes;
        ch->gpus = place->gpus;
        note("does not fit on %u as asked; planning with llama.cpp's tensors on the host: %s", c->count, place->change);
        return -1;
    }
    if (vf_fit_min_gpus(f)) {
        if (ch->o.mode == VF_MODE_TRAINING && vf_fit_min_gpus(f) <= c->count) {
            /* sharded states only shrink with more GPUs: keep the ones given */
            ch->o.gpus = ch->gpus = c->count;
        } else {
            ch->o.gpus = ch->gpus = vf_fit_min_gpus(f);
            ch->o.tp = vf_fit_min_tp(f);
            ch->o.pp = vf_fit_min_pp(f);
        }
        ch->o.train.zero = vf_fit_min_zero(f);
        if (vf_fit_min_zero(f) >= 3)
            ch->o.train.fsdp = 0;
        /* a training job past one node takes whole nodes: its sharded states only shrink */
        if (ch->o.mode == VF_MODE_TRAINING && ch->gpus > per_node && ch->gpus % per_node) {
            ch->gpus += per_node - ch->gpus % per_node;
            ch->o.gpus = ch->gpus;
        }
        if (ch->o.mode == VF_MODE_TRAINING && ch->gpus == c->count)
            note("does not fit on %u as asked; planning with ZeRO-%d over the %u GPUs", c->count, ch->o.train.zero,
                 ch->gpus);
        else {
            uint32_t nodes = ch->gpus / per_node + (ch->gpus % per_node != 0);
            note("does not fit on %u; planning for %u x %s on %u node%s (%s%s)", c->count, ch->gpus, c->name, nodes,
                 nodes == 1 ? "" : "s", vf_fit_parallelism(f), ch->gpus != vf_fit_min_gpus(f) ? "; whole nodes" : "");
        }
        return -1;
    }
    const vf_suggestion *pick = launchable(f);
    if (!pick) {
        fprintf(stderr, "vramfit: %s: does not fit on %s x%u and no change the engine makes at launch does; see "
                        "'vramfit fit'\n",
                a->model, c->name, c->count);
        return VF_EXIT_NOFIT;
    }
    ch->o = pick->opts;
    ch->gpu_bytes = pick->gpu_bytes;
    ch->gpus = pick->gpus;
    note("does not fit as asked; planning with the cheapest change that fits: %s", pick->change);
    return -1;
}

static int emit(const vf_cli_fit_args *a, vf_engine engine, const vf_model *m, const vf_gpu_choice *c,
                chosen *ch, uint32_t per_node)
{
    vf_estimate *est = vf_estimate_new();
    char *buf = malloc(1 << 16);
    vf_error e = {0};
    int rc = VF_EXIT_OK;
    ch->o.gpu_bytes = ch->gpu_bytes;
    if (!est || !buf) {
        fprintf(stderr, "vramfit: out of memory\n");
        rc = VF_EXIT_IO;
    } else if (vf_estimate_run(m, &ch->o, est, &e) != VF_OK ||
               vf_plan_emit_nodes(engine, m, a->model, &ch->o, est, ch->gpu_bytes, ch->gpus, per_node, buf, 1 << 16,
                                  &e) != VF_OK) {
        rc = vf_report_error(&e);
    } else {
        if (a->approx_why)
            note("APPROXIMATE: %s", a->approx_why);
        if (engine == VF_ENGINE_LLAMACPP && vf_model_format(m) != VF_FORMAT_GGUF)
            note("llama.cpp loads GGUF files: convert %s first (convert_hf_to_gguf.py)", a->model);
        if (a->json) {
            json_t *j = json_object();
            json_object_set_new(j, "engine", json_string(a->emit));
            json_object_set_new(j, "gpu", json_string(c->name));
            json_object_set_new(j, "gpus", json_integer(ch->gpus));
            json_object_set_new(j, "nodes", json_integer(ch->gpus / per_node + (ch->gpus % per_node != 0)));
            json_object_set_new(j, "gpu_bytes", vf_json_u64(ch->gpu_bytes));
            json_object_set_new(j, "needed_bytes", vf_json_u64(vf_estimate_per_gpu_bytes(est)));
            json_object_set_new(j, "approximate", json_boolean(a->approx_why != NULL));
            json_object_set_new(j, "config", json_string(buf));
            rc = vf_print_json(j);
        } else {
            fputs(buf, stdout);
            rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
        }
    }
    vf_estimate_free(est);
    free(buf);
    return rc;
}

int cmd_plan(int argc, char **argv)
{
    vf_cli_fit_args a;
    vf_engine engine;
    int rc = vf_cli_fit_parse("plan", argc, argv, &a, help);
    if (rc >= 0 || (rc = settle_engine(&a, &engine)) >= 0)
        return rc;
    vf_gpu_choice c;
    memset(&c, 0, sizeof c);
    if ((a.gpu || a.local) && (rc = vf_cli_fit_gpu(&a, &c)) >= 0)
        return rc;
    vf_model *m = NULL;
    if ((rc = vf_cli_open_model_exact("plan", a.model, &m, a.approximate)) != VF_EXIT_OK)
        return rc;
    vf_cli_fit_settle(&a, m);
    vf_fit *f = vf_fit_new();
    vf_error e = {0};
    chosen ch;
    if (!f) {
        fprintf(stderr, "vramfit: out of memory\n");
        rc = VF_EXIT_IO;
    } else if (a.gpu || a.local || (rc = smallest_gpu(&a, m, f, &c)) < 0) {
        uint32_t per_node = a.gpus_per_node ? a.gpus_per_node : c.gpu.max_per_node ? c.gpu.max_per_node : 8;
        if (a.nodes && c.count == 1)
            c.count = a.nodes * per_node;
        vf_fit_opts fo = {.est = a.est, .gpu_bytes = c.gpu.memory_bytes, .gpus = c.count,
                          .gpu = c.from_catalog ? &c.gpu : NULL, .nodes = a.nodes, .gpus_per_node = per_node};
        if (vf_fit_run(m, &fo, f, &e) != VF_OK)
            rc = vf_report_error(&e);
        else if ((rc = choose(&a, m, &c, f, per_node, &ch)) < 0)
            rc = emit(&a, engine, m, &c, &ch, per_node);
    }
    vf_fit_free(f);
    vf_model_free(m);
    return rc;
}
