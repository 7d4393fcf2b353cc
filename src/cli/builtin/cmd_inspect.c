/* cmd_inspect.c — vramfit inspect MODEL: exact parameters and bytes. */
#include "cli.h"

#include <getopt.h>
#include <string.h>

static void help(void)
{
    printf("usage: vramfit inspect [--tensors] [--json] [--units gib|gb] MODEL\n\n"
           "Reads the model's headers (never its data) and prints its architecture, the exact\n"
           "parameter count and bytes, per-dtype parameters and bytes, and the key hyper-parameters.\n"
           "For a file, parameters are the sum of its tensors' element counts; stored buffers that\n"
           "are not parameters (GPT-2's causal masks, rotary inv_freq) are counted apart; stored\n"
           "elements count every stored element as the Hugging Face Hub does (FP8 scales, packed\n"
           "words, MXFP4 blocks at two values a byte). A config.json of an unknown model_type is\n"
           "counted approximately and marked so (\"approximate\": true).\n\n"
           "  --tensors      list every tensor (name, dtype, shape, bytes, file offset)\n"
           "  --json         one JSON object on stdout\n"
           "  --units U      gib (default, 2^30 bytes) or gb (10^9 bytes)\n");
}

static json_t *shape_json(const vf_tensor *t)
{
    json_t *a = json_array();
    for (uint32_t d = 0; d < t->n_dims; d++)
        json_array_append_new(a, vf_json_u64(t->shape[d]));
    return a;
}

static const char *dtype_label(vf_dtype dt)
{
    const vf_dtype_info *d = vf_dtype_get(dt);
    return d ? d->name : "unknown";
}

/* Row i of the per-dtype table: the dtypes this build knows, then the unknown
 * ones (i == VF_DTYPE_COUNT); false for a dtype no tensor is stored in. */
static bool dtype_row(const vf_model *m, int i, vf_dtype *dt, uint64_t *params, uint64_t *bytes)
{
    *dt = i < VF_DTYPE_COUNT ? (vf_dtype)i : VF_DTYPE_UNKNOWN;
    vf_model_dtype_totals(m, *dt, params, bytes);
    return *bytes || *params;
}

/* Parameters of the vision tower and projector (VF_TENSOR_VISION). */
static uint64_t vision_params(const vf_model *m)
{
    uint64_t n = 0;
    for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
        const vf_tensor *x = vf_model_tensor(m, i);
        if ((x->flags & VF_TENSOR_VISION) && !(x->flags & VF_TENSOR_NOT_PARAM))
            n += x->n_params;
    }
    return n;
}

