# bench/serving_logs.py's rules on a constructed log set: a published figure
# within 3 % (Meta-Llama-3-8B's 14.96 GiB of weights, vLLM PR 10511) is
# expressed and safe; the same run with a need set above vramfit's and a KV
# pool set below it is flagged unsafe on each side; a "no-start" where
# vramfit starts is an unsafe verdict; an unnamed model and a fork are not
# expressed, with their reasons; each set is counted apart.
# llama.cpp: the run of llama.cpp issue 5619 (mistral-7b-instruct-v0.2.Q5_K_M
# on 8 NVIDIA GPUs of a kind the log does not name, all 33 layers offloaded:
# CPU 85.94, CUDA0 747.03, CUDA1 580.09 MiB) is named from its GGUF file (the
# text after the first dot is not the model); with the kind unstated only the
# host buffer is compared; the same figures on 8 named identical cards (the
# file type from the file name) are compared per device; a fork and a split
# mode vramfit does not model are not expressed, with their reasons.
# node-llama-cpp's download name (hf_{user}_{file}) of a full fine-tune whose
# model card names its base (tobil/qmd-query-expansion-1.7B: Qwen/Qwen3-1.7B),
# on a Jetson Orin of an unnamed member, is that base on the family: its KV
# buffer, 448.00 MiB as node-llama-cpp issue 560 logs (28 layers x 4096 cells x
# 1024 K and V values x 2 bytes), is compared.
. tests/cli/lib.sh
H='run_id	set	source_url	vllm_version	gpu	gpu_count	tp	pp	model	dtype_or_quant	max_model_len	max_num_seqs	max_num_batched_tokens	gpu_memory_utilization	enforce_eager	kv_cache_dtype	other_knobs	figure	value	unit	quote'
K='H100 80GB	1	1	1	meta-llama/Meta-Llama-3-8B	unknown	default	default	default	0.90	default	default	none'
mkdir -p "$TMP/logs"
{
    echo "$H"
    printf 'a	calibration	u	0.6.4	%s	weights_gib	14.96	GiB	q\n' "$K"
    printf 'b	calibration	u	0.6.4	%s	weights_gib	20.00	GiB	q\n' "$K"
    printf 'b	calibration	u	0.6.4	%s	kv_tokens	1000	tokens	q\n' "$K"
    printf 'b	calibration	u	0.6.4	%s	oom	no-start		q\n' "$K"
    printf 'c	calibration	u	0.6.4	H100	1	1	1	unknown	unknown	default	default	default	0.90	default	default	none	weights_gib	1	GiB	q\n'
    printf 'd	verification	u	unknown (ROCm/vllm fork)	%s	weights_gib	14.96	GiB	q\n' "$K"
} >"$TMP/logs/vllm.tsv"
L='unknown (2024-02)	CUDA'
A='unknown	unknown	unknown	all (33/33)	n/a	f16	f16	none	no	no	default	none'
{
    head -1 tests/reference/serving-logs/llamacpp.tsv
    printf 'm	calibration	u	%s	8 NVIDIA GPUs (CUDA0-7)	mistral-7b-instruct-v0.2.Q5_K_M.gguf	Q5_K_M	%s	host_model_mib	CPU	85.94	MiB	q\n' "$L" "$A"
    printf 'm	calibration	u	%s	8 NVIDIA GPUs (CUDA0-7)	mistral-7b-instruct-v0.2.Q5_K_M.gguf	Q5_K_M	%s	cuda_model_mib	CUDA0	747.03	MiB	q\n' "$L" "$A"
    printf 'n	verification	u	%s	8x RTX 3090	mistral-7b-instruct-v0.2.Q5_K_M.gguf	unknown	%s	cuda_model_mib	CUDA0	747.03	MiB	q\n' "$L" "$A"
    printf 'n	verification	u	%s	8x RTX 3090	mistral-7b-instruct-v0.2.Q5_K_M.gguf	unknown	%s	cuda_model_mib	CUDA1	580.09	MiB	q\n' "$L" "$A"
    printf 'f	verification	u	ik_llama.cpp fork (2025-02)	CUDA	RTX 3090	mistral-7b-instruct-v0.2.Q5_K_M.gguf	Q5_K_M	%s	host_model_mib	CPU	85.94	MiB	q\n' "$A"
    printf 's	verification	u	%s	2x RTX 3090	mistral-7b-instruct-v0.2.Q5_K_M.gguf	Q5_K_M	unknown	unknown	unknown	all	n/a	f16	f16	none	no	no	-sm tensor	none	host_model_mib	CPU	85.94	MiB	q\n' "$L"
    printf 'j	verification	u	node-llama-cpp bundled llama.cpp (2026-02)	CUDA	Jetson Orin	hf_tobil_qmd-query-expansion-1.7B-q4_k_m.gguf	Q4_K_M	4096	unknown	512	unknown	on	f16	f16	none	no	no	n/a	none	kv_mib	CUDA0	448.00	MiB	q\n'
} >"$TMP/logs/llamacpp.tsv"

if run "serving_logs: scores the constructed set" 0 env VF="$VF" SERVING_LOGS="$TMP/logs" /usr/bin/python3 bench/serving_logs.py --why --rows; then
    check() { grep -qF -- "$2" "$TMP/out" && ok "serving_logs: $1" || fail "serving_logs: $1" "no '$2' in: $(head -c 600 "$TMP/out")"; }
    check "calibration counted" "calibration: 5 figures expressed, 2 not; 3 unsafe"
    check "a need below the log is unsafe" "unsafe: vllm b weights_gib"
    check "a pool above the log is unsafe" "unsafe: vllm b kv_tokens"
    check "a false start is unsafe" "unsafe: vllm b oom: vramfit says it starts"
    check "the published figure is not unsafe" "worst over (vramfit above the log):  +0.0 %"
    check "an unnamed model says why" "not expressed (1): model not in the catalog: unknown"
    check "verification apart" "verification: 3 figures expressed, 3 not; 0 unsafe"
    check "llama.cpp: the model from its GGUF file name" "llama.cpp m host_model_mib CPU"
    check "llama.cpp: an unnamed GPU kind compares host buffers only" "not expressed (1): GPU kind not stated (only host buffers compared)"
    check "llama.cpp: a fork says why" "not expressed (1): fork build: ik_llama.cpp fork"
    check "llama.cpp: -sm tensor says why" "not expressed (1): split mode not modelled: -sm tensor"
    grep -q "unsafe: llama.cpp" "$TMP/out" && fail "serving_logs: llama.cpp published buffers are safe" "$(grep 'unsafe: llama.cpp' "$TMP/out")" ||
        ok "serving_logs: llama.cpp published buffers are safe"
    check "a fork says why" "fork or plugin build"
    check "llama.cpp: a fine-tune's base from its card, a GPU family" "llama.cpp j kv_mib CUDA0"
    grep -q "unsafe: vllm a " "$TMP/out" && fail "serving_logs: within 3 % is safe" "run a flagged" || ok "serving_logs: within 3 % is safe"
fi
