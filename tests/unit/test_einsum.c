/* test_einsum.c — Einsum's output shape from its equation (graph_einsum.c):
 * the equations torchvision's MaxViT exports, ONNX's own Einsum test models
 * (Debian's libonnx-testdata: the declared output shape of each), the
 * implicit form and ellipsis broadcasting as numpy.einsum gives them, and
 * malformed equations — each refused, never read past its end. */
#include "onnx_testlib.h"
#include "model/graph.h"

#include <dirent.h>
#include <sys/stat.h>

static vf__vshape shp(int32_t rank, const int64_t *d)
{
    vf__vshape s;
    memset(&s, 0, sizeof s);
    s.elem = VF_ONNX_FLOAT;
    s.rank = rank;
    for (int32_t i = 0; i < rank; i++)
        s.d[i] = d[i];
    s.kn = -1;
    return s;
}

/* eq over a (rank ra) and b (rank rb, or none when rb < 0) gives want (rank rw). */
static void gives(const char *eq, int32_t ra, const int64_t *a, int32_t rb, const int64_t *b, int32_t rw,
                  const int64_t *want)
{
    vf__vshape x = shp(ra, a), y = rb >= 0 ? shp(rb, b) : shp(0, NULL), o;
    const vf__vshape *xs[2] = {&x, &y};
    memset(&o, 0, sizeof o);
    if (!vf__einsum_shape(eq, xs, rb >= 0 ? 2 : 1, &o))
        fail_msg("'%s' refused", eq);
    assert_int_equal(o.rank, rw);
    for (int32_t i = 0; i < rw; i++)
        assert_int_equal(o.d[i], want[i]);
    assert_int_equal(o.elem, VF_ONNX_FLOAT);
}

static void refused(const char *eq, int32_t ra, const int64_t *a, int32_t rb, const int64_t *b)
{
    vf__vshape x = shp(ra, a), y = rb >= 0 ? shp(rb, b) : shp(0, NULL), o;
    const vf__vshape *xs[2] = {&x, &y};
    if (vf__einsum_shape(eq, xs, rb >= 0 ? 2 : 1, &o))
        fail_msg("'%s' accepted", eq);
}

/* torchvision 0.14 maxvit.py RelativePositionalMultiHeadAttention.forward:
 * q.k^T and attention.v over [B, G, H, P, DH], P = 7 x 7, DH = 32. */
static void test_maxvit(void **state)
{
    (void)state;
    int64_t q[5] = {8, 64, 2, 49, 32}, att[5] = {8, 64, 2, 49, 49};
    gives("B G H I D, B G H J D -> B G H I J", 5, q, 5, q, 5, att);
    gives("B G H I J, B G H J D -> B G H I D", 5, att, 5, q, 5, q);
}

/* numpy.einsum's results (numpy 1.24) for the forms the spec allows. */
static void test_forms(void **state)
{
    (void)state;
    int64_t a[2] = {3, 4}, b[2] = {4, 5}, ab[2] = {3, 5}, t[2] = {4, 3};
    gives("ij,jk", 2, a, 2, b, 2, ab);           /* implicit: i, k in order */
    gives("ij,jk->ik", 2, a, 2, b, 2, ab);
    gives("ji", 2, a, -1, NULL, 2, t);           /* implicit output sorted: i j, so a transpose */
    gives("ij->ji", 2, a, -1, NULL, 2, t);
    int64_t sq[2] = {4, 4};
    gives("ii", 2, sq, -1, NULL, 0, NULL);       /* trace: a scalar */
    int64_t d3[3] = {3, 5, 5}, d3o[2] = {3, 5};
    gives("...ii ->...i", 3, d3, -1, NULL, 2, d3o); /* libonnx-testdata test_einsum_batch_diagonal */
    int64_t e1[4] = {2, 1, 3, 4}, e2[3] = {7, 4, 6}, eo[4] = {2, 7, 3, 6};
    gives("...ij,...jk->...ik", 4, e1, 3, e2, 4, eo); /* ellipsis dims broadcast right-aligned */
    gives("...ij,...jk", 4, e1, 3, e2, 4, eo);
    int64_t up[2] = {3, 4}, upo[2] = {3, 4};
    gives("Ab", 2, up, -1, NULL, 2, upo);         /* upper case sorts first */
    int64_t upt[2] = {4, 3};
    gives("bA", 2, up, -1, NULL, 2, upt);
    int64_t v5[1] = {5};
    gives("i,i", 1, v5, 1, v5, 0, NULL);          /* inner product */
    int64_t one[2] = {1, 4}, bc[2] = {3, 4};
    gives("ij,ij->ij", 2, one, 2, bc, 2, bc);     /* a size of 1 broadcasts (torch.einsum) */
    gives("", 0, NULL, -1, NULL, 0, NULL);        /* a scalar stays one */
    gives("...", 2, a, -1, NULL, 2, a);
}

