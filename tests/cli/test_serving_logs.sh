# bench/serving_logs.py's rules on a constructed log set: a published figure
# within 3 % (Meta-Llama-3-8B's 14.96 GiB of weights, vLLM PR 10511) is
# expressed and safe; the same run with a need set above vramfit's and a KV
# pool set below it is flagged unsafe on each side; a "no-start" where
# vramfit starts is an unsafe verdict; an unnamed model and a fork are not
# expressed, with their reasons; each set is counted apart.
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
head -1 tests/reference/serving-logs/llamacpp.tsv >"$TMP/logs/llamacpp.tsv"

if run "serving_logs: scores the constructed set" 0 env VF="$VF" SERVING_LOGS="$TMP/logs" /usr/bin/python3 bench/serving_logs.py --why; then
    check() { grep -qF -- "$2" "$TMP/out" && ok "serving_logs: $1" || fail "serving_logs: $1" "no '$2' in: $(head -c 600 "$TMP/out")"; }
    check "calibration counted" "calibration: 4 figures expressed, 1 not; 3 unsafe"
    check "a need below the log is unsafe" "unsafe: vllm b weights_gib"
    check "a pool above the log is unsafe" "unsafe: vllm b kv_tokens"
    check "a false start is unsafe" "unsafe: vllm b oom: vramfit says it starts"
    check "the published figure is not unsafe" "worst over (vramfit above the log):  +0.0 %"
    check "an unnamed model says why" "not expressed (1): model not in the catalog: unknown"
    check "verification apart" "verification: 0 figures expressed, 1 not; 0 unsafe"
    check "a fork says why" "fork or plugin build"
    grep -q "unsafe: vllm a " "$TMP/out" && fail "serving_logs: within 3 % is safe" "run a flagged" || ok "serving_logs: within 3 % is safe"
fi
