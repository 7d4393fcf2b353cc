# vramfit sweep: the memory model at many values of one knob, and fit without
# --gpu: every catalog GPU with the fewest devices of it that fit. Each figure
# is checked against a separate command answering the same question (estimate,
# fit --gpu), never against itself.
. tests/cli/lib.sh

# Qwen3-8B states max_position_embeddings 40960: the default context values are
# the powers of two from 128 below it, then 40960 itself (9 + 1 points).
check_json "sweep: default context values" 0 \
    '[.points[].value] == [128,256,512,1024,2048,4096,8192,16384,32768,40960] and .over == "context"' \
    "$VF" sweep Qwen/Qwen3-8B --gpu RTX4090 --json
check_json "sweep: default batch values 1..512" 0 '[.points[].value] == [1,2,4,8,16,32,64,128,256,512]' \
    "$VF" sweep Qwen/Qwen3-8B --over batch --context 2048 --json
check_json "sweep: values given" 0 '[.points[].value] == [1000,3000,5000]' \
    "$VF" sweep Qwen/Qwen3-8B --values 1000,3000,5000 --json

# Each point equals estimate at that value (transformers: no device dependence).
"$VF" sweep Qwen/Qwen3-8B --values 1024,8192 --batch 2 --json >"$TMP/sw.json"
for v in 1024 8192; do
    want=$("$VF" estimate Qwen/Qwen3-8B --context $v --batch 2 --json | jq -c '[.per_gpu_bytes, .components]')
    got=$(jq -c --argjson v $v '.points[] | select(.value == $v) | [.per_gpu_bytes, .components]' "$TMP/sw.json")
    [ -n "$want" ] && [ "$want" = "$got" ] && ok "sweep: context $v = estimate --context $v" ||
        fail "sweep: context $v = estimate --context $v" "sweep $got, estimate $want"
done
"$VF" sweep Qwen/Qwen3-8B --over batch --values 4 --context 4096 --train --gpu 80GiB --json >"$TMP/swt.json"
want=$("$VF" estimate Qwen/Qwen3-8B --train --batch 4 --context 4096 --gpu 80GiB --json | jq .per_gpu_bytes)
got=$(jq '.points[0].per_gpu_bytes' "$TMP/swt.json")
[ "$want" = "$got" ] && ok "sweep: training micro-batch 4 = estimate --train --batch 4" ||
    fail "sweep: training micro-batch 4 = estimate --train --batch 4" "sweep $got, estimate $want"

# Each point's fits is fit's answer at that value (vLLM sizes its pool from the
# device: needed_bytes is the least device it starts on, fit's own search).
"$VF" sweep meta-llama/Llama-3.1-70B --runtime vllm --gpu H100x2 --values 1024,2048,4096,8192 --json >"$TMP/sv.json"
for v in 1024 2048 4096 8192; do
    f=$(jq --argjson v $v '.points[] | select(.value == $v) | .fits' "$TMP/sv.json")
    "$VF" fit meta-llama/Llama-3.1-70B --runtime vllm --gpu H100x2 --context $v --json >"$TMP/fit.json"
    rc=$?
    n=$(jq --argjson v $v '.points[] | select(.value == $v) | .needed_bytes' "$TMP/sv.json")
    fn=$(jq .needed_bytes "$TMP/fit.json")
    if { [ "$f" = true ] && [ $rc -eq 0 ]; } || { [ "$f" = false ] && [ $rc -eq 1 ]; }; then
        [ "$n" = "$fn" ] && ok "sweep: vllm 70B on 2 x H100 at $v = fit ($f)" ||
            fail "sweep: vllm 70B on 2 x H100 at $v = fit" "needed $n, fit $fn"
    else
        fail "sweep: vllm 70B on 2 x H100 at $v = fit" "sweep fits=$f, fit exit $rc"
    fi
done
check_json "sweep: needs grow with context" 0 '[.points[].needed_bytes] as $n | $n == ($n | sort) and $n[0] < $n[-1]' \
    "$VF" sweep meta-llama/Llama-3.1-70B --runtime vllm --gpu H100x2 --json
check_json "sweep: no gpu, no fits" 0 '.gpu == null and all(.points[]; .fits == false and .needed_bytes > 0)' \
    "$VF" sweep Qwen/Qwen3-8B --values 512 --json
check_err "sweep: bad axis" 2 "over" "$VF" sweep Qwen/Qwen3-8B --over width
check_err "sweep: zero value" 2 "positive" "$VF" sweep Qwen/Qwen3-8B --values 512,0
check_err "sweep: too many values" 2 "at most 64" "$VF" sweep Qwen/Qwen3-8B --values "$(seq -s, 1 65)"
check_err "sweep: --over is sweep's" 2 "unknown option" "$VF" fit Qwen/Qwen3-8B --over batch

# fit without --gpu: the fewest devices per catalog GPU. Each row, asked of fit
# with --gpu NAMExCOUNT, fits; with half the count it does not.
"$VF" fit meta-llama/Llama-3.1-70B --runtime vllm --context 8192 --json >"$TMP/cat.json"
check_json "fit catalog: rows have counts, least total memory first" 0 \
    '.fits and ([.gpus[].total_gpu_bytes] == ([.gpus[].total_gpu_bytes] | sort)) and any(.gpus[]; .count > 1) and all(.gpus[]; .headroom_bytes == .gpu_bytes - .needed_bytes and .headroom_bytes >= 0)' \
    cat "$TMP/cat.json"
jq -r '.gpus[] | "\(.gpu)|\(.count)"' "$TMP/cat.json" | awk 'NR % 5 == 1' >"$TMP/rows"
while IFS='|' read -r g n; do
    check "fit catalog: $n x $g fits as fit --gpu says" 0 "$VF" fit meta-llama/Llama-3.1-70B --runtime vllm --context 8192 --gpu "${g}x$n" --json
    if [ "$n" -gt 1 ]; then
        check "fit catalog: $((n / 2)) x $g does not" 1 "$VF" fit meta-llama/Llama-3.1-70B --runtime vllm --context 8192 --gpu "${g}x$((n / 2))" --json
    fi
done <"$TMP/rows"
# DeepSeek-V3 (671B) fits on no single catalog GPU, but on a node of the large ones
# (not 4 x B200: 160 GiB of fp8 weights per GPU over 0.9 x 178.54 GiB; nor, with the current
# vLLM's profile — fused-MoE workspace, 2.2 GiB of non-torch memory a TP rank, the CUDA graphs
# out of the budget — 4 x GB200: 8 of them, the next tensor-parallel size).
check_json "fit catalog: DeepSeek-V3 on vLLM is not 'none'" 0 '.fits and all(.gpus[]; .count >= 4)' \
    "$VF" fit deepseek-ai/DeepSeek-V3 --runtime vllm --context 8192 --json
check_out "fit catalog: table names the counts" 0 " 8 x GB200" "$VF" fit deepseek-ai/DeepSeek-V3 --runtime vllm --context 8192