static int print_json(const vf_model *m, const vf_model_totals *t, bool tensors)
{
    const vf_hparams *hp = vf_model_hparams(m);
    json_t *o = json_object();
    json_object_set_new(o, "model", json_string(hp->name[0] ? hp->name : vf_model_source(m)));
    json_object_set_new(o, "format", json_string(vf_format_name(vf_model_format(m))));
    json_object_set_new(o, "architecture", json_string(hp->architecture));
    json_object_set_new(o, "params", vf_json_u64(t->params));
    json_object_set_new(o, "stored_elements", vf_json_u64(vf_model_stored_elements(m)));
    json_object_set_new(o, "approximate", json_boolean(vf_model_approximate(m) != NULL));
    json_object_set_new(o, "vision_params", vf_json_u64(vision_params(m)));
    json_object_set_new(o, "bytes", vf_json_u64(t->bytes));
    json_t *dts = json_object();
    vf_dtype dt;
    uint64_t params, bytes;
    for (int i = 0; i <= VF_DTYPE_COUNT; i++) {
        if (!dtype_row(m, i, &dt, &params, &bytes))
            continue;
        json_t *d = json_object();
        json_object_set_new(d, "params", vf_json_u64(params));
        json_object_set_new(d, "bytes", vf_json_u64(bytes));
        json_object_set_new(dts, dtype_label(dt), d);
    }
    json_object_set_new(o, "dtypes", dts);
    json_object_set_new(o, "layers", json_integer(hp->n_layers));
    json_object_set_new(o, "hidden_size", vf_json_u64(hp->hidden_size));
    json_object_set_new(o, "heads", json_integer(hp->n_heads));
    json_object_set_new(o, "kv_heads", json_integer(hp->n_kv_heads));
    json_object_set_new(o, "head_dim", json_integer(hp->head_dim));
    json_object_set_new(o, "vocab_size", vf_json_u64(hp->vocab_size));
    json_object_set_new(o, "context_length", vf_json_u64(hp->context_length));
    json_object_set_new(o, "quantization", hp->quant_method[0] ? json_string(hp->quant_method) : json_null());
    if (vf_model_priced_as(m)) /* a GGUF repository's name offline: only then */
        json_object_set_new(o, "priced_as", json_string(vf_model_priced_as(m)));
    json_object_set_new(o, "experts", json_integer(hp->n_experts));
    json_object_set_new(o, "experts_active", json_integer(hp->n_experts_active));
    json_object_set_new(o, "active_params", vf_json_u64(t->active_params));
    json_object_set_new(o, "mtp_params", vf_json_u64(t->mtp_params));
    json_object_set_new(o, "buffer_elements", vf_json_u64(t->buffer_elements));
    json_object_set_new(o, "tensor_count", vf_json_u64(vf_model_tensor_count(m)));
    json_t *files = json_array();
    for (size_t i = 0; i < vf_model_file_count(m); i++) {
        const vf_file_info *f = vf_model_file(m, i);
        json_t *fo = json_object();
        json_object_set_new(fo, "path", json_string(f->path));
        json_object_set_new(fo, "size", vf_json_u64(f->size));
        json_object_set_new(fo, "data_offset", vf_json_u64(f->data_offset));
        json_array_append_new(files, fo);
    }
    json_object_set_new(o, "files", files);
    json_t *w = json_array();
    for (size_t i = 0; i < vf_model_warning_count(m); i++)
        json_array_append_new(w, json_string(vf_model_warning(m, i)));
    json_object_set_new(o, "warnings", w);
    json_t *g = vf_graph_json(m);
    if (g)
        json_object_set_new(o, "graph", g);
    if (tensors) {
        json_t *a = json_array();
        for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
            const vf_tensor *x = vf_model_tensor(m, i);
            json_t *to = json_object();
            json_object_set_new(to, "name", json_string(x->name));
            json_object_set_new(to, "dtype", json_string(dtype_label(x->dtype)));
            json_object_set_new(to, "shape", shape_json(x));
            json_object_set_new(to, "elements", vf_json_u64(x->n_elements));
            json_object_set_new(to, "bytes", vf_json_u64(x->n_bytes));
            json_object_set_new(to, "role", json_string(vf_role_name(x->role)));
            if (x->file != VF_NO_FILE) {
                json_object_set_new(to, "file", json_integer(x->file));
                json_object_set_new(to, "offset", vf_json_u64(x->offset));
            }
            json_array_append_new(a, to);
        }
        json_object_set_new(o, "tensors", a);
    }
    return vf_print_json(o);
}