static void test_malformed(void **state)
{
    (void)state;
    int64_t a[2] = {3, 4}, b[2] = {4, 5}, c[2] = {5, 5};
    refused("ij,jk->ik", 2, a, -1, NULL);  /* two terms, one input */
    refused("ij->ik", 2, a, 2, b);         /* one term, two inputs */
    refused("ij,jk,kl->il", 2, a, 2, b);
    refused("ij->ii", 2, a, -1, NULL);     /* an output letter twice */
    refused("ij->k", 2, a, -1, NULL);      /* an output letter no input has */
    refused("ijk", 2, a, -1, NULL);        /* rank 3 named, 2 given */
    refused("i", 2, a, -1, NULL);
    refused("ij,jk", 2, a, 2, c);          /* j = 4 and 5 */
    refused("i.j", 2, a, -1, NULL);
    refused("..i", 2, a, -1, NULL);
    refused("i..", 2, a, -1, NULL);
    refused("......", 2, a, -1, NULL);     /* two ellipses */
    refused("i$j", 2, a, -1, NULL);
    refused("i\tj", 2, a, -1, NULL);
    refused("ij-ji", 2, a, -1, NULL);      /* '-' without '>' */
    refused("ij->", 2, a, 2, b);
    refused("ij->j-", 2, a, -1, NULL);
    refused("ij->j>", 2, a, -1, NULL);
    refused("ij->->ji", 2, a, -1, NULL);
    refused("ij,-jk", 2, a, 2, b);
    refused(NULL, 2, a, -1, NULL);
    int64_t r8[8] = {1, 2, 1, 2, 1, 2, 1, 2};
    refused("abcdefgh,ijklmnop->abcdefghijklmnop", 8, r8, 8, r8); /* 16 output dims */
    refused("abcdefghi", 8, r8, -1, NULL);
    vf__vshape x = shp(2, a), o;
    const vf__vshape *xs[1] = {&x};
    assert_false(vf__einsum_shape("ij", xs, 0, &o));
    vf__vshape unk = shp(-1, NULL);
    const vf__vshape *us[1] = {&unk};
    assert_false(vf__einsum_shape("ij", us, 1, &o));
    /* longer than any ONNX string the reader keeps: refused at the bound, not read to its end */
    size_t n = ((size_t)1 << 16) + 8;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, ' ', n);
    big[0] = 'i', big[1] = 'j', big[n] = 0;
    assert_false(vf__einsum_shape(big, xs, 1, &o));
    free(big);
}

/* ONNX's own Einsum node tests: the inputs' and output's declared shapes. */
static void test_onnx_testdata(void **state)
{
    (void)state;
    const char *root = "/usr/share/libonnx-testdata/data/node";
    DIR *dir = opendir(root);
    if (!dir) {
        fprintf(stderr, "libonnx-testdata not installed: skipped (tools/deps.sh installs it)\n");
        skip();
    }
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (strncmp(e->d_name, "test_einsum", 11))
            continue;
        char p[1024];
        snprintf(p, sizeof p, "%s/%s/model.onnx", root, e->d_name);
        vf_model *m = ot_open(p);
        const vf__graph *g = m->graph;
        assert_non_null(g);
        vf__bind bind = {0};
        vf__shapes s;
        vf_error err = {0};
        assert_int_equal(vf__graph_shapes(m, &bind, &s, &err), VF_OK);
        for (size_t i = 0; i < g->n_node; i++) {
            const vf__gnode *nd = &g->node[i];
            if (strcmp(nd->op, "Einsum"))
                continue;
            const vf__vshape *xs[2] = {NULL, NULL};
            for (uint32_t k = 0; k < nd->n_in && k < 2; k++)
                xs[k] = &s.v[nd->in[k]];
            vf__vshape o;
            memset(&o, 0, sizeof o);
            const vf__gattr *a = vf__gattr_find(nd, "equation");
            assert_non_null(a);
            assert_true(vf__einsum_shape(a->s, xs, nd->n_in, &o));
            const vf__gvalue *want = &g->v[nd->out[0]];
            assert_true(want->declared);
            assert_int_equal(o.rank, want->rank);
            for (int32_t d = 0; d < o.rank; d++)
                assert_int_equal(o.d[d], want->dims[d]);
            n++;
        }
        vf__shapes_free(&s);
        vf_model_free(m);
    }
    closedir(dir);
    assert_true(n >= 5); /* batch_diagonal, batch_matmul, inner_prod, sum, transpose in 1.12 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maxvit),
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_onnx_testdata),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
