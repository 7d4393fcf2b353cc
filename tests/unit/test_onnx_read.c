/* test_onnx_read.c — the ONNX reader on real files and hostile ones:
 * Debian's libonnx-testdata (ONNX's own test models, every one read when
 * the package is installed), and handcrafted corrupt models, each refused
 * with one line and the bad-model status, never a crash or a huge
 * allocation. */
#include "onnx_testlib.h"

#include <dirent.h>
#include <sys/stat.h>

static char *g_dir;

/* A valid one-node model (Relu on a [batch, 4] input), the base of the corrupt cases. */
static void small_model(ow_buf *out)
{
    ow_net N;
    ow_begin(&N, 4, 2, 2);
    ow_unary(&N, "Relu");
    int64_t od[4] = {-1, 4, 2, 2};
    ow_end(&N, od, 4, out);
}

/* Writes bytes as NAME.onnx and expects a one-line refusal containing want. */
static void refused(const char *name, const uint8_t *p, size_t n, const char *want)
{
    char fn[96];
    snprintf(fn, sizeof fn, "%s.onnx", name);
    char *path = tu_path(g_dir, fn);
    tu_write(path, p, n);
    vf_model *m = NULL;
    vf_error e = {0};
    vf_status st = vf_model_open(path, &m, &e);
    if (st == VF_OK || !strstr(e.msg, want))
        fprintf(stderr, "%s: status %d, message '%s' (wanted '%s')\n", name, st, e.msg, want);
    assert_int_not_equal(st, VF_OK);
    assert_true(st == VF_EFORMAT || st == VF_EUNSUPPORTED);
    assert_null(m);
    assert_null(strchr(e.msg, '\n'));
    assert_non_null(strstr(e.msg, path));
    assert_non_null(strstr(e.msg, want));
    free(path);
}

/* A model around hand-written GraphProto bytes. */
static void model_of(const ow_buf *graph, ow_buf *out)
{
    memset(out, 0, sizeof *out);
    ow_int(out, 1, 7);
    ow_bytes(out, 7, graph->p, graph->n);
    ow_buf op = {0};
    ow_int(&op, 2, 14);
    ow_msg(out, 8, &op);
}

static void node(ow_buf *g, const char *op, const char *in, const char *out)
{
    ow_buf n = {0};
    if (in)
        ow_str(&n, 1, in);
    ow_str(&n, 2, out);
    ow_str(&n, 3, out);
    ow_str(&n, 4, op);
    ow_msg(g, 1, &n);
}

static void io(ow_buf *g, uint32_t field, const char *name)
{
    ow_graph G = {0};
    int64_t d[2] = {-1, 4};
    ow_value_info(&G, field, name, d, 2);
    ow_put(g, G.g.p, G.g.n);
    free(G.g.p);
}

/* The graph in g made a model and refused as name, then g emptied. */
static void refused_graph(const char *name, ow_buf *g, const char *want)
{
    ow_buf m;
    model_of(g, &m);
    refused(name, m.p, m.n, want);
    free(m.p);
    free(g->p);
    *g = (ow_buf){0};
}

/* A graph of one initializer t (consumed), the input x passed through as the output. */
static void one_initializer(ow_buf *g, ow_buf *t)
{
    ow_msg(g, 5, t);
    io(g, 11, "x"), io(g, 12, "x");
}

