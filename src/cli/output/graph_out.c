/* graph_out.c — what inspect adds for a network read from its graph (ONNX):
 * opset, inputs and outputs with their symbolic dimensions, the operator
 * histogram, the largest initializers, and where the weights' bytes are. */
#include "cli.h"

#include <string.h>

#define LARGEST 5

static void dims_text(const vf_graph_io *io, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int32_t d = 0; d < io->rank && o < n - 32; d++) {
        const char *sep = d ? ", " : "";
        if (io->dim_params[d])
            o += (size_t)snprintf(buf + o, n - o, "%s%.24s", sep, io->dim_params[d]);
        else if (io->dims[d] >= 0)
            o += (size_t)snprintf(buf + o, n - o, "%s%lld", sep, (long long)io->dims[d]);
        else
            o += (size_t)snprintf(buf + o, n - o, "%s?", sep);
    }
    snprintf(buf + o, n - o, io->rank < 0 ? "shape not stated]" : "]");
}

/* Indices of the LARGEST biggest initializers, biggest first. */
static size_t largest(const vf_model *m, size_t *idx)
{
    size_t k = 0;
    for (size_t i = 0; i < vf_model_tensor_count(m); i++) {
        uint64_t b = vf_model_tensor(m, i)->n_bytes;
        size_t j = k < LARGEST ? k++ : LARGEST;
        if (j == LARGEST && b <= vf_model_tensor(m, idx[LARGEST - 1])->n_bytes)
            continue;
        if (j == LARGEST)
            j = LARGEST - 1;
        while (j > 0 && vf_model_tensor(m, idx[j - 1])->n_bytes < b) {
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = i;
    }
    return k;
}

static json_t *io_json(const vf_graph_io *io)
{
    json_t *o = json_object(), *d = json_array();
    const vf_dtype_info *di = vf_dtype_get(io->dtype);
    json_object_set_new(o, "name", json_string(io->name));
    json_object_set_new(o, "dtype", di ? json_string(di->name) : json_null());
    for (int32_t k = 0; k < io->rank; k++)
        json_array_append_new(d, io->dim_params[k] ? json_string(io->dim_params[k])
                                 : io->dims[k] >= 0 ? json_integer(io->dims[k])
                                                    : json_null());
    json_object_set_new(o, "dims", io->rank < 0 ? json_null() : d);
    if (io->rank < 0)
        json_decref(d);
    return o;
}

json_t *vf_graph_json(const vf_model *m)
{
    vf_graph_info gi;
    if (!vf_model_graph_info(m, &gi))
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "ir_version", json_integer(gi.ir_version));
    json_object_set_new(o, "opset", json_integer(gi.opset));
    json_object_set_new(o, "producer", json_string(gi.producer));
    json_object_set_new(o, "nodes", json_integer((json_int_t)gi.nodes));
    json_object_set_new(o, "initializers", json_integer((json_int_t)gi.initializers));
    json_object_set_new(o, "inline_bytes", json_integer((json_int_t)gi.inline_bytes));
    json_object_set_new(o, "external_bytes", json_integer((json_int_t)gi.external_bytes));
    json_object_set_new(o, "identity_aliases", json_integer((json_int_t)gi.aliases));
    json_object_set_new(o, "identity_alias_bytes", json_integer((json_int_t)gi.alias_bytes));
    json_object_set_new(o, "bytes_read", json_integer((json_int_t)gi.bytes_read));
    json_t *ins = json_array(), *outs = json_array(), *ops = json_object(), *big = json_array();
    vf_graph_io io;
    for (size_t i = 0; vf_model_graph_io(m, false, i, &io); i++)
        json_array_append_new(ins, io_json(&io));
    for (size_t i = 0; vf_model_graph_io(m, true, i, &io); i++)
        json_array_append_new(outs, io_json(&io));
    size_t n;
    const char *op;
    for (size_t i = 0; (op = vf_model_graph_op(m, i, &n)); i++)
        json_object_set_new(ops, op, json_integer((json_int_t)n));
    size_t idx[LARGEST];
    for (size_t i = 0, k = largest(m, idx); i < k; i++) {
        const vf_tensor *t = vf_model_tensor(m, idx[i]);
        json_t *e = json_object();
        json_object_set_new(e, "name", json_string(t->name));
        json_object_set_new(e, "bytes", json_integer((json_int_t)t->n_bytes));
        json_array_append_new(big, e);
    }
    json_object_set_new(o, "inputs", ins);
    json_object_set_new(o, "outputs", outs);
    json_object_set_new(o, "operators", ops);
    json_object_set_new(o, "largest_initializers", big);
    return o;
}

void vf_graph_print(const vf_model *m, vf_units u)
{
    vf_graph_info gi;
    if (!vf_model_graph_info(m, &gi))
        return;
    char a[64], b[64], d[256];
    printf("\ngraph          ir %lld, opset %lld%s%s, %zu nodes, %zu initializers\n", (long long)gi.ir_version,
           (long long)gi.opset, gi.producer[0] ? ", from " : "", gi.producer, gi.nodes, gi.initializers);
    printf("weights        %s inside the graph file, %s in external data (referenced, not read)\n",
           vf_fmt_bytes(gi.inline_bytes, u, a, sizeof a), vf_fmt_bytes(gi.external_bytes, u, b, sizeof b));
    if (gi.aliases)
        printf("aliases        %zu Identity copies of initializers (%s bytes): the exporter kept one of equal "
               "tensors\n", gi.aliases, vf_fmt_count(gi.alias_bytes, a, sizeof a));
    vf_graph_io io;
    for (int out = 0; out < 2; out++)
        for (size_t i = 0; vf_model_graph_io(m, out, i, &io); i++) {
            dims_text(&io, d, sizeof d);
            const vf_dtype_info *di = vf_dtype_get(io.dtype);
            printf("%-14s %s %s %s\n", i ? "" : out ? "outputs" : "inputs", io.name, di ? di->name : "?", d);
        }
    printf("operators     ");
    size_t n;
    const char *op;
    for (size_t i = 0; (op = vf_model_graph_op(m, i, &n)); i++)
        printf("%s %s %zu", i ? "," : "", op, n);
    printf("\nlargest        ");
    size_t idx[LARGEST];
    for (size_t i = 0, k = largest(m, idx); i < k; i++)
        printf("%s%s %s", i ? ", " : "", vf_model_tensor(m, idx[i])->name,
               vf_fmt_bytes(vf_model_tensor(m, idx[i])->n_bytes, u, a, sizeof a));
    printf("\n");
}