static void print_human(const vf_model *m, const vf_model_totals *t, bool tensors, vf_units u)
{
    const vf_hparams *hp = vf_model_hparams(m);
    char a[64], b[64], c[64];
    printf("model          %s\n", hp->name[0] ? hp->name : vf_model_source(m));
    printf("format         %s", vf_format_name(vf_model_format(m)));
    if (vf_model_file_count(m) > 1)
        printf(" (%zu files)", vf_model_file_count(m));
    printf("\narchitecture   %s\n", hp->architecture[0] ? hp->architecture : "(unknown)");
    if (hp->quant_method[0])
        printf("quantization   %s\n", hp->quant_method);
    if (vf_model_priced_as(m))
        printf("priced as      %s (llama-quantize's per-tensor rules: estimate and fit; the counts below are the "
               "base model's)\n", vf_model_priced_as(m));
    printf("parameters     %s (%s)\n", vf_fmt_count(t->params, a, sizeof a), vf_fmt_short(t->params, b, sizeof b));
    if (t->active_params != t->params)
        printf("active/token   %s (%s)\n", vf_fmt_count(t->active_params, a, sizeof a),
               vf_fmt_short(t->active_params, b, sizeof b));
    if (t->mtp_params)
        printf("  of which MTP %s (multi-token-prediction layers)\n", vf_fmt_count(t->mtp_params, a, sizeof a));
    if (vision_params(m))
        printf("  of which vision %s (the vision tower and its projector)\n", vf_fmt_count(vision_params(m), a, sizeof a));
    uint64_t stored = vf_model_stored_elements(m);
    if (stored != t->params)
        printf("stored         %s elements as the checkpoint stores them (scales, packed words, buffers)\n",
               vf_fmt_count(stored, a, sizeof a));
    if (vf_model_approximate(m))
        printf("APPROXIMATE    %s\n", vf_model_approximate(m));
    if (t->buffer_elements)
        printf("buffers        %s elements stored that are not parameters\n",
               vf_fmt_count(t->buffer_elements, a, sizeof a));
    printf("bytes          %s (%s bytes)\n", vf_fmt_bytes(t->bytes, u, b, sizeof b), vf_fmt_count(t->bytes, a, sizeof a));
    printf("tensors        %zu\n", vf_model_tensor_count(m));
    if (hp->n_layers) {
        printf("layers %u  hidden %llu  heads %u  kv heads %u  head dim %u  vocab %llu", hp->n_layers,
               (unsigned long long)hp->hidden_size, hp->n_heads, hp->n_kv_heads, hp->head_dim,
               (unsigned long long)hp->vocab_size);
        if (hp->context_length)
            printf("  context %llu", (unsigned long long)hp->context_length);
        printf("\n");
    }
    if (hp->n_experts)
        printf("experts %u, %u active per token\n", hp->n_experts, hp->n_experts_active);
    printf("\n%-12s %20s %14s\n", "dtype", "parameters", "bytes");
    vf_dtype dt;
    uint64_t params, bytes;
    for (int i = 0; i <= VF_DTYPE_COUNT; i++) {
        if (!dtype_row(m, i, &dt, &params, &bytes))
            continue;
        printf("%-12s %20s %14s\n", dtype_label(dt), vf_fmt_count(params, a, sizeof a), vf_fmt_bytes(bytes, u, c, sizeof c));
    }
    if (tensors) {
        printf("\n%-60s %-8s %-24s %14s\n", "tensor", "dtype", "shape", "bytes");
        for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
            const vf_tensor *x = vf_model_tensor(m, i);
            char shape[96];
            size_t o = 0;
            shape[o++] = '[';
            shape[o] = '\0';
            for (uint32_t d = 0; d < x->n_dims && o < sizeof shape - 24; d++)
                o += (size_t)snprintf(shape + o, sizeof shape - o, d ? ", %llu" : "%llu",
                                      (unsigned long long)x->shape[d]);
            snprintf(shape + o, sizeof shape - o, "]");
            printf("%-60s %-8s %-24s %14s\n", x->name, dtype_label(x->dtype), shape,
                   vf_fmt_count(x->n_bytes, a, sizeof a));
        }
    }
    vf_graph_print(m, u);
}

int cmd_inspect(int argc, char **argv)
{
    static const struct option opts[] = {{"tensors", no_argument, 0, 't'},
                                         {"json", no_argument, 0, 'j'},
                                         {"units", required_argument, 0, 'u'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    bool json = false, tensors = false;
    vf_units units = VF_UNITS_GIB;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":tjh", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            tensors = true;
            break;
        case 'j':
            json = true;
            break;
        case 'u':
            if (!vf_parse_units(optarg, &units))
                return vf_usage_error("inspect", "--units takes gib or gb, not '%s'", optarg);
            break;
        case 'h':
            help();
            return VF_EXIT_OK;
        case ':':
            return vf_usage_error("inspect", "option '%s' needs a value", argv[optind - 1]);
        default:
            return vf_usage_error("inspect", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return vf_usage_error("inspect", "missing MODEL");
    if (optind + 1 < argc)
        return vf_usage_error("inspect", "unexpected argument '%s'", argv[optind + 1]);
    vf_model *m = NULL;
    int rc = vf_cli_open_model(argv[optind], &m);
    if (rc)
        return rc;
    vf_model_totals t;
    vf_model_totals_get(m, &t);
    if (json)
        rc = print_json(m, &t, tensors);
    else
        print_human(m, &t, tensors, units);
    vf_model_free(m);
    return rc;
}