/* The wire format: varints, lengths, wire types, nesting; not ONNX at all. */
static void test_corrupt_wire(void **state)
{
    (void)state;
    ow_buf ok, b = {0}, g = {0};
    small_model(&ok);
    /* 1. truncated varint: the file ends inside one */
    const uint8_t tv[] = {0x08, 0x87};
    refused("truncated_varint", tv, sizeof tv, "truncated varint");
    /* 2. a varint of eleven bytes */
    uint8_t lv[12] = {0x08};
    memset(lv + 1, 0x80, 10);
    lv[11] = 0x01;
    refused("long_varint", lv, sizeof lv, "varint");
    /* 3. a length past the end: the graph claims more bytes than the file has */
    ow_int(&b, 1, 7);
    ow_tag(&b, 7, 2);
    ow_varint(&b, 1000);
    ow_put(&b, "\x0a\x00", 2);
    refused("length_past_end", b.p, b.n, "past the end");
    free(b.p), b = (ow_buf){0};
    /* 4. the model cut short in the middle of the graph */
    refused("truncated_model", ok.p, ok.n - 7, "past the end");
    /* 5. wrong wire type: ir_version as a length-delimited field */
    ow_bytes(&b, 1, "x", 1);
    refused("wrong_wire_type", b.p, b.n, "wire type");
    free(b.p), b = (ow_buf){0};
    /* 6. group wire types onnx.proto never uses */
    const uint8_t grp[] = {0x08, 0x07, 0x3b};
    refused("group_wire_type", grp, sizeof grp, "group");
    /* 7. nesting too deep: a sequence of a sequence of ... (40 levels) */
    ow_buf t = {0};
    ow_buf tt = {0};
    ow_int(&tt, 1, 1);
    ow_msg(&t, 1, &tt); /* innermost TypeProto: a tensor */
    for (int i = 0; i < 40; i++) {
        ow_buf seq = {0}, outer = {0};
        ow_msg(&seq, 1, &t); /* Sequence.elem_type */
        ow_msg(&outer, 4, &seq);
        t = outer;
    }
    ow_buf vi = {0};
    ow_str(&vi, 1, "input");
    ow_msg(&vi, 2, &t);
    ow_msg(&g, 11, &vi);
    refused_graph("nested_too_deep", &g, "nested too deep");
    /* 16. no graph at all (a file that is not ONNX) */
    const uint8_t nog[] = {0x08, 0x07};
    refused("no_graph", nog, sizeof nog, "no graph");
    /* the base model itself is fine */
    char *okp = tu_path(g_dir, "ok.onnx");
    ow_write_file(okp, &ok);
    vf_model *mm = ot_open(okp);
    vf_model_free(mm);
    free(okp);
    free(ok.p);
}

/* Tensors: dims, ranks, data sizes, types, external data. */
static void test_corrupt_tensors(void **state)
{
    (void)state;
    ow_buf g = {0}, ten = {0}, kv = {0};
    int64_t d4[1] = {4};
    /* 8. dims that overflow: [2^40, 2^40] */
    int64_t big[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    ow_tensor(&ten, "w", 1, big, 2, NULL, 0);
    one_initializer(&g, &ten);
    refused_graph("dims_overflow", &g, "overflow");
    /* 9. a tensor of nine dimensions */
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ow_tensor(&ten, "w", 1, nine, 9, NULL, 0);
    one_initializer(&g, &ten);
    refused_graph("rank_nine", &g, "more than 8 dimensions");
    /* 13. raw_data of a different size than its dims */
    int64_t vals[2] = {1, 2};
    ow_tensor(&ten, "w", 7, d4, 1, vals, 2);
    one_initializer(&g, &ten);
    refused_graph("raw_size", &g, "raw_data");
    /* 14. external data leaving the model's directory */
    ow_tensor(&ten, "w", 1, d4, 1, NULL, 0);
    ow_str(&kv, 1, "location"), ow_str(&kv, 2, "../../etc/passwd");
    ow_msg(&ten, 13, &kv);
    ow_int(&ten, 14, 1);
    one_initializer(&g, &ten);
    refused_graph("external_escape", &g, "leaves the model's directory");
    /* 15. external data past the end of its file */
    char *wf = tu_path(g_dir, "small.weights");
    tu_write(wf, "0123456789", 10);
    free(wf);
    ow_tensor(&ten, "w", 1, d4, 1, NULL, 0); /* 16 bytes */
    ow_str(&kv, 1, "location"), ow_str(&kv, 2, "small.weights");
    ow_msg(&ten, 13, &kv);
    ow_int(&ten, 14, 1);
    one_initializer(&g, &ten);
    refused_graph("external_past_end", &g, "past the end of its file");
    /* 17. an unknown data type */
    ow_tensor(&ten, "w", 99, d4, 1, NULL, 0);
    one_initializer(&g, &ten);
    refused_graph("bad_dtype", &g, "data type");
    /* 18. a dimension out of range in a value's shape */
    ow_buf shape = {0}, dim = {0}, tt2 = {0}, ty = {0}, vi2 = {0};
    ow_int(&dim, 1, (int64_t)1 << 60);
    ow_msg(&shape, 1, &dim);
    ow_int(&tt2, 1, 1);
    ow_msg(&tt2, 2, &shape);
    ow_msg(&ty, 1, &tt2);
    ow_str(&vi2, 1, "x");
    ow_msg(&vi2, 2, &ty);
    ow_msg(&g, 11, &vi2);
    io(&g, 12, "x");
    refused_graph("dim_out_of_range", &g, "out of range");
}

/* The graph: cycles, dangling reads, values made twice. */
static void test_corrupt_graph(void **state)
{
    (void)state;
    ow_buf g = {0};
    /* 10. a cycle: a = Relu(b), b = Relu(a) */
    io(&g, 11, "x");
    node(&g, "Relu", "b", "a");
    node(&g, "Relu", "a", "b");
    io(&g, 12, "b");
    refused_graph("cycle", &g, "cycle");
    /* 11. a node reading a tensor nobody makes */
    io(&g, 11, "x");
    node(&g, "Relu", "ghost", "y");
    io(&g, 12, "y");
    refused_graph("dangling_input", &g, "which no node, input or initializer makes");
    /* 12. a value made twice */
    io(&g, 11, "x");
    node(&g, "Relu", "x", "y");
    node(&g, "Relu", "x", "y");
    io(&g, 12, "y");
    refused_graph("made_twice", &g, "made twice");
}

/* A model holding 256 MiB of raw_data inside the .onnx file (a sparse
 * hole): it opens with its bytes exact while the reader reads under 1 MiB
 * of the file — raw_data is skipped by its length. */
static void test_raw_data_never_read(void **state)
{
    (void)state;
    const uint64_t N = (uint64_t)256 << 20;
    ow_buf init = {0}, rest = {0}, graph_head = {0}, head = {0};
    int64_t dims[2] = {4, (int64_t)(N / 4)};
    ow_tensor(&init, "big", 2, dims, 2, NULL, 0); /* UINT8: one byte an element */
    ow_tag(&init, 9, 2);
    ow_varint(&init, N);
    io(&rest, 11, "x");
    io(&rest, 12, "x");
    ow_tag(&graph_head, 5, 2);
    ow_varint(&graph_head, init.n + N);
    ow_put(&graph_head, init.p, init.n);
    ow_int(&head, 1, 7);
    ow_tag(&head, 7, 2);
    ow_varint(&head, graph_head.n + N + rest.n);
    ow_put(&head, graph_head.p, graph_head.n);
    ow_buf tail = {0}, op = {0};
    ow_int(&op, 2, 14);
    ow_msg(&tail, 8, &op);
    char *path = tu_path(g_dir, "bigraw.onnx");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(head.p, 1, head.n, f), head.n);
    assert_int_equal(fseeko(f, (off_t)N, SEEK_CUR), 0); /* the hole: raw_data's bytes */
    assert_int_equal(fwrite(rest.p, 1, rest.n, f), rest.n);
    assert_int_equal(fwrite(tail.p, 1, tail.n, f), tail.n);
    assert_int_equal(fclose(f), 0);
    vf_model *m = ot_open(path);
    vf_graph_info gi;
    assert_true(vf_model_graph_info(m, &gi));
    assert_int_equal(vf_model_tensor(m, 0)->n_bytes, N);
    assert_int_equal(vf_model_tensor(m, 0)->offset, head.n);
    assert_int_equal(gi.inline_bytes, N);
    assert_true(gi.bytes_read < ((uint64_t)1 << 20));
    vf_model_free(m);
    unlink(path);
    free(path);
    free(init.p), free(rest.p), free(graph_head.p), free(head.p), free(tail.p);
}

