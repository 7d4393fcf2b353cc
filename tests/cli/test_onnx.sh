# Networks by their graph (.onnx): inspect, estimate, fit, sweep, refusals.
# Expected figures come from tests/reference/torch-cnn (README.md and
# results.json, PyTorch's own measurements) and from the GPU catalog.
. tests/cli/lib.sh
CNN="$REF/torch-cnn/models"
cp "$CNN/resnet18.onnx" "$TMP/" && truncate -s "$(cat "$CNN/resnet18.weights.size")" "$TMP/resnet18.weights"
"$BUILD/tests/gen_onnx" "$TMP" || fail "onnx: graphs written" "gen_onnx failed"
R18="$TMP/resnet18.onnx"
R50="$TMP/resnet50.onnx"

# inspect: results.json resnet18 onnx_initializer_bytes 46,723,488; 20 Conv nodes; the batch symbol
check_json "onnx: inspect bytes exact" 0 '.format == "onnx" and .bytes == 46723488' "$VF" inspect --json "$R18"
check_json "onnx: inspect inputs and symbols" 0 \
    '.graph.opset == 14 and .graph.inputs[0].name == "input" and .graph.inputs[0].dims == ["batch", 3, 224, 224]' \
    "$VF" inspect --json "$R18"
check_json "onnx: inspect histogram" 0 '.graph.operators.Conv == 20 and .graph.operators.Gemm == 1' \
    "$VF" inspect --json "$R18"
check_json "onnx: the weights are never read" 0 \
    ".graph.external_bytes > 46000000 and .graph.bytes_read <= $(wc -c <"$R18")" "$VF" inspect --json "$R18"
check_out "onnx: inspect table" 0 "opset 14" "$VF" inspect "$R18"

# ResNet-50 (README: 25,557,032 params = 102,228,128 B; buffers 212,904 B of which
# num_batches_tracked 53 x 8 B are not in a graph; tensor-level peak 10,436,608 B a sample)
check_json "onnx: resnet50 parameters" 0 '.params == 25557032' "$VF" inspect --json "$R50"
W50=$((102228128 + 212904 - 424))
check_json "onnx: resnet50 batch 32 weights and activations" 0 \
    ".components.weights == $W50 and .components.activations == $((32 * (10436608 + 602112)))" \
    "$VF" estimate "$R50" --batch 32 --runtime generic --json
check_out "onnx: resnet50 estimate shows the components" 0 "activations" "$VF" estimate "$R50" --batch 32
# the runtime a graph is shown under: a plain PyTorch process by default, generic when asked
check_json "onnx: default runtime is named pytorch" 0 '.runtime == "pytorch" and .assumptions.runtime == "pytorch"' \
    "$VF" estimate "$R50" --json
check_out "onnx: the table names it too" 0 "runtime pytorch" "$VF" estimate "$R50"
check_out "onnx: fit names it" 0 "runtime pytorch" "$VF" fit "$R50" --gpu T4
check_json "onnx: --runtime generic is named generic" 0 '.runtime == "generic"' "$VF" estimate "$R50" --runtime generic --json
check_json "onnx: --runtime pytorch is the PyTorch runtime" 0 '.runtime == "pytorch" and .components.overhead > 0' \
    "$VF" estimate "$R50" --runtime pytorch --json
# fit: the largest batch on a T4, derived by hand: weights + batch x (peak + input per sample)
# + the margin, one allocator segment for the largest tensor (conv1's and layer1's outputs,
# 64 x 112 x 112 = 256 x 56 x 56 = 802,816 floats, 3,211,264 B a sample) rounded up to 2 MiB,
# must fit in the T4's memory
T4=$("$VF" gpus --json | jq '.gpus[] | select(.name == "T4") | .memory_bytes')
WANT=$(((T4 - W50) / (10436608 + 602112)))
while [ $((W50 + WANT * (10436608 + 602112) + (WANT * 3211264 + 2097151) / 2097152 * 2097152)) -gt "$T4" ]; do
    WANT=$((WANT - 1))
done
check_json "onnx: fit --gpu T4 largest batch" 0 ".fits and .max_batch == $WANT" \
    "$VF" fit "$R50" --gpu T4 --runtime generic --json
check_out "onnx: fit --gpu T4 table" 0 "Largest batch that fits" "$VF" fit "$R50" --gpu T4
check_json "onnx: sweep over batch is linear" 0 \
    '[.points[] | .per_gpu_bytes] as $p | ($p[1] - $p[0]) * 3 == ($p[2] - $p[1])' \
    "$VF" sweep "$R50" --over batch --values 1,2,5 --runtime generic --json
check_json "onnx: training saved activations (README: 85,523,876 B at batch 1, image apart)" 0 \
    '.components.activations - (85523876 + 602112 + 8) | fabs < 85523876 * 0.03' \
    "$VF" estimate "$R50" --train --precision fp32 --runtime generic --json

# refusals: one line, the exit codes of docs/design.md §2
check_err "onnx: --input for a missing input" 2 "no input named" "$VF" estimate "$R18" --input nope=1x3x224x224
check_err "onnx: --input against a fixed dim" 2 "dim 2 is 224" "$VF" estimate "$R18" --input input=1x3x100x224
check_err "onnx: --input malformed" 2 "NAME=DIMS" "$VF" estimate "$R18" --input input
check_err "onnx: tensor parallel refused" 3 "not modelled" "$VF" estimate "$R18" --tp 2
head -c 200 "$R18" >"$TMP/cut.onnx"
check_err "onnx: a truncated graph" 3 "onnx:" "$VF" inspect "$TMP/cut.onnx"
