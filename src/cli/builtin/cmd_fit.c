/* cmd_fit.c — vramfit fit MODEL [--gpu G[xN]|--local] [knobs]: does it fit,
 * the longest context, largest batch and fewest GPUs that fit, and what to
 * change when it does not. The knobs it shares with plan, sweep, serve and oom
 * are parsed in args/fit_args.c. */
#include "cli.h"
#include "args/estimate_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void help(void)
{
    printf("usage: vramfit fit MODEL [--gpu G[xN] | --local] [knobs] [--train] [--json] [--units gib|gb]\n\n"
           "Does MODEL fit, with the headroom per GPU; the longest context and the largest batch\n"
           "that fit (found by search on the memory model); the fewest GPUs of that kind and the\n"
           "parallelism that makes it fit; and when it does not fit, the changes that would, each\n"
           "re-checked by the model and ranked from least to most cost; and upper bounds on speed.\n"
           "Without --gpu: every catalog GPU with the fewest devices of it that fit (and the nodes),\n"
           "least total memory first. Exit status 0 fits, 1 does not. A device needs what it holds\n"
           "at the peak plus the margin the runtime keeps free (llama.cpp's 1 GiB -fit target, what\n"
           "vLLM's --gpu-util leaves, a PyTorch allocator segment for the largest request; --margin).\n\n"
           "  --gpu G                a catalog GPU (\"RTX 4090\", \"h100\", \"H100x8\") or a size (\"24GiB\", \"80GB\")\n"
           "  --local                this machine's devices (NVML), their free memory\n"
           "  --train                training instead of inference\n"
           "  --json                 one JSON object on stdout\n"
           "  --units U              gib (default) or gb\n"
           "  --nodes N              machines the devices span; with a catalog --gpu and no count,\n"
           "                         N x its node size devices\n"
           "  --gpus-per-node G      devices per machine (default: the catalog GPU's node, 8 for\n"
           "                         data-centre parts); tensor parallel stays inside a node,\n"
           "                         pipeline stages go across nodes\n"
           "  --approximate          answer for a config.json of an unknown model_type (its tensors\n"
           "                         guessed as a llama-like decoder); refused without it (exit 3)\n"
           "knobs (as for 'vramfit estimate'):\n");
    vf_cli_infer_opts_help(stdout);
    vf_cli_train_opts_help(stdout);
}

/* ---- output ---- */


static json_t *suggestions_json(const vf_fit *f)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < vf_fit_suggestion_count(f); i++) {
        const vf_suggestion *s = vf_fit_suggestion(f, i);
        json_t *j = json_object();
        json_object_set_new(j, "change", json_string(s->change));
        json_object_set_new(j, "needed_bytes", vf_json_u64(s->needed_bytes));
        json_object_set_new(j, "fits", json_boolean(s->fits));
        json_object_set_new(j, "gpu_bytes", vf_json_u64(s->gpu_bytes));
        json_object_set_new(j, "gpus", json_integer(s->gpus));
        json_object_set_new(j, "cost", json_integer(s->cost));
        json_object_set_new(j, "detail", json_string(s->detail));
        json_object_set_new(j, "launch_only", json_boolean(s->needs == 0));
        json_object_set_new(j, "needs", json_string(vf_needs_words(s->needs)));
        json_array_append_new(arr, j);
    }
    return arr;
}

/* needed = what the device holds + the margin the runtime keeps free; the
 * margin's reason is its assumption line ("margin = ..."). */
static void print_margin(const vf_estimate *e, uint64_t needed, vf_units u)
{
    if (!vf_estimate_margin_bytes(e) || needed < vf_estimate_margin_bytes(e))
        return;
    const char *why = "";
    for (size_t i = 0; i < vf_estimate_assumption_count(e); i++)
        if (strncmp(vf_estimate_assumption(e, i), "margin = ", 9) == 0) {
            why = strstr(vf_estimate_assumption(e, i), "fit");
            why = why && strchr(why, ':') ? strchr(why, ':') + 2 : "";
        }
    char b1[32], b2[32];
    printf("        = %s the device holds + %s margin kept free%s%s\n", vf_fmt_bytes(needed - vf_estimate_margin_bytes(e), u, b1, sizeof b1),
           vf_fmt_bytes(vf_estimate_margin_bytes(e), u, b2, sizeof b2), *why ? ": " : "", why);
}