/* Every model.onnx of Debian's libonnx-testdata opens (1,072 in 1.12.0-2). */
static void test_onnx_testdata(void **state)
{
    (void)state;
    const char *root = "/usr/share/libonnx-testdata/data";
    struct stat sb;
    if (stat(root, &sb) != 0) {
        fprintf(stderr, "libonnx-testdata not installed: skipped (tools/deps.sh installs it)\n");
        skip();
    }
    const char *sets[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};
    size_t n = 0;
    for (size_t s = 0; s < 4; s++) {
        char d[512];
        snprintf(d, sizeof d, "%s/%s", root, sets[s]);
        DIR *dir = opendir(d);
        if (!dir)
            continue;
        struct dirent *e;
        while ((e = readdir(dir))) {
            if (e->d_name[0] == '.')
                continue;
            char p[1024];
            snprintf(p, sizeof p, "%s/%s/model.onnx", d, e->d_name);
            if (stat(p, &sb) != 0)
                continue;
            vf_model *m = NULL;
            vf_error err = {0};
            vf_status st = vf_model_open(p, &m, &err);
            if (st != VF_OK)
                fprintf(stderr, "%s\n", err.msg);
            assert_int_equal(st, VF_OK);
            vf_graph_info gi;
            assert_true(vf_model_graph_info(m, &gi));
            assert_true(gi.nodes >= 1 && gi.outputs >= 1);
            vf_model_free(m);
            n++;
        }
        closedir(dir);
    }
    assert_true(n >= 1000);
}

int main(void)
{
    g_dir = tu_tmpdir();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corrupt_wire),
        cmocka_unit_test(test_corrupt_tensors),
        cmocka_unit_test(test_corrupt_graph),
        cmocka_unit_test(test_raw_data_never_read),
        cmocka_unit_test(test_onnx_testdata),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_rm_rf(g_dir);
    free(g_dir);
    return rc;
}
