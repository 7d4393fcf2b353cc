/* test_models2026.c — the 2025-26 families counted from their config.json
 * against the exact figures of tests/reference/models2026/index.tsv (the
 * Hub's count of every stored tensor element, or an index's total_size in
 * bytes; each row's source is in that file). Every row with a reference must
 * be listed below with how it is compared; the configs without one must
 * still build exactly (known family, not approximate). */
#include "testutil.h"

#define DIR2026 "tests/reference/models2026/"

typedef enum { STORED, PARAMS, BACKBONE, TIED_COPY, UNMATCHED } how;

/* How each reference is compared, and why where it is not "stored elements". */
static const struct {
    const char *file;
    how how;
} rows[] = {
    /* Qwen3-Coder-Next stores no mtp.* block although its config is the
     * -Instruct one's: its count is everything but the MTP block */
    {"Qwen__Qwen3-Coder-Next.json", BACKBONE},
    /* the reference is the bf16 repository's count; this copy of the config
     * carries the FP8 repository's quantization_config (channel scales) */
    {"meta-llama__Llama-4-Maverick-17B-128E-Instruct.json", PARAMS},
    /* granite-3.0-1b-a400m's file stores lm_head.weight although the config
     * ties it: the Hub count is ours plus one vocab x hidden copy */
    {"ibm-granite__granite-3.0-1b-a400m-base.json", TIED_COPY},
    /* config byte-identical to -Instruct (matched), yet a count 0.6 G lower
     * than even the backbone: not a figure a config can give */
    {"Qwen__Qwen3-Next-80B-A3B-Thinking.json", UNMATCHED},
};

static how how_of(const char *file)
{
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(rows[i].file, file) == 0)
            return rows[i].how;
    return STORED;
}

static vf_model *open_cfg(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, DIR2026 "%s", file);
    vf_model *m = NULL;
    vf_error e = {0};
    if (vf_model_open(path, &m, &e) != VF_OK)
        fail_msg("%s: %s", path, e.msg);
    return m;
}

/* index.tsv: file, model_type, reference kind, exact value, ... */
static void test_references(void **state)
{
    (void)state;
    FILE *f = fopen(DIR2026 "index.tsv", "r");
    assert_non_null(f);
    char line[8192];
    int matched = 0, rows_with_ref = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        char *file = strtok(line, "\t"), *type = strtok(NULL, "\t"), *kind = strtok(NULL, "\t");
        char *val = strtok(NULL, "\t");
        (void)type;
        if (!file || !kind || strcmp(kind, "none") == 0)
            continue;
        assert_non_null(val);
        uint64_t ref = strtoull(val, NULL, 10);
        rows_with_ref++;
        vf_model *m = open_cfg(file);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        const vf_hparams *hp = vf_model_hparams(m);
        assert_null(vf_model_approximate(m));
        uint64_t got = vf_model_stored_elements(m);
        if (strcmp(kind, "safetensors_total_size") == 0)
            got = t.bytes;
        else if (how_of(file) == PARAMS)
            got = t.params;
        else if (how_of(file) == BACKBONE)
            got = vf_model_stored_elements(m) - t.mtp_params;
        else if (how_of(file) == TIED_COPY)
            got = vf_model_stored_elements(m) + hp->vocab_size * hp->hidden_size;
        if (how_of(file) == UNMATCHED) {
            assert_int_not_equal(got, ref); /* if it ever matches, this table is wrong */
        } else {
            if (got != ref)
                fail_msg("%s: %llu, reference %llu (%+lld)", file, (unsigned long long)got, (unsigned long long)ref,
                         (long long)(got - ref));
            matched++;
        }
        vf_model_free(m);
    }
    fclose(f);
    assert_int_equal(rows_with_ref, 40);
    assert_int_equal(matched, 39);
}

/* The configs without a reference (other sizes of the same families) build
 * as known families, with parameters in the range their names say. */
static void test_other_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        double lo, hi; /* billions, from the model's name */
    } sizes[] = {
        {"Qwen__Qwen2-VL-2B-Instruct.json", 2.0, 2.5},
        {"meta-llama__Llama-4-Scout-17B-16E-Instruct.json", 100, 115},
        {"meta-llama__Llama-3.2-90B-Vision-Instruct.json", 85, 92},
        {"microsoft__Phi-3-mini-128k-instruct.json", 3.7, 3.9},
        {"microsoft__Phi-3.5-MoE-instruct.json", 41, 42.5},
        {"ibm-granite__granite-4.0-h-350m.json", 0.3, 0.4},
        {"ibm-granite__granite-4.0-h-1b.json", 1.3, 1.6},
        {"ibm-granite__granite-4.0-h-micro-base.json", 3.0, 3.4},
        {"ibm-granite__granite-4.0-h-small.json", 31, 33},
        {"ibm-ai-platform__Bamba-9B-v2.json", 9.5, 9.9},
        {"state-spaces__mamba-1.4b-hf.json", 1.3, 1.45},
        {"state-spaces__mamba-2.8b-hf.json", 2.7, 2.85},
        {"swiss-ai__Apertus-70B-Instruct-2509.json", 69, 72},
        {"ibm-granite__granite-3.0-2b-base.json", 2.4, 2.7},
        {"tencent__Hunyuan-0.5B-Pretrain.json", 0.4, 0.6},
        {"mistralai__Mistral-Small-3.1-24B-Instruct-2503.json", 23.5, 24.5},
        {"mistralai__Mistral-Small-3.2-24B-Instruct-2506.json", 23.5, 24.5},
        {"mistralai__Ministral-3-3B-Instruct-2512.json", 3.0, 4.2},
        {"mistralai__Ministral-3-8B-Base-2512.json", 8.0, 9.2},
        {"nvidia__Nemotron-H-4B-Base-8K.json", 4.0, 4.6},
        {"nvidia__Nemotron-H-8B-Base-8K.json", 7.9, 8.3},
        {"nvidia__Nemotron-H-56B-Base-8K.json", 54, 58},
        {"HuggingFaceTB__SmolVLM2-2.2B-Instruct.json", 2.1, 2.4},
        {"state-spaces__mamba2-130m.json", 0.12, 0.14},
        {"state-spaces__mamba2attn-2.7b.json", 2.6, 2.8},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        vf_model *m = open_cfg(sizes[i].file);
        vf_model_totals t;
        vf_model_totals_get(m, &t);
        double b = (double)t.params / 1e9;
        if (vf_model_approximate(m) || b < sizes[i].lo || b > sizes[i].hi)
            fail_msg("%s: %.3f B params (expected %.2f-%.2f)%s", sizes[i].file, b, sizes[i].lo, sizes[i].hi,
                     vf_model_approximate(m) ? ", approximate" : "");
        vf_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_references),
        cmocka_unit_test(test_other_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