/* A device whose memory the CPU shares: the engine's rule for what it may
 * take and the OS/CPU share assumed (data/gpus.json "unified"). */
static const char *unified_rule(const vf_gpu *g, vf_runtime r)
{
    const char *rule = r == VF_RUNTIME_VLLM ? g->unified_vllm : r == VF_RUNTIME_LLAMACPP ? g->unified_llamacpp : "";
    return rule ? rule : "";
}

static void print_unified(const vf_gpu *g, vf_runtime r)
{
    if (!g->unified_assumed || !g->unified_assumed[0])
        return;
    if (unified_rule(g, r)[0])
        printf("        memory shared with the CPU: %s\n", unified_rule(g, r));
    printf("        assumed: %s\n", g->unified_assumed);
}

static void print_fit(const vf_cli_fit_args *a, const vf_gpu_choice *c, const vf_fit *f, const char *model)
{
    char b1[32], b2[32], b3[32];
    vf_units u = a->units;
    printf("Model:  %s (%s, runtime %s)\n", model, vf_cli_mode_name(&a->est),
           vf_cli_runtime_label(a->est.runtime, a->graph));
    if (a->approx_why)
        printf("APPROXIMATE: %s\n", a->approx_why);
    printf("GPU:    %s x%u, %s each", c->name, a->nodes && c->count == 1 ? a->nodes * vf_fit_gpus_per_node(f) : c->count,
           vf_fmt_bytes(vf_fit_gpu_bytes(f), u, b1, sizeof b1));
    if (vf_fit_nodes(f) > 1)
        printf(", %u nodes of %u", vf_fit_nodes(f), vf_fit_gpus_per_node(f));
    printf("\n");
    if (c->note[0])
        printf("        note: %s\n", c->note);
    print_unified(&c->gpu, a->est.runtime);
    int64_t h = vf_fit_headroom_bytes(f);
    printf("Fits:   %s: needs %s per GPU of %s; %s %s\n", vf_fit_fits(f) ? "yes" : "no",
           vf_fmt_bytes(vf_fit_needed_bytes(f), u, b1, sizeof b1), vf_fmt_bytes(vf_fit_gpu_bytes(f), u, b2, sizeof b2),
           h >= 0 ? "headroom" : "short by", vf_fmt_bytes((uint64_t)(h >= 0 ? h : -h), u, b3, sizeof b3));
    print_margin(vf_fit_estimate(f), vf_fit_needed_bytes(f), u);
    if (vf_estimate_starts(vf_fit_estimate(f)) && (double)vf_estimate_per_gpu_bytes(vf_fit_estimate(f)) > 1.01 * (double)vf_fit_needed_bytes(f))
        printf("        (the smallest device it fits on; the engine takes %s here, sizing its cache from the device)\n",
               vf_fmt_bytes(vf_estimate_per_gpu_bytes(vf_fit_estimate(f)), u, b1, sizeof b1));
    if (vf_estimate_pp_stages(vf_fit_estimate(f)) > 1)
        printf("        busiest rank: pipeline stage %u of %u (layers %u-%u%s); every rank the same KV blocks\n",
               vf_estimate_busiest_stage(vf_fit_estimate(f)) + 1, vf_estimate_pp_stages(vf_fit_estimate(f)), vf_estimate_stage_first_layer(vf_fit_estimate(f)), vf_estimate_stage_end_layer(vf_fit_estimate(f)) - 1,
               vf_estimate_busiest_stage(vf_fit_estimate(f)) == 0 ? ", the embeddings" : vf_estimate_busiest_stage(vf_fit_estimate(f)) + 1 == vf_estimate_pp_stages(vf_fit_estimate(f)) ? ", the norm and head" : "");
    if (!vf_estimate_starts(vf_fit_estimate(f)) && vf_estimate_reason(vf_fit_estimate(f))[0])
        printf("        the engine would not start: %s\n", vf_estimate_reason(vf_fit_estimate(f)));
    if (vf_estimate_max_concurrency(vf_fit_estimate(f)) > 0)
        printf("        KV cache pool: %s tokens, %.2f sequences of %llu tokens at once\n",
               vf_fmt_count(vf_estimate_kv_cache_tokens(vf_fit_estimate(f)), b1, sizeof b1), vf_estimate_max_concurrency(vf_fit_estimate(f)),
               (unsigned long long)vf_estimate_context(vf_fit_estimate(f)));
    char n1[32];
    if (vf_fit_max_context(f))
        printf("Longest context that fits: %s tokens%s\n", vf_fmt_count(vf_fit_max_context(f), n1, sizeof n1),
               vf_fit_max_context_capped(f) ? " (the model's limit)" : "");
    else if (!a->graph)
        printf("Longest context that fits: none\n");
    if (vf_fit_max_batch(f) && vf_estimate_max_concurrency(vf_fit_estimate(f)) > 0)
        printf("Largest batch that fits:   %s%s (sequences it starts with; its KV pool runs %.2f of full length at once)\n",
               vf_fmt_count(vf_fit_max_batch(f), n1, sizeof n1), vf_fit_max_batch_capped(f) ? "+" : "", vf_estimate_max_concurrency(vf_fit_estimate(f)));
    else if (vf_fit_max_batch(f))
        printf("Largest batch that fits:   %s%s\n", vf_fmt_count(vf_fit_max_batch(f), n1, sizeof n1),
               vf_fit_max_batch_capped(f) ? " (search limit)" : "");
    else
        printf("Largest batch that fits:   none\n");
    if (vf_fit_min_gpus(f))
        printf("Fewest GPUs:               %u on %u node%s of %u (%s)\n", vf_fit_min_gpus(f), vf_fit_min_nodes(f),
               vf_fit_min_nodes(f) == 1 ? "" : "s", vf_fit_gpus_per_node(f), vf_fit_parallelism(f));
    else if (a->est.mode == VF_MODE_TRAINING && !a->est.tp && !a->est.pp)
        /* the training search is data parallel (then ZeRO-3): it shards states, never activations */
        printf("Fewest GPUs:               none up to the search limit (data parallel, then ZeRO-3: "
               "states shard, activations do not; --tp N prices tensor parallel)\n");
    else
        printf("Fewest GPUs:               none up to the search limit\n");
    vf_cli_print_speed(vf_fit_speed(f), &a->est, vf_estimate_context(vf_fit_estimate(f)), c->gpu.bandwidth_gbs);
    if (vf_fit_suggestion_count(f)) {
        printf("What would make it fit (least cost first; each re-checked by the model%s):\n",
               vf_estimate_margin_bytes(vf_fit_estimate(f)) ? "; needs include the margin" : "");
        for (size_t i = 0; i < vf_fit_suggestion_count(f); i++) {
            const vf_suggestion *s = vf_fit_suggestion(f, i);
            printf("  %-4s %-44s needs %10s of %s  %s%s%s\n", s->fits ? "fits" : "no", s->change,
                   vf_fmt_bytes(s->needed_bytes, u, b1, sizeof b1), vf_fmt_bytes(s->gpu_bytes, u, b2, sizeof b2),
                   s->detail, s->needs ? "; takes " : "", vf_needs_words(s->needs));
        }
    }
}

