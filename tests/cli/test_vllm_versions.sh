# vLLM by release (--vllm-version, docs/memory-model.md "Non-torch memory"):
# a release that counts the CUDA context as non-torch memory, checked on a
# log the constants were not taken from (vllm issue #10517: 0.6.4, RTX 3090,
# Llama-3.1-8B, max_model_len 20000: KV cache 3.81 GiB; the context inside
# makes the pool smaller, never above the log); what is not modelled is
# refused in one line by estimate, fit and plan: a malformed release, /v0
# after 0.10, several GPUs before 0.6.4, an Apple GPU.
. tests/cli/lib.sh
M=meta-llama/Meta-Llama-3.1-8B # the Instruct model's shapes
if run "vllm 0.6.4: estimate runs" 0 "$VF" estimate $M --runtime vllm --offline --json --gpu "RTX 3090" \
    --vllm-version 0.6.4 --max-model-len 20000; then
    kv=$(jq '.components.kv_cache' "$TMP/out")
    awk -v k="$kv" 'BEGIN { e = (k / 2^30 - 3.81) / 3.81 * 100; exit !(e <= 3 && e > -8) }' &&
        ok "vllm 0.6.4: KV pool within (-8, +3] % of issue #10517's 3.81 GiB" ||
        fail "vllm 0.6.4: KV pool" "$kv B vs 3.81 GiB"
    jq -e '[.assumptions[] | tostring | select(test("CUDA context [0-9]+ MiB counted in non-torch"))] | length == 1' \
        "$TMP/out" >/dev/null && ok "vllm 0.6.4: the context is counted in non-torch memory" ||
        fail "vllm 0.6.4: context" "no assumption says so"
fi
# 0.7 (V0, memory_profiling after the context): the pool is larger by the context
if run "vllm 0.7.0 runs" 0 "$VF" estimate $M --runtime vllm --offline --json --gpu "RTX 3090" --vllm-version 0.7.0 \
    --max-model-len 20000; then
    kv7=$(jq '.components.kv_cache' "$TMP/out")
    [ "$kv7" -gt "$kv" ] && ok "vllm 0.7.0: the context is outside the budget" || fail "vllm 0.7.0" "$kv7 <= $kv"
fi
check_err "vllm: a malformed release is refused" 2 "expected a vLLM release" "$VF" estimate $M --runtime vllm --offline \
    --gpu H100 --vllm-version 1x
check_err "vllm: /v0 after 0.10 is refused" 2 "removed the V0 engine" "$VF" estimate $M --runtime vllm --offline \
    --gpu H100 --vllm-version 0.12.0/v0
check_err "vllm: several GPUs before 0.6.4 are refused" 3 "not modelled" "$VF" estimate $M --runtime vllm --offline \
    --gpu H100x2 --tp 2 --vllm-version 0.5.4
for cmd in estimate fit; do
    check_err "vllm $cmd: an Apple GPU is refused" 3 "no Metal platform" "$VF" $cmd $M --runtime vllm --offline \
        --gpu "M3 Ultra"
done
check_err "vllm plan: an Apple GPU is refused" 3 "no Metal platform" "$VF" plan $M --offline --emit vllm --gpu "M3 Ultra"
check_err "vllm fit: a malformed release is refused" 2 "expected a vLLM release" "$VF" fit $M --runtime vllm --offline \
    --gpu H100 --vllm-version 0.x
# the phases: loading holds the weights and the context; serving idle is the
# pool after the profile's activations are freed; device_bytes is serving at
# its peak, those activations back (docs/memory-model.md "Phases")
check_json "vllm: phases in order, device_bytes = serving peak = idle + activations" 0 \
    '.phases.load_bytes < .phases.profile_peak_bytes and .phases.serving_idle_bytes < .phases.serving_peak_bytes and
     .phases.serving_peak_bytes == .device_bytes and
     .phases.serving_idle_bytes + .components.activations == .device_bytes and
     .phases.load_bytes == .components.weights + .context_bytes' \
    "$VF" estimate $M --runtime vllm --offline --json --gpu H100 --vllm-version 0.11.0
# V0's Mllama profile: every dummy sequence's image through the tower at
# once (vllm PR #12126: Llama-3.2-11B-Vision, 0.7-era V0, max_model_len 65536,
# 128 sequences, eager, H100: activation peak 36.63 GiB, KV cache 14.65 GiB):
# the need at or above the log, the pool at or below it
if run "vllm V0 mllama: estimate runs" 0 "$VF" estimate meta-llama/Llama-3.2-11B-Vision-Instruct --runtime vllm \
    --offline --json --gpu 79.22GiB --vllm-version 0.7.0 --max-model-len 65536 --max-num-seqs 128 --enforce-eager; then
    jq -e '(.components.activations / 1073741824 - 36.63) / 36.63 * 100 | . > -3 and . < 10' "$TMP/out" >/dev/null &&
        ok "vllm V0 mllama: activation peak within (-3, +10) % of 36.63 GiB" ||
        fail "vllm V0 mllama: activation peak" "$(jq '.components.activations' "$TMP/out") B"
    jq -e '.components.kv_cache / 1073741824 <= 14.65 * 1.03' "$TMP/out" >/dev/null &&
        ok "vllm V0 mllama: the pool not above the log's" || fail "vllm V0 mllama: pool" "$(jq '.components.kv_cache' "$TMP/out") B"
fi
