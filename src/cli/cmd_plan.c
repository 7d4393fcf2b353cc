/* cmd_plan.c — vramfit plan MODEL --emit vllm|llamacpp|deepspeed|accelerate:
 * a launch configuration from the plan fit finds (the knobs as given when
 * they fit; else the fewest GPUs; else the cheapest change that fits). */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit plan MODEL --emit vllm|llamacpp|deepspeed|accelerate [--gpu G[xN]] [knobs] [--json]\n\n"
           "Writes a launch configuration for an existing engine from the plan 'vramfit fit' finds:\n"
           "the knobs as given when they fit; else the fewest GPUs of that kind; else the cheapest\n"
           "change that fits. Without --gpu, the smallest catalog GPU that fits. Notes on what was\n"
           "chosen go to stderr. Exit status 1 when nothing fits.\n\n"
           "  vllm        vllm serve MODEL --tensor-parallel-size --max-model-len ...\n"
           "  llamacpp    llama-server -m FILE -ngl -c -b -ub --tensor-split -ctk -ctv -fa\n"
           "  deepspeed   a DeepSpeed config JSON (ZeRO stage, offload, precision, batch sizes)\n"
           "  accelerate  transformers from_pretrained with device_map and max_memory\n\n"
           "  --emit E     the engine: vllm, llamacpp, deepspeed (training) or accelerate\n"
           "  --gpu G[xN]  a catalog GPU (\"RTX 4090\", \"H100x8\") or a size (\"24GiB\")\n"
           "  --local      this machine's devices (NVML), their free memory\n"
           "  --train      training; only with --emit deepspeed, which implies it\n"
           "  --json       {\"engine\", \"gpu\", \"gpus\", \"gpu_bytes\", \"needed_bytes\", \"approximate\", \"config\"}\n"
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