static int fit_one(const vf_cli_fit_args *a, vf_model *m, const vf_gpu_choice *c)
{
    vf_fit *f = vf_fit_new();
    if (!f) {
        fprintf(stderr, "vramfit: out of memory\n");
        return VF_EXIT_IO;
    }
    vf_fit_opts fo = {.est = a->est, .gpu_bytes = c->gpu.memory_bytes, .gpus = a->nodes && c->count == 1 ? 0 : c->count,
                      .gpu = c->gpu.bandwidth_gbs > 0 || c->from_catalog ? &c->gpu : NULL, .nodes = a->nodes,
                      .gpus_per_node = a->gpus_per_node};
    vf_error e = {0};
    int rc;
    if (vf_fit_run(m, &fo, f, &e) != VF_OK) {
        rc = vf_report_error(&e);
        vf_fit_free(f);
        return rc;
    }
    const char *model = vf_model_hparams(m)->name[0] ? vf_model_hparams(m)->name : a->model;
    if (a->json) {
        json_t *j = json_object();
        json_object_set_new(j, "fits", json_boolean(vf_fit_fits(f)));
        json_object_set_new(j, "approximate", json_boolean(a->approx_why != NULL));
        json_object_set_new(j, "gpu", json_string(c->name));
        json_object_set_new(j, "gpu_count", json_integer(a->nodes && c->count == 1 ? a->nodes * vf_fit_gpus_per_node(f) : c->count));
        json_object_set_new(j, "gpu_bytes", vf_json_u64(vf_fit_gpu_bytes(f)));
        json_object_set_new(j, "needed_bytes", vf_json_u64(vf_fit_needed_bytes(f)));
        json_object_set_new(j, "headroom_bytes", json_integer((json_int_t)vf_fit_headroom_bytes(f)));
        json_object_set_new(j, "margin_bytes", vf_json_u64(vf_estimate_margin_bytes(vf_fit_estimate(f))));
        json_object_set_new(j, "kv_cache_bytes", vf_json_u64(vf_estimate_kv_cache(vf_fit_estimate(f))));
        if (vf_estimate_max_concurrency(vf_fit_estimate(f)) > 0)
            json_object_set_new(j, "max_concurrency", json_real(vf_estimate_max_concurrency(vf_fit_estimate(f))));
        json_object_set_new(j, "max_context", vf_json_u64(vf_fit_max_context(f)));
        json_object_set_new(j, "max_context_is_model_limit", json_boolean(vf_fit_max_context_capped(f)));
        json_object_set_new(j, "max_batch", vf_json_u64(vf_fit_max_batch(f)));
        json_object_set_new(j, "min_gpus", json_integer(vf_fit_min_gpus(f)));
        json_object_set_new(j, "min_nodes", json_integer(vf_fit_min_nodes(f)));
        json_object_set_new(j, "min_tp", json_integer(vf_fit_min_tp(f)));
        json_object_set_new(j, "min_pp", json_integer(vf_fit_min_pp(f)));
        json_object_set_new(j, "nodes", json_integer(vf_fit_nodes(f)));
        json_object_set_new(j, "gpus_per_node", json_integer(vf_fit_gpus_per_node(f)));
        if (vf_estimate_pp_stages(vf_fit_estimate(f)) > 1) {
            json_t *b = json_object();
            json_object_set_new(b, "stage", json_integer(vf_estimate_busiest_stage(vf_fit_estimate(f))));
            json_object_set_new(b, "first_layer", json_integer(vf_estimate_stage_first_layer(vf_fit_estimate(f))));
            json_object_set_new(b, "end_layer", json_integer(vf_estimate_stage_end_layer(vf_fit_estimate(f))));
            json_object_set_new(j, "busiest_rank", b);
        }
        json_object_set_new(j, "parallelism", json_string(vf_fit_parallelism(f)));
        json_object_set_new(j, "mode", json_string(vf_cli_mode_name(&a->est)));
        json_object_set_new(j, "note", json_string(c->note));
        if (c->gpu.unified_assumed && c->gpu.unified_assumed[0]) {
            json_t *um = json_object();
            json_object_set_new(um, "rule", json_string(unified_rule(&c->gpu, a->est.runtime)));
            json_object_set_new(um, "assumed", json_string(c->gpu.unified_assumed));
            json_object_set_new(j, "unified_memory", um);
        }
        json_object_set_new(j, "speed_bounds", vf_cli_speed_json(vf_fit_speed(f)));
        json_object_set_new(j, "suggestions", suggestions_json(f));
        rc = vf_print_json(j);
    } else {
        print_fit(a, c, f, model);
        rc = fflush(stdout) ? VF_EXIT_IO : VF_EXIT_OK;
    }
    if (rc == VF_EXIT_OK && !vf_fit_fits(f))
        rc = VF_EXIT_NOFIT;
    vf_fit_free(f);
    return rc;
}

int cmd_fit(int argc, char **argv)
{
    vf_cli_fit_args a;
    int rc = vf_cli_fit_parse("fit", argc, argv, &a, help);
    if (rc >= 0)
        return rc;
    vf_gpu_choice c;
    if ((a.gpu || a.local) && (rc = vf_cli_fit_gpu(&a, &c)) >= 0)
        return rc;
    vf_model *m = NULL;
    if ((rc = vf_cli_open_model_exact("fit", a.model, &m, a.approximate)) != VF_EXIT_OK)
        return rc;
    vf_cli_fit_settle(&a, m);
    rc = a.gpu || a.local ? fit_one(&a, m, &c) : vf_cli_fit_catalog(&a, m);
    vf_model_free(m);
    return rc;
}
