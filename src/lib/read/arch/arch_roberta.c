/* arch_roberta.c — RoBERTa and the families that save its tensors
 * (XLM-RoBERTa, CamemBERT, Data2VecText): BERT's embeddings and encoder under
 * the model's prefix, a position table of max_position_embeddings rows
 * (padding_idx + 1 of them never used), one token type. The heads follow
 * transformers' RoBERTa classes: the bare model keeps its pooler; the task
 * classes build it without one (add_pooling_layer=False). */
#include "read/arch/arch.h"

#include <stdio.h>
#include <string.h>

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

vf_status vf__arch_roberta(vf__ab *b)
{
    const vf_hparams *hp = &b->m->hp;
    uint64_t h = hp->hidden_size;
    const char *arch = json_string_value(json_array_get(json_object_get(b->root, "architectures"), 0));
    arch = arch ? arch : "";
    const char *mt = vf__cfg_str(b->root, "model_type");
    /* Data2VecTextModel's base_model_prefix; the others' is "roberta" */
    const char *pre = mt && strcmp(mt, "data2vec-text") == 0 ? "data2vec_text." : "roberta.";
    if (vf__ab_bert_encoder(b, pre) != VF_OK)
        return b->st;
    bool mlm = ends_with(arch, "ForMaskedLM") || ends_with(arch, "ForCausalLM");
    bool seq = ends_with(arch, "ForSequenceClassification");
    bool tok = ends_with(arch, "ForTokenClassification");
    bool qa = ends_with(arch, "ForQuestionAnswering");
    if (!mlm && !seq && !tok && !qa)
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "%spooler.dense", pre);
    if (mlm) { /* RobertaLMHead: dense, layer_norm, decoder tied to the word embeddings, one bias */
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "lm_head.dense");
        vf__ab_layernorm(b, h, "lm_head.layer_norm");
        vf__ab_param(b, hp->vocab_size, 0, "lm_head.bias");
        if (!hp->tie_word_embeddings)
            vf__ab_param(b, hp->vocab_size, h, "lm_head.decoder.weight");
    }
    if (seq) { /* RobertaClassificationHead */
        vf__ab_linear(b, VF_LIN_BIAS, h, h, "classifier.dense");
        vf__ab_linear(b, VF_LIN_BIAS, vf__ab_num_labels(b), h, "classifier.out_proj");
    }
    if (tok)
        vf__ab_linear(b, VF_LIN_BIAS, vf__ab_num_labels(b), h, "classifier");
    if (qa)
        vf__ab_linear(b, VF_LIN_BIAS, 2, h, "qa_outputs");
    return b->st;
}
