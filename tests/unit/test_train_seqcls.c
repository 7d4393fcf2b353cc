/* test_train_seqcls.c — bert-large trained as transformers'
 * model_memory_anatomy.md did (AutoModelForSequenceClassification, fp32,
 * batch 4 x 512, eager BERT attention): the classification head prices no
 * vocabulary-sized tensor, and PyTorch < 1.11 keeps each softmax's input.
 * Expected differences are derived by hand below from modeling_bert.py and
 * PyTorch's derivatives.yaml, not taken from the code under test. */
#include "testutil.h"
#include "model/model.h"

#define SEQCLS "tests/data/configs/google-bert__bert-large-uncased-seqcls.json"
#define MLM "data/models/google-bert__bert-large-uncased.json"

static uint64_t acts_of(const char *path, const char *torch)
{
    vf_model *m = NULL;
    vf_error err = {0};
    if (vf_model_open(path, &m, &err) != VF_OK)
        fail_msg("%s: %s", path, err.msg);
    vf_estimate_opts o;
    vf_estimate_opts_init(&o);
    o.mode = VF_MODE_TRAINING;
    o.infer.attn = VF_ATTN_EAGER;
    o.train.precision = VF_PREC_FP32;
    o.train.optim_impl = VF_OPTIM_FOR_LOOP;
    o.train.micro_batch = 4;
    o.train.seq_len = 512;
    o.grads_kept = true;
    snprintf(o.train.torch_version, sizeof o.train.torch_version, "%s", torch);
    vf_estimate e;
    vf_status st = vf_estimate_run(m, &o, &e, &err);
    vf_model_free(m);
    if (st != VF_OK)
        fail_msg("%s: %s", path, err.msg);
    return e.activations;
}

/* PyTorch 1.10: every layer's softmax keeps its input, the masked scores
 * [b=4, heads=16, 512, 512] in fp32; the loss's log_softmax keeps its
 * logits [4, 2] in fp32 as well. */
static void test_old_softmax_keeps_input(void **state)
{
    (void)state;
    uint64_t now = acts_of(SEQCLS, ""), old = acts_of(SEQCLS, "1.10");
    assert_int_equal(old - now, 24ull * 4 * 16 * 512 * 512 * 4 + 4ull * 4 * 2);
    /* 1.11 is the first release without it */
    assert_int_equal(acts_of(SEQCLS, "1.11"), now);
}

/* The masked-LM head's vocabulary-sized tensors are gone: its fp32
 * log-probabilities over T = 2048 tokens x 30522 (4 T V bytes) and the
 * int64 targets (8 T); what the classification head adds instead: tanh's
 * output and the dropped copy [4, 1024] in fp32, its 1-byte dropout mask,
 * the fp32 log-probabilities [4, 2] and int64 targets [4]. */
static void test_classification_head(void **state)
{
    (void)state;
    uint64_t T = 4 * 512, V = 30522, h = 1024;
    uint64_t mlm = acts_of(MLM, ""), cls = acts_of(SEQCLS, "");
    assert_int_equal(mlm - cls, (4 * T * V + 8 * T) - ((2 * 4 + 1) * 4 * h + 4 * 4 * 2 + 8 * 4));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_old_softmax_keeps_input),
        cmocka_unit_test(test_classification_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
