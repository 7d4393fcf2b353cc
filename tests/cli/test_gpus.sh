# vramfit gpus: the catalog and --local.
. tests/cli/lib.sh

GIB=1073741824
check_json "gpus: at least 50" 0 '.gpus | length >= 50' "$VF" gpus --json
check_json "gpus: every row has memory, bandwidth and a source" 0 \
    'all(.gpus[]; .memory_bytes > 0 and .bandwidth_gbs > 0 and (.source | length) > 0 and (.memory_basis | length) > 0)' \
    "$VF" gpus --json
check_json "gpus: names unique" 0 '[.gpus[].name] | length == (unique | length)' "$VF" gpus --json
# measured.csv A1a: vLLM reports an H100 as 79.18 GiB; A4: an A10G as 22.30 GiB
check_json "gpus: H100 as the device reports it" 0 \
    ".gpus[] | select(.name==\"H100 SXM 80GB\") | ((.memory_bytes - 79.18*$GIB) | fabs) < 1048576" "$VF" gpus --json
check_json "gpus: A10G as the device reports it" 0 \
    ".gpus[] | select(.name==\"A10G\") | ((.memory_bytes - 22.30*$GIB) | fabs) < 1048576" "$VF" gpus --json
for g in "T4" "V100 SXM2 16GB" "V100 SXM2 32GB" "A10" "A10G" "L4" "L40S" "A100 PCIe 40GB" "A100 SXM 40GB" \
    "A100 PCIe 80GB" "A100 SXM 80GB" "H100 PCIe 80GB" "H100 SXM 80GB" "H100 NVL 94GB" "H200 SXM 141GB" "B200" \
    "B300" "GH200 96GB" "GB200" "MI210" "MI250X GCD" "MI300X" "MI325X" "MI355X" "RTX A4000" "RTX A5000" \
    "RTX A6000" "RTX 6000 Ada" "RTX PRO 6000 Blackwell" "RTX 2080 Ti" "RTX 3090" "RTX 4090" "RTX 5090"; do
    check_json "gpus: has $g" 0 "any(.gpus[]; .name == \"$g\")" "$VF" gpus --json
done
check_json "gpus: Apple rows give the GPU's share of unified memory" 0 \
    '[.gpus[] | select(.vendor=="apple")] | length >= 5 and all(.[]; .memory_basis | test("2/3|3/4"))' "$VF" gpus --json
check_out "gpus: table" 0 "H100 SXM 80GB  *79.18 GiB" "$VF" gpus
check_out "gpus: units gb" 0 "H100 SXM 80GB  *85.02 GB" "$VF" gpus --units gb
check "gpus --local: none found is a normal answer" 0 "$VF" gpus --local
check_json "gpus --local --json" 0 '.local | type == "array"' "$VF" gpus --local --json
check_err "gpus: unknown option" 2 "unknown option" "$VF" gpus --bogus
check_err "gpus: stray argument" 2 "unexpected argument" "$VF" gpus H100
check_err "gpus: bad units" 2 "units" "$VF" gpus --units furlongs

# --local through the loader's fake NVML (tests/fake/fake_nvml.c): devices with
# total, used and free memory; a driver that fails to start is "none found", exit 0.
FAKE_NVML=${BUILD:-build}/fake/libnvidia-ml.so.1
if [ -f "$FAKE_NVML" ]; then
    export VF_NVML_LIBRARY=$FAKE_NVML
    check_json "gpus --local: fake devices" 0 \
        '(.local | length) == 2 and all(.local[]; .total_bytes == 24*1073741824 and .used_bytes == 1024*1048576 and .free_bytes == 23*1073741824)' \
        env FAKE_NVML_DEVICES=2 FAKE_CUDA_TOTAL_MB=24576 FAKE_NVML_USED_MB=1024 "$VF" gpus --local --json
    check_out "gpus --local: table" 0 "Fake GPU 1 .*24.00 GiB .*1.00 GiB .*23.00 GiB" \
        env FAKE_NVML_DEVICES=2 FAKE_CUDA_TOTAL_MB=24576 FAKE_NVML_USED_MB=1024 "$VF" gpus --local
    check_out "gpus --local: no driver is none found" 0 "No local GPUs found" env FAKE_NVML_FAIL_INIT=1 "$VF" gpus --local
    check_err "fit --local: no devices" 5 "no gpus found" env FAKE_NVML_FAIL_INIT=1 "$VF" fit x --local
    unset VF_NVML_LIBRARY
