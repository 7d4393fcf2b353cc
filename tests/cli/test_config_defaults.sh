# What a family's config class implies when config.json leaves a key out
# (transformers configuration_<family>.py / modeling_<family>.py).
. tests/cli/lib.sh
M=$REF/models

# Qwen2Config: tie_word_embeddings=False, so a config without the key keeps lm_head
jq 'del(.tie_word_embeddings)' "$M/Qwen__Qwen2.5-7B-Instruct.json" >"$TMP/qwen2.json"
check_json "qwen2 untied by default" 0 '[.tensors[].name] | index("lm_head.weight") != null' \
    "$VF" inspect --json --tensors "$TMP/qwen2.json"
# Qwen2Attention: q/k/v projections with bias=True (no attention_bias key in the file)
check_json "qwen2 q/k/v biases" 0 '[.tensors[].name] | index("model.layers.0.self_attn.q_proj.bias") != null' \
    "$VF" inspect --json --tensors "$M/Qwen__Qwen2.5-7B-Instruct.json"
# Qwen3Config: no q/k/v bias unless attention_bias says so
check_json "qwen3 no q bias" 0 '[.tensors[].name] | index("model.layers.0.self_attn.q_proj.bias") == null' \
    "$VF" inspect --json --tensors "$M/Qwen__Qwen3-8B.json"
# GPT-2 ties its head to wte (PretrainedConfig's default) and has biases
check_json "gpt2 tied, biased" 0 '([.tensors[].name] | (index("lm_head.weight") == null) and any(.[]; endswith("attn.c_attn.bias")))' \
    "$VF" inspect --json --tensors "$M/openai-community__gpt2.json"
# BERT: every linear has a bias
check_json "bert biases" 0 '[.tensors[].name] | index("bert.encoder.layer.0.attention.self.query.bias") != null' \
    "$VF" inspect --json --tensors "$M/google-bert__bert-base-uncased.json"
# openai-community/gpt2's checkpoint is float32 and its config states no dtype
check_json "gpt2 stored as f32" 0 '[.tensors[].dtype] | unique == ["F32"]' \
    "$VF" inspect --json --tensors "$M/openai-community__gpt2.json"
