# llama.cpp's tensor placement and the cache layout of a build, against
# published logs: the fit advice and the plan move MoE experts to the host
# as llama.cpp's --fit does (common/fit.cpp: experts before whole layers)
# and spell the flags llama-server takes; --llamacpp-build prices the KV
# cache of the build asked.
. tests/cli/lib.sh
MIB=1048576

# DeepSeek-V3 at -c 16384 (ik_llama.cpp PR 394, 2025-05-09, its mla=1 "which
# corresponds to what is done in mainline llama.cpp": KV self size 2074.00 MiB,
# c^KV 1098.00 MiB + kv^T 976.00 MiB; "llama.cpp still stores a V cache", the
# maintainer there). Mainline from #19067 keeps only the latent (the c^KV part).
kvb() { "$VF" estimate deepseek-ai/DeepSeek-V3 --runtime llamacpp --context "$1" --gpu H100 $2 --json | jq .runtime_buffers.context; }
v=$(kvb 16384 "--llamacpp-build b5300")
[ "$v" = $((2074 * MIB)) ] && ok "llamacpp-build: spring 2025 MLA keeps a V cache (2074 MiB)" ||
    fail "llamacpp-build: spring 2025 MLA keeps a V cache (2074 MiB)" "got $v"
v=$(kvb 16384 "")
[ "$v" = $((1098 * MIB)) ] && ok "llamacpp-build: current MLA caches the latent only (1098 MiB)" ||
    fail "llamacpp-build: current MLA caches the latent only (1098 MiB)" "got $v"
# before #12801: per-head K and V (a llama.cpp log of DeepSeek-R1, kv_size 4096:
# n_embd_k_gqa 24576, n_embd_v_gqa 16384, KV self size 19520.00 MiB)
v=$(kvb 4096 "--llamacpp-build 5000")
[ "$v" = $((19520 * MIB)) ] && ok "llamacpp-build: before MLA per-head K and V (19520 MiB)" ||
    fail "llamacpp-build: before MLA per-head K and V (19520 MiB)" "got $v"
check_err "llamacpp-build: not a number" 2 "build number" "$VF" estimate qwen3-8b --runtime llamacpp --llamacpp-build abc

# A MoE model past one RTX 4090: the advice moves experts first and names the
# host memory; the plan on the stated GPU launches that placement.
run "fit: MoE expert offload advised" 1 "$VF" fit Qwen/Qwen3-30B-A3B --runtime llamacpp --weights q8_0 --gpu RTX4090 --context 8192 --json &&
    n=$(jq -r '[.suggestions[] | select(.fits) | .change | select(test("^--n-cpu-moe [0-9]+$"))][0] | sub("--n-cpu-moe "; "")' "$TMP/out")
case "$n" in
'' | null) fail "fit: --n-cpu-moe N among the fitting changes" "$(jq -c '[.suggestions[].change]' "$TMP/out")" ;;
*)
    ok "fit: --n-cpu-moe $n among the fitting changes"
    # the fewest: N fits, N - 1 does not (llama.cpp's own margin kept)
    a=$("$VF" fit Qwen/Qwen3-30B-A3B --runtime llamacpp --weights q8_0 --gpu RTX4090 --context 8192 --n-cpu-moe "$n" --json | jq .fits)
    b=$("$VF" fit Qwen/Qwen3-30B-A3B --runtime llamacpp --weights q8_0 --gpu RTX4090 --context 8192 --n-cpu-moe $((n - 1)) --json | jq .fits)
    [ "$a/$b" = "true/false" ] && ok "fit: --n-cpu-moe $n is the fewest that fits" ||
        fail "fit: --n-cpu-moe $n is the fewest that fits" "N: $a, N-1: $b" ;;
esac
jq -e '[.suggestions[].change] | map(select(test("^--n-gpu-layers"))) | length == 0' "$TMP/out" >/dev/null &&
    ok "fit: MoE: no whole layers to the CPU while experts suffice (llama.cpp --fit)" ||
    fail "fit: MoE: no whole layers to the CPU while experts suffice" "$(jq -c '[.suggestions[].change]' "$TMP/out")"
check_out "plan: the stated GPU keeps the experts on the host" 0 "--n-cpu-moe $n" \
    "$VF" plan Qwen/Qwen3-30B-A3B --emit llamacpp --weights q8_0 --gpu RTX4090x1 --context 8192
# the flags as llama-server documents them (common/arg.cpp: -ot, --cpu-moe, --n-cpu-moe)
"$VF" plan Qwen/Qwen3-30B-A3B --emit llamacpp --weights q8_0 --gpu RTX4090 --context 8192 --cpu-moe \
    --override-tensor 'attn=CUDA0' --n-cpu-moe 2 2>/dev/null >"$TMP/pl.txt"