int cmd_plan(int argc, char **argv)
{
    vf_cli_fit_args a;
    int rc = vf_cli_fit_parse("plan", argc, argv, &a, help);
    if (rc >= 0)
        return rc;
    vf_engine engine;
    if (!a.emit)
        return vf_usage_error("plan", "missing --emit vllm|llamacpp|deepspeed|accelerate");
    if (vf_engine_parse(a.emit, &engine) != VF_OK)
        return vf_usage_error("plan", "--emit: '%s' is not vllm, llamacpp, deepspeed or accelerate", a.emit);
    /* the engine decides the accounting */
    if (engine == VF_ENGINE_DEEPSPEED)
        a.est.mode = VF_MODE_TRAINING;
    else if (a.est.mode == VF_MODE_TRAINING)
        return vf_usage_error("plan", "--emit %s is for inference; --train goes with --emit deepspeed", a.emit);
    if (!a.runtime_set && engine != VF_ENGINE_DEEPSPEED) {
        a.est.runtime = engine == VF_ENGINE_VLLM       ? VF_RUNTIME_VLLM
                        : engine == VF_ENGINE_LLAMACPP ? VF_RUNTIME_LLAMACPP
                                                       : VF_RUNTIME_TRANSFORMERS;
        a.runtime_set = true;
    }
    vf_gpu_choice c;
    memset(&c, 0, sizeof c);
    if ((a.gpu || a.local) && (rc = vf_cli_fit_gpu(&a, &c)) >= 0)
        return rc;
    vf_model *m = NULL;
    if ((rc = vf_cli_open_model_exact("plan", a.model, &m, a.approximate)) != VF_EXIT_OK)
        return rc;
    vf_cli_fit_settle(&a, m);
    vf_fit *f = calloc(1, sizeof *f);
    char *buf = malloc(1 << 16);
    vf_error e = {0};
    if (!f || !buf) {
        fprintf(stderr, "vramfit: out of memory\n");
        rc = VF_EXIT_IO;
        goto out;
    }
    if (!a.gpu && !a.local) {
        /* the smallest catalog GPU that fits one of it */
        const vf_gpu *best = NULL;
        for (size_t i = 0; i < vf_gpu_count(); i++) {
            const vf_gpu *g = vf_gpu_get(i);
            if ((best && g->memory_bytes >= best->memory_bytes) || !vf_runtime_runs_on(a.est.runtime, g))
                continue;
            vf_fit_opts fo = {.est = a.est, .gpu_bytes = g->memory_bytes, .gpus = 1, .gpu = g, .no_search = true};
            if (vf_fit_run(m, &fo, f, &e) != VF_OK) {
                rc = vf_report_error(&e);
                goto out;
            }
            if (f->fits)
                best = g;
        }
        if (!best) {
            fprintf(stderr, "vramfit: %s: fits on no single catalog gpu; name one with --gpu G for a multi-gpu plan\n",
                    a.model);
            rc = VF_EXIT_NOFIT;
            goto out;
        }
        if (vf_gpu_lookup(best->name, &c, &e) != VF_OK) {
            rc = vf_report_error(&e);
            goto out;
        }
        note("no --gpu given: planning for %s, the smallest catalog GPU that fits", best->name);
    }
    if (a.nodes && c.count == 1)
        c.count = a.nodes * (a.gpus_per_node ? a.gpus_per_node : c.gpu.max_per_node ? c.gpu.max_per_node : 8);
    vf_fit_opts fo = {.est = a.est, .gpu_bytes = c.gpu.memory_bytes, .gpus = c.count,
                      .gpu = c.from_catalog ? &c.gpu : NULL, .nodes = a.nodes, .gpus_per_node = a.gpus_per_node};
    if (vf_fit_run(m, &fo, f, &e) != VF_OK) {
        rc = vf_report_error(&e);
        goto out;
    }
    vf_estimate_opts o = a.est;
    uint64_t gpu_bytes = c.gpu.memory_bytes;
    uint32_t gpus = c.count;
    vf_estimate *est = calloc(1, sizeof *est);
    if (!est) {
        rc = VF_EXIT_IO;
        goto out;
    }
    if (f->fits) {
        o = a.est;
        if (gpus > 1 && o.mode == VF_MODE_INFERENCE && !o.tp && !o.pp && engine == VF_ENGINE_VLLM) {
            o.tp = f->min_tp && f->min_gpus == gpus ? f->min_tp : gpus;
        }
        if (!o.gpus)
            o.gpus = gpus;
    } else if (f->min_gpus) {
        /* the model as asked, on the fewest GPUs of this kind */
        o = a.est;
        vf_suggestion *more = NULL;
        for (size_t i = 0; i < f->n_suggestions && !more; i++)
            if (f->suggestions[i].fits && f->suggestions[i].gpus == f->min_gpus &&
                f->suggestions[i].gpu_bytes == gpu_bytes)
                more = &f->suggestions[i];
        if (more) {
            o = more->opts;
            gpus = f->min_gpus;
        } else if (o.mode == VF_MODE_TRAINING && f->min_gpus <= c.count) {
            /* sharded states only shrink with more GPUs: keep the ones given */
            o.gpus = gpus = c.count;
            o.train.zero = f->min_zero;
            if (f->min_zero >= 3)
                o.train.fsdp = 0;
        } else {
            o.gpus = gpus = f->min_gpus;
            o.tp = f->min_tp;
            o.pp = f->min_pp;
            o.train.zero = f->min_zero;
        }
        if (o.mode == VF_MODE_TRAINING && gpus == c.count)
            note("does not fit on %u as asked; planning with ZeRO-%d over the %u GPUs", c.count, o.train.zero, gpus);
        else
            note("does not fit on %u; planning for %u x %s (%s)", c.count, gpus, c.name, f->parallelism);
    } else {
        const vf_suggestion *pick = NULL;
        for (size_t i = 0; i < f->n_suggestions && !pick; i++)
            if (f->suggestions[i].fits)
                pick = &f->suggestions[i];
        if (!pick) {
            fprintf(stderr, "vramfit: %s: does not fit on %s x%u and no single change makes it fit; see 'vramfit fit'\n",
                    a.model, c.name, c.count);
            rc = VF_EXIT_NOFIT;
            free(est);
            goto out;
        }
        o = pick->opts;
        gpu_bytes = pick->gpu_bytes;
        gpus = pick->gpus;
        note("does not fit as asked; planning with the cheapest change that fits: %s", pick->change);
    }
    o.gpu_bytes = gpu_bytes;
    if (vf_estimate_run(m, &o, est, &e) != VF_OK) {
        rc = vf_report_error(&e);
        free(est);
        goto out;
    }
    const char *ref = a.model;
    if (vf_plan_emit(engine, m, ref, &o, est, gpu_bytes, gpus, buf, 1 << 16, &e) != VF_OK) {
        rc = vf_report_error(&e);
        free(est);
        goto out;
    }
    if (a.approx_why)
        note("APPROXIMATE: %s", a.approx_why);
    if (engine == VF_ENGINE_LLAMACPP && vf_model_format(m) != VF_FORMAT_GGUF)
        note("llama.cpp loads GGUF files: convert %s first (convert_hf_to_gguf.py)", a.model);
    if (a.json) {
        json_t *j = json_object();
        json_object_set_new(j, "engine", json_string(a.emit));
        json_object_set_new(j, "gpu", json_string(c.name));
        json_object_set_new(j, "gpus", json_integer(gpus));
        json_object_set_new(j, "gpu_bytes", vf_json_u64(gpu_bytes));
        json_object_set_new(j, "needed_bytes", vf_json_u64(est->per_gpu_bytes));
        json_object_set_new(j, "approximate", json_boolean(a.approx_why != NULL));
        json_object_set_new(j, "config", json_string(buf));
        rc = vf_print_json(j);
    } else {
        fputs(buf, stdout);
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    }
    free(est);
out:
    free(f);
    free(buf);
    vf_model_free(m);
    return rc;
}