fi
# A throughput the catalog lacks (0 in the JSON: unknown or unsupported) is a dash, never 0.0:
# A10G's fp16 (the catalog has no figure) and the RTX 2060's fp8 (Turing has no fp8).
check_out "gpus: an unknown TFLOPS figure is a dash" 0 "A10G  *22.30 GiB  *600  *—  *—  *—  *—" "$VF" gpus
check_out "gpus: a known one next to an unknown" 0 "RTX 2060  *5.76 GiB  *336  *25.8  *—  *—  *103.2" "$VF" gpus
if "$VF" gpus | grep -q ' 0\.0 '; then fail "gpus: no 0.0 throughput" "$("$VF" gpus | grep ' 0\.0 ' | head -1)"; else ok "gpus: no 0.0 throughput"; fi

# Unified-memory devices (data/gpus.json "unified"). Figures from their sources, not the code:
# GB10 reports 121.69 GiB (DGX Spark logs: llamastash/llamastash#80, MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47);
# a 128 GB Strix Halo with its TTM limit at 120 GiB reports 122880 MiB from hipMemGetInfo (ggml-org/llama.cpp#20472);
# Jetson AGX Orin 64GB is our rule, 64 GiB x 121.69/128 = 60.845 GiB; Thor 128 x 121.69/128 = 121.69 GiB.
check_json "gpus: GB10 as the device reports it" 0 \
    ".gpus[] | select(.name==\"GB10\") | ((.memory_bytes - 121.69*$GIB) | fabs) < 1048576" "$VF" gpus --json
check_json "gpus: Strix Halo as hipMemGetInfo reports it" 0 \
    ".gpus[] | select(.name==\"Ryzen AI Max+ 395 128GB\") | .memory_bytes == 122880*1048576" "$VF" gpus --json
check_json "gpus: Jetson AGX Orin 64GB by our rule" 0 \
    ".gpus[] | select(.name==\"Jetson AGX Orin 64GB\") | ((.memory_bytes - 60.845*$GIB) | fabs) < 2*1048576 and (.memory_basis | test(\"ours\"))" "$VF" gpus --json
check_json "gpus: Jetson AGX Thor 128GB by our rule" 0 \
    ".gpus[] | select(.name==\"Jetson AGX Thor 128GB\") | ((.memory_bytes - 121.69*$GIB) | fabs) < 1048576 and (.memory_basis | test(\"ours\"))" "$VF" gpus --json
# vLLM's UMA list is SM 8.7 (Orin), 11.0 (Thor), 12.1 (Spark) (vllm/utils/mem_utils.py); llama.cpp reads MemAvailable for an integrated GPU
for g in "GB10:12.1" "Jetson AGX Orin 64GB:8.7" "Jetson AGX Thor 128GB:11.0"; do
    check_json "gpus: ${g%%:*} gives vLLM's and llama.cpp's rule" 0 \
        ".gpus[] | select(.name==\"${g%%:*}\") | (.unified.vllm | test(\"SM ${g##*:}\")) and (.unified.llamacpp | test(\"MemAvailable\")) and (.unified.assumed | length) > 0" \
        "$VF" gpus --json
done
check_json "gpus: every Apple row gives Metal's rule" 0 \
    '[.gpus[] | select(.vendor=="apple")] | all(.[]; .unified.llamacpp | test("recommendedMaxWorkingSetSize"))' "$VF" gpus --json
check_json "gpus: a device with its own memory has no unified rule" 0 \
    '[.gpus[] | select(.name=="H100 SXM 80GB" or .name=="RTX 4090" or .name=="GH200 96GB")] | length == 3 and all(.[]; has("unified") | not)' \
    "$VF" gpus --json
# GH200: cudaMemGetInfo reports its HBM; the Grace LPDDR5X over NVLink-C2C is not device memory
check_json "gpus: GH200 counts only its HBM" 0 \
    ".gpus[] | select(.name==\"GH200 96GB\") | ((.memory_bytes - 95.13*$GIB) | fabs) < 0.01*$GIB and (.note | test(\"C2C\"))" "$VF" gpus --json