grep -qF -- "--cpu-moe -ot attn=CUDA0 --n-cpu-moe 2" "$TMP/pl.txt" && ok "plan: placement flags in command-line order" ||
    fail "plan: placement flags in command-line order" "$(cat "$TMP/pl.txt")"
# Qwen3-235B-A22B Q4_K_M: even every expert on the host leaves it over one
# 24 GiB card at 32k: the dense part of the most layers (--fit's dense-only fill)
run "fit: experts and layers both" 1 "$VF" fit Qwen/Qwen3-235B-A22B --runtime llamacpp --weights q4_k_m --gpu RTX3060 --context 32768 --json
jq -e '[.suggestions[] | select(.fits) | .change] | map(select(test("^--cpu-moe --n-gpu-layers [0-9]+$"))) | length == 1' "$TMP/out" >/dev/null &&
    ok "fit: --cpu-moe with --n-gpu-layers when experts alone do not suffice" ||
    fail "fit: --cpu-moe with --n-gpu-layers when experts alone do not suffice" "$(jq -c '[.suggestions[] | [.change, .fits]]' "$TMP/out")"

# The CPU backend's compute buffer beside a GPU (graph inputs: the f32 KQ mask
# and the token embeddings' rows): llama.cpp issue 11337, turn 16 (a 64-layer
# Qwen2.5-32B-shaped model, its KV 4352.00 MiB at -c 32768 q8_0 as vramfit's,
# on a 7900 XTX; a January-2025 build, priced as b4500: every build before
# b5165 has this model's layout): ROCm_Host compute buffer 74.01 MiB.
est() { "$VF" estimate Qwen/Qwen2.5-32B --runtime llamacpp --context 32768 --kv q8_0 --flash-attn on --gpu 24GiB --llamacpp-build 4500 --json; }
est >"$TMP/hc.json"
jq -e '(.runtime_buffers.context == 4352 * 1048576) and ((.runtime_buffers.host_compute / 1048576 - 74.01) | fabs < 0.01)' "$TMP/hc.json" >/dev/null &&
    ok "host compute buffer: 74.01 MiB (issue 11337)" ||
    fail "host compute buffer: 74.01 MiB (issue 11337)" "$(jq -c '.runtime_buffers' "$TMP/hc.json")"
# From #18898 (b7775 on) the graph also holds an f32 embeddings input beside the
# token ids: node-llama-cpp issue 560 (its llama.cpp of 2026-02, Qwen3-1.7B's
# shape, -c 4096 --fa, n_ubatch 512): CUDA_Host compute buffer 16.01 MiB; the
# same run on a build before it keeps one embeddings-sized row block less.
hc() { "$VF" estimate Qwen/Qwen3-1.7B --runtime llamacpp --context 4096 --flash-attn on --weights q4_k_m --gpu "Jetson AGX Orin 64GB" "$@" --json | jq '.runtime_buffers.host_compute / 1048576'; }
a=$(hc) b=$(hc --llamacpp-build 7774)
awk -v a="$a" -v b="$b" 'BEGIN { d = a - 16.01; e = a - b - 4; exit !((d < 0.01 && d > -0.01) && (e < 0.001 && e > -0.001)) }' &&
    ok "host compute buffer: 16.01 MiB with the embeddings input (node-llama-cpp issue 560), 4 MiB less before #18898" ||
    fail "host compute buffer: 16.01 MiB with the embeddings input (node-llama-cpp issue 560), 4 MiB less before #18898" "$a / $b"
# per device: the buffers add up to what the busiest GPU holds
jq -e '.runtime_buffers.devices[0] as $d | ($d.model + $d.context + $d.compute + $d.backend) == .per_gpu_bytes' "$TMP/hc.json" >/dev/null &&
    ok "per-device buffers add up to the GPU's figure" ||
    fail "per-device buffers add up to the GPU's figure" "$(jq -c '[.per_gpu_bytes, .runtime_buffers.devices]' "$TMP/hc.json")"
# host weights run on the first GPU (op offload: backends GPUs first): a
# two-GPU split with experts on the host puts the copies on GPU0 only
"$VF" estimate Qwen/Qwen3-30B-A3B --runtime llamacpp --weights q8_0 --gpu RTX4090x2 --context 8192 --n-cpu-moe 10 --json >"$TMP/two.json"
jq -e '.runtime_buffers.devices | (.[0].op_offload > 0) and (.[1].op_offload == 0)' "$TMP/two.json" >/dev/null &&
    ok "op-offload copies on the first GPU" || fail "op-offload copies on the first GPU" "$(jq -c '.runtime_buffers.devices' "$TMP/two.json")"
