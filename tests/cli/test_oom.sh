# vramfit oom: the command around the scanner (tests/unit/test_oom.c checks
# every figure of the corpus; here: input, output contract, exit status, fit).
. tests/cli/lib.sh
D=tests/data/oom
MIB=1048576
GIB=1073741824

check_json "oom: a log file, the fields of docs/design.md §4" 0 \
    '.engine == "pytorch" and .kind == "cuda_oom" and .gpu == 0 and .phase == "backward" and .errors == 1
     and (.requested_bytes | type) == "number" and (.needed_bytes == null) and (.available_bytes == null)
     and (.max_context == null) and (.advice | length) >= 1 and has("total_bytes") and has("free_bytes")
     and has("allocated_bytes") and has("reserved_unallocated_bytes")' \
    "$VF" oom "$D/torch2_backward.log" --json
# 226.00 MiB asked, as PyTorch prints it; stdin by default and with '-'
check_json "oom: standard input by default" 0 ".requested_bytes == 226 * $MIB" sh -c "\"$VF\" oom --json < $D/torch2_backward.log"
check_json "oom: '-' is standard input" 0 ".requested_bytes == 226 * $MIB" sh -c "\"$VF\" oom - --json < $D/torch2_backward.log"
check_out "oom: the table names engine, GPU and line" 0 "Out of memory: PyTorch (cuda_oom) on GPU 0, line 2" \
    "$VF" oom "$D/torch2_backward.log"
check_out "oom: the table gives the figures with units" 0 "asked for  *226.00 MiB" "$VF" oom "$D/torch2_backward.log"
check_out "oom: fragmentation advice names expandable_segments" 0 "expandable_segments:True" \
    "$VF" oom "$D/torch1_fragmented.log"
check_out "oom: vLLM's own length" 0 "--max-model-len 5088 fits" "$VF" oom "$D/vllm_v1_kv.log"
# (2.63 - 1.64) GiB more over a 24 GiB device from the default 0.9: 0.94125, said as 0.95
check_out "oom: --gpu gives the utilization that holds the length" 0 "--gpu-memory-utilization 0.95 holds 8192" \
    "$VF" oom "$D/vllm_v1_kv.log" --gpu 24GiB
check_json "oom: llama.cpp, the buffer's exact size" 0 \
    '.engine == "llamacpp" and .requested_bytes == 151851674624 and .buffer == "CUDA0" and .phase == "loading"' \
    "$VF" oom "$D/llama_load.log" --json
check_json "oom: repeats counted" 0 '.errors == 4 and .line == 2' "$VF" oom "$D/llama_repeats.log" --json
check_json "oom: no error is an answer" 0 '.found == false and .errors == 0 and .engine == null and .lines_read == 3' \
    sh -c "printf 'a\nb\nc\n' | \"$VF\" oom --json"
check_out "oom: no error, said" 0 "No out-of-memory error found (1 lines read)" sh -c "echo fine | \"$VF\" oom"
# --model: fit reruns on the message's device (15.70 GiB) with the run's knobs
check_json "oom --model: fit on the message's device" 0 \
    '.fit.gpu_bytes == .total_bytes and (.fit.suggestions | type) == "array" and (.fit | has("fits"))' \
    "$VF" oom "$D/torch2_backward.log" --json --model Qwen/Qwen3-8B --train --batch 4 --context 4096
check_json "oom --model: a --gpu among the knobs is the device" 0 \
    ".fit.gpu_bytes == 24 * $GIB and .fit.max_context > 0" \
    "$VF" oom "$D/vllm_v1_kv.log" --json --model Qwen/Qwen3-8B --runtime vllm --context 32768 --gpu 24GiB
check_json "oom --model: oom's own --gpu goes to fit" 0 ".fit.gpu_bytes == 40 * $GIB" \
    "$VF" oom "$D/vllm_v1_kv.log" --gpu 40GiB --json --model Qwen/Qwen3-8B --runtime vllm --context 32768
check_out "oom --model: the table then fit's" 0 "vramfit fit Qwen/Qwen3-8B for this run" \
    "$VF" oom "$D/vllm_v1_kv.log" --model Qwen/Qwen3-8B --runtime vllm --context 32768 --gpu 24GiB
check_err "oom --model: fit's own errors" 2 "unknown option" "$VF" oom "$D/vllm_v1_kv.log" --model Qwen/Qwen3-8B --bogus
check_err "oom: a log that cannot be read" 4 "cannot open" "$VF" oom /nonexistent/log
check_err "oom: unknown option" 2 "unknown option" "$VF" oom --bogus
check_err "oom: two logs" 2 "unexpected argument" "$VF" oom a b
check_err "oom: bad --gpu" 2 "gpu" "$VF" oom "$D/vllm_v1_kv.log" --gpu nonsense-gpu
check_err "oom: --units needs a value" 2 "needs a value" "$VF" oom --units
check_out "oom --help" 0 "usage: vramfit oom" "$VF" oom --help
# any bytes: a binary file is read through, nothing found, exit 0
head -c 300000 /dev/urandom >"$TMP/rand" 2>/dev/null || dd if=/dev/zero of="$TMP/rand" bs=1000 count=300 2>/dev/null
check_json "oom: random bytes" 0 '.bytes_read == 300000' "$VF" oom "$TMP/rand" --json
# a figure past what JSON's integers hold is said as the largest one, never negative
printf 'CUDA out of memory. Tried to allocate 9999999999999999999 TiB. GPU 0 has a total capacity of 1.00 GiB of which 0 bytes is free.\n' >"$TMP/huge"
check_json "oom: a huge figure saturates" 0 '.requested_bytes == 9223372036854775807 and .total_bytes == 1073741824' \
    "$VF" oom "$TMP/huge" --json