for g in GB10 "DGX Spark" "Jetson AGX Orin" "Jetson AGX Thor" "Strix Halo" "Ryzen AI Max+ 395"; do
    check_out "fit --gpu $g: vLLM's rule shown" 0 "memory shared with the CPU: vLLM" "$VF" fit Qwen/Qwen3-8B --gpu "$g" --runtime vllm --gpu-util 0.8
    check_out "fit --gpu $g: the OS share assumed" 0 "assumed: " "$VF" fit Qwen/Qwen3-8B --gpu "$g" --runtime llama.cpp
done
check_out "fit --gpu GB10: llama.cpp's rule" 0 "shared with the CPU: llama.cpp CUDA .*MemAvailable" \
    "$VF" fit Qwen/Qwen3-8B --gpu GB10 --runtime llama.cpp
check_json "fit --gpu GB10 --json: the rule" 0 '.unified_memory.rule | test("SM 12.1")' \
    "$VF" fit Qwen/Qwen3-8B --gpu GB10 --runtime vllm --gpu-util 0.8 --json
check_out "estimate --gpu GB10: the rule in the assumptions" 0 "gpu_memory = GB10, shared with the CPU: vLLM" \
    "$VF" estimate Qwen/Qwen3-8B --gpu GB10 --runtime vllm
check_json "fit --gpu H100: no unified rule" 0 'has("unified_memory") | not' "$VF" fit Qwen/Qwen3-8B --gpu H100 --runtime vllm --json
if "$VF" estimate Qwen/Qwen3-8B --gpu H100 --runtime vllm | grep -q "shared with the CPU"; then
    fail "estimate --gpu H100: no unified assumption" "shared with the CPU"
else ok "estimate --gpu H100: no unified assumption"; fi
# A device with memory of its own is never told to buy one that shares it: Qwen3-32B at 98,304 tokens
# (transformers) needs ~110 GiB, so the smallest bigger device is the 120 GiB Strix Halo, offered only to
# a unified device; an H100 NVL is offered the H200.
check_json "fit --gpu H100 NVL: a GPU with its own memory offered" 1 \
    '[.suggestions[].change] | any(.[]; . == "H200 SXM 141GB") and all(.[]; test("GB10|Jetson|Ryzen|Apple") | not)' \
    "$VF" fit Qwen/Qwen3-32B --gpu "H100 NVL" --runtime transformers --context 98304 --json
check_json "fit --gpu Jetson AGX Orin: a unified device offered" 1 \
    '[.suggestions[].change] | any(.[]; . == "Ryzen AI Max+ 395 128GB")' \
    "$VF" fit Qwen/Qwen3-32B --gpu "Jetson AGX Orin" --runtime transformers --context 98304 --json
# vLLM's worker refuses to start when free memory (MemAvailable on SM 8.7/11.0/12.1) is below
# total x gpu_memory_utilization: on GB10 0.90 x 121.69 = 109.52 GiB > 101.3 GiB measured free at boot
# (MiaAI-Lab/GLM-5.3-Flash-EXL3-2x-DGX-Sparks#47: 0.87 never started, 0.82-0.83 did); 0.83 x 121.69 = 101.00 starts.
check_out "fit --gpu GB10: vLLM's default utilization does not start" 1 "would not start: free memory on GB10 .*--gpu-util 0.83 at most" \
    "$VF" fit Qwen/Qwen3-8B --gpu GB10 --runtime vllm
check_out "fit --gpu GB10: 0.87 does not start either" 1 "would not start: free memory on GB10" \
    "$VF" fit Qwen/Qwen3-8B --gpu GB10 --runtime vllm --gpu-util 0.87
check_out "fit --gpu GB10 --gpu-util 0.83: starts" 0 "Fits:   yes" "$VF" fit Qwen/Qwen3-8B --gpu GB10 --runtime vllm --gpu-util 0.83
check_out "fit --gpu Jetson AGX Thor: the same bound" 1 "would not start: free memory on Jetson AGX Thor" \
    "$VF" fit Qwen/Qwen3-8B --gpu "Jetson AGX Thor" --runtime vllm
# ROCm is not in vLLM's UMA list: free is hipMemGetInfo's, so no such refusal on a Strix Halo
check_out "fit --gpu Strix Halo: vLLM on ROCm starts at 0.90" 0 "Fits:   yes" "$VF" fit Qwen/Qwen3-8B --gpu "Strix Halo" --runtime vllm
