# vramfit plan: usage, and emitted configurations
# whose flags are the engines' documented ones (tests/data/plan/*.txt, with sources).
. tests/cli/lib.sh

check_err "plan: missing --emit" 2 "missing --emit" "$VF" plan x
check_err "plan: unknown engine" 2 "is not vllm" "$VF" plan x --emit tgi
check_err "plan: --train with vllm" 2 "deepspeed" "$VF" plan x --emit vllm --train
check_err "plan: missing model" 2 "missing MODEL" "$VF" plan --emit vllm

# flags_ok NAME LIST FILE: every -flag in FILE's command lines (not # comments) is in LIST,
# with an allowed value where LIST names them; "--flag=value" counts as --flag value.
flags_ok() {
    name=$1
    list=$2
    bad=$(grep -v '^#' "$3" | tr ' ' '\n' | awk -v list="$list" '
        BEGIN { while ((getline l < list) > 0) { if (l ~ /^#/ || l == "") continue
                n = split(l, f, " "); doc[f[1]] = 1; if (n > 1) vals[f[1]] = "|" f[2] "|" } }
        /^-[^=]*=/ { i = index($0, "="); v = substr($0, i + 1); $0 = substr($0, 1, i - 1)
                     if (!($0 in doc)) print $0; else if (($0 in vals) && index(vals[$0], "|" v "|") == 0) print $0 "=" v
                     next }
        prev != "" { if (index(vals[prev], "|" $0 "|") == 0) print prev " " $0; prev = ""; next }
        /^-/ { if (!($0 in doc)) print $0; else if ($0 in vals) prev = $0 }')
    if [ -z "$bad" ]; then ok "$name"; else fail "$name" "undocumented: $bad"; fi
}

# lines_of PROGRAM FILE: the command lines of FILE that start with PROGRAM
lines_of() { grep "^$1 " "$2"; }

# section NAME FILE: the lines after "# NAME" up to the next "#" line (a file the plan writes)
section() { awk -v n="# $1" '$0 == n { on = 1; next } /^#/ { on = 0 } on' "$2"; }

# kwargs_ok NAME LIST FILE: every name= keyword of FILE's Python call lines is in LIST
kwargs_ok() {
    bad=$(grep -v '^#' "$3" | grep -o '[A-Za-z_][A-Za-z_0-9]*=' | tr -d '=' | sort -u | grep -vxF -f "$2")
    if [ -z "$bad" ]; then ok "$1"; else fail "$1" "undocumented: $bad"; fi
}

# as vLLM 0.11 (test_fit.sh: from 0.19/0.21 two H100 at 0.9 no longer hold an 8192 request)
run "plan: vllm for 70B on H100" 0 "$VF" plan meta-llama/Llama-3.1-70B --emit vllm --gpu H100 --context 8192 --max-num-seqs 256 --vllm-version 0.11.0 &&
    if grep -q '^vllm serve meta-llama/Llama-3.1-70B .*--tensor-parallel-size 2 ' "$TMP/out"; then ok "plan: vllm tp 2"; else fail "plan: vllm tp 2" "$(cat "$TMP/out")"; fi
cp "$TMP/out" "$TMP/vllm.txt"
flags_ok "plan: vllm flags documented" tests/data/plan/vllm-flags.txt "$TMP/vllm.txt"
check_out "plan: vllm max-model-len" 0 "--max-model-len 8192" "$VF" plan Qwen/Qwen3-8B --emit vllm --gpu H100 --context 8192

run "plan: llama.cpp" 0 "$VF" plan Qwen/Qwen3-8B --emit llamacpp --gpu RTX4090 --context 8192 --kv q8_0 &&
    cp "$TMP/out" "$TMP/llama.txt" && flags_ok "plan: llama.cpp flags documented" tests/data/plan/llamacpp-flags.txt "$TMP/llama.txt"
check_out "plan: llama.cpp kv" 0 "-ctk q8_0 -ctv q8_0" "$VF" plan Qwen/Qwen3-8B --emit llamacpp --gpu RTX4090 --context 8192 --kv q8_0

run "plan: deepspeed" 0 "$VF" plan meta-llama/Llama-3.1-8B --emit deepspeed --gpu H100x4 --zero 3 --seq-len 2048 &&
    section ds_config.json "$TMP/out" >"$TMP/ds.json" &&
    if jq -e '.zero_optimization.stage == 3 and .train_micro_batch_size_per_gpu >= 1' "$TMP/ds.json" >/dev/null; then
        ok "plan: deepspeed JSON"
    else
        fail "plan: deepspeed JSON" "$(head -c 300 "$TMP/out")"
    fi
bad=$(jq -r '[paths | map(tostring) | join(".")] | .[]' "$TMP/ds.json" | grep -vxF -f tests/data/plan/deepspeed-keys.txt)
if [ -z "$bad" ]; then ok "plan: deepspeed keys documented"; else fail "plan: deepspeed keys documented" "$bad"; fi
# one node: the deepspeed launcher on its GPUs, no hostfile
if lines_of deepspeed "$TMP/out" | grep -q -- '--num_gpus 4 train.py --deepspeed ds_config.json$' && ! grep -q '^# hostfile' "$TMP/out"; then
    ok "plan: deepspeed one-node launch"
else
    fail "plan: deepspeed one-node launch" "$(cat "$TMP/out")"
fi
check_out "plan: accelerate max_memory" 0 'max_memory={0: "[0-9]*MiB"' "$VF" plan Qwen/Qwen3-8B --emit accelerate --gpu RTX4090 --context 4096
check_json "plan: json" 0 '.engine == "vllm" and (.config | startswith("vllm serve"))' "$VF" plan Qwen/Qwen3-8B --emit vllm --gpu H100 --json

# DeepSpeed for full fine-tuning of an 8B model on 8 x A100 80GB: plain data
# parallel does not fit (16 bytes of states per parameter on every GPU), so the
# plan shards with ZeRO-3 over the GPUs given, and the model agrees it fits.
check_json "plan: deepspeed shards over the GPUs given" 0 \
    '.gpus == 8 and .nodes == 1 and (.config | test("\"stage\": 3"))' \
    "$VF" plan Qwen/Qwen3-8B --emit deepspeed --gpu A100-80GBx8 --json
check "plan: the zero-3 plan fits by the model" 0 "$VF" fit Qwen/Qwen3-8B --train --zero 3 --gpu A100-80GBx8
check "plan: plain data parallel does not" 1 "$VF" fit Qwen/Qwen3-8B --train --gpu A100-80GBx8

# ---- past one node (issue 14) ----
# vLLM: Llama-3.1-405B in bf16 needs 16 H100 (tensor parallel 8 x pipeline parallel 2): the
# Ray head, the other node joining it, then vllm serve with the Ray executor; no
# re-quantization (AWQ needs an AWQ checkpoint: never a launch flag for this model).
run "plan: 405B on H100 over two nodes" 0 "$VF" plan meta-llama/Meta-Llama-3.1-405B --gpu H100 --emit vllm --context 8192 &&
    cp "$TMP/out" "$TMP/v405.txt"
if [ "$(lines_of ray "$TMP/v405.txt" | head -1)" = "ray start --head --port=6379" ] &&
    [ "$(lines_of ray "$TMP/v405.txt" | sed -n 2p)" = "ray start --address=HEAD_IP:6379" ] &&
    lines_of vllm "$TMP/v405.txt" | grep -q -- '--tensor-parallel-size 8 --pipeline-parallel-size 2 .*--distributed-executor-backend ray$'; then
    ok "plan: 405B ray head, worker, vllm serve tp 8 pp 2"
else
    fail "plan: 405B ray head, worker, vllm serve tp 8 pp 2" "$(cat "$TMP/v405.txt")"
fi
if grep -q -- '--quantization' "$TMP/v405.txt"; then fail "plan: 405B launches no re-quantization" "$(cat "$TMP/v405.txt")"; else ok "plan: 405B launches no re-quantization"; fi
lines_of vllm "$TMP/v405.txt" >"$TMP/v405.vllm"
lines_of ray "$TMP/v405.txt" >"$TMP/v405.ray"
flags_ok "plan: 405B vllm flags documented" tests/data/plan/vllm-flags.txt "$TMP/v405.vllm"
flags_ok "plan: 405B ray flags documented" tests/data/plan/ray-flags.txt "$TMP/v405.ray"
check_json "plan: 405B json: 16 GPUs on 2 nodes" 0 '.gpus == 16 and .nodes == 2' \
    "$VF" plan meta-llama/Meta-Llama-3.1-405B --gpu H100 --emit vllm --context 8192 --json

# llama.cpp over hosts: rpc-server on the other host, --rpc on the main one.
run "plan: llama.cpp over two hosts" 0 "$VF" plan meta-llama/Llama-3.1-70B --emit llamacpp --gpu RTX4090 --gpus-per-node 2 --context 8192 &&
    cp "$TMP/out" "$TMP/lrpc.txt"
if lines_of rpc-server "$TMP/lrpc.txt" | grep -q . && lines_of llama-server "$TMP/lrpc.txt" | grep -q -- '--rpc HOST1:50052'; then
    ok "plan: llama.cpp rpc-server and --rpc"
else
    fail "plan: llama.cpp rpc-server and --rpc" "$(cat "$TMP/lrpc.txt")"
fi
lines_of rpc-server "$TMP/lrpc.txt" >"$TMP/lrpc.srv"
lines_of llama-server "$TMP/lrpc.txt" >"$TMP/lrpc.main"
flags_ok "plan: rpc-server flags documented" tests/data/plan/rpc-server-flags.txt "$TMP/lrpc.srv"
flags_ok "plan: llama-server --rpc flags documented" tests/data/plan/llamacpp-flags.txt "$TMP/lrpc.main"

# DeepSpeed on 16 GPUs of 2 nodes: the config, a hostfile with one line per node, the
# TrainingArguments with gradient checkpointing (the model's, not DeepSpeed's
# activation_checkpointing, which acts only through deepspeed.checkpointing), deepspeed and torchrun.
run "plan: deepspeed over two nodes" 0 "$VF" plan Qwen/Qwen3-8B --emit deepspeed --gpu H100 --nodes 2 --zero 3 --grad-checkpoint full &&
    cp "$TMP/out" "$TMP/ds2.txt"
section ds_config.json "$TMP/ds2.txt" >"$TMP/ds2.json"
check_json "plan: deepspeed 2 nodes: batch over 16 GPUs, no activation_checkpointing block" 0 \
    '.train_batch_size == 16 and .zero_optimization.stage == 3 and (has("activation_checkpointing") | not)' cat "$TMP/ds2.json"
hosts=$(awk '/^# hostfile/ { on = 1; next } /^#/ { on = 0 } on' "$TMP/ds2.txt")
if [ "$(printf '%s\n' "$hosts" | grep -c '^node[0-9] slots=8$')" -eq 2 ]; then ok "plan: hostfile, 2 nodes of 8"; else fail "plan: hostfile, 2 nodes of 8" "$hosts"; fi
if grep -q '^TrainingArguments(.*gradient_checkpointing=True.*deepspeed="ds_config.json")$' "$TMP/ds2.txt"; then
    ok "plan: TrainingArguments with gradient_checkpointing"
else
    fail "plan: TrainingArguments with gradient_checkpointing" "$(cat "$TMP/ds2.txt")"
fi
grep '^TrainingArguments(' "$TMP/ds2.txt" >"$TMP/ds2.py"
kwargs_ok "plan: TrainingArguments keywords documented" tests/data/plan/trainer-args.txt "$TMP/ds2.py"
lines_of deepspeed "$TMP/ds2.txt" >"$TMP/ds2.launch"
lines_of torchrun "$TMP/ds2.txt" >>"$TMP/ds2.launch"
if [ "$(wc -l <"$TMP/ds2.launch")" -eq 2 ] && grep -q -- '--num_nodes 2 --num_gpus 8' "$TMP/ds2.launch" &&
    grep -q -- '--nnodes 2 --nproc-per-node 8' "$TMP/ds2.launch"; then
    ok "plan: deepspeed and torchrun over 2 nodes of 8"
else
    fail "plan: deepspeed and torchrun over 2 nodes of 8" "$(cat "$TMP/ds2.launch")"
fi
flags_ok "plan: launcher flags documented" tests/data/plan/launcher-flags.txt "$TMP/ds2.launch"

# accelerate --train: an accelerate config for 2 machines (FSDP full shard) and accelerate launch.
run "plan: accelerate training over two nodes" 0 "$VF" plan Qwen/Qwen3-8B --emit accelerate --train --gpu H100 --nodes 2 --fsdp full &&
    cp "$TMP/out" "$TMP/acc.txt"
section accelerate.yaml "$TMP/acc.txt" >"$TMP/acc.yaml"
keys=$(awk '/^[a-z]/ { split($0, a, ":"); top = a[1]; print top; next } /^  [a-z]/ { sub(/^  /, ""); split($0, a, ":"); print top "." a[1] }' "$TMP/acc.yaml")
bad=$(printf '%s\n' "$keys" | grep -vxF -f tests/data/plan/accelerate-config-keys.txt)
if [ -z "$bad" ]; then ok "plan: accelerate config keys documented"; else fail "plan: accelerate config keys documented" "$bad"; fi
if grep -qx 'distributed_type: FSDP' "$TMP/acc.yaml" && grep -qx 'num_machines: 2' "$TMP/acc.yaml" &&
    grep -qx 'num_processes: 16' "$TMP/acc.yaml" && grep -qx 'main_process_ip: node1' "$TMP/acc.yaml" &&
    grep -qx '  fsdp_sharding_strategy: FULL_SHARD' "$TMP/acc.yaml"; then
    ok "plan: accelerate config for 2 machines, FSDP full shard"
else
    fail "plan: accelerate config for 2 machines, FSDP full shard" "$(cat "$TMP/acc.yaml")"
fi
lines_of accelerate "$TMP/acc.txt" >"$TMP/acc.launch"
flags_ok "plan: accelerate launch flags documented" tests/data/plan/launcher-flags.txt "$TMP/acc.launch"
check_err "plan: --train with llamacpp" 2 "deepspeed or accelerate" "$VF" plan x --emit llamacpp --train
# A training job past one node takes whole nodes: whatever count fit finds for 405B full
# fine-tuning with ZeRO-3 on H100, the plan launches ceil(count / 8) nodes of 8.
"$VF" fit meta-llama/Meta-Llama-3.1-405B --train --gpu H100 --seq-len 2048 --grad-checkpoint full --json >"$TMP/t405.json"
n=$(jq .min_gpus "$TMP/t405.json")
nodes=$(((n + 7) / 8))
check_json "fit: 405B training: nodes of 8 for its count" 0 ".min_gpus > 8 and .min_nodes == $nodes" cat "$TMP/t405.json"
run "plan: 405B training takes whole nodes" 0 "$VF" plan meta-llama/Meta-Llama-3.1-405B --emit deepspeed --gpu H100 --seq-len 2048 --grad-checkpoint full &&
    if grep -q -- "--num_nodes $nodes --num_gpus 8" "$TMP/out" && grep -q "planning for $((nodes * 8)) x" "$TMP/err"; then
        ok "plan: 405B training takes whole nodes"
    else
        fail "plan: 405B training takes whole nodes" "$(cat "$TMP/err")"
    fi

# vLLM's start-up rules (vllm_layout.c): a layout it refuses is refused, with its reason, not planned
check_err "plan: vllm refuses tp 3 for 32 heads" 2 "attention heads (32) must be divisible by tensor parallel size (3)" \
    "$VF" plan Qwen/Qwen3-8B --emit vllm --tp 3 --gpu H100x3
check_err "plan: vllm FP8 experts of 768 at tp 4" 2 "weight = 192 is not divisible by weight quantization block_n = 128" \
    "$VF" plan Qwen/Qwen3-30B-A3B-FP8 --emit vllm --tp 4 --gpu H100x4
# expert parallel: the group is tp x dp, emitted as vLLM spells it
check_out "plan: vllm expert parallel" 0 "--tensor-parallel-size 2 --data-parallel-size 2 --enable-expert-parallel" \
    "$VF" plan Qwen/Qwen3-30B-A3B --emit vllm --tp 2 --gpus 4 --ep 4 --gpu H100x4
cp "$TMP/out" "$TMP/vep.txt"
flags_ok "plan: vllm expert-parallel flags documented" tests/data/plan/vllm-flags.txt "$TMP/vep.txt"
# fit never offers a layout vLLM refuses: asked for tensor parallel 3 it says
# why not; given three GPUs it runs Qwen3-8B as three pipeline stages
check_err "fit: vllm refuses tp 3 for 32 heads" 2 "must be divisible by tensor parallel size (3)" \
    "$VF" fit Qwen/Qwen3-8B --runtime vllm --gpu H100x3 --tp 3
check_json "fit: H100x3 spread as 3 stages, not tp 3" 0 '(.assumptions | tostring | test("tp 1, pp 3"))' \
    "$VF" estimate Qwen/Qwen3-8B --runtime vllm --gpu H100x3 --json
