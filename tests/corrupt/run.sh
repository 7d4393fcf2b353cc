#!/bin/sh
# The corrupt-input matrix: every handcrafted bad model (written by
# gen_corrupt into a temp dir) must make `vramfit inspect` exit with the
# status of its class (3 bad input) and print exactly one stderr line
# "vramfit: PATH: reason" — no crash, no sanitizer report.
# Prints "ok NAME" or "FAIL NAME: why" per case.
B=${BUILD:-build}
VF=${VF:-$B/vramfit}
GEN=$B/tests/gen_corrupt
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
if ! "$GEN" "$D"; then
    echo "FAIL generate: $GEN $D failed"
    exit 1
fi

# NAME | what to inspect | PATH the error names | exit | reason (grep pattern)
while IFS='|' read -r name arg epath want pat; do
    case "$name" in '' | '#'*) continue ;; esac
    "$VF" inspect "$D/$arg" >"$D/.out" 2>"$D/.err"
    got=$?
    lines=$(wc -l <"$D/.err")
    first=$(head -n 1 "$D/.err" | head -c 300)
    if [ "$got" -ne "$want" ]; then
        echo "FAIL $name: exit $got, expected $want; stderr: $first"
    elif [ "$lines" -ne 1 ]; then
        echo "FAIL $name: stderr has $lines lines: $(head -c 300 "$D/.err" | tr '\n' '|')"
    elif ! grep -q "^vramfit: $D/$epath: " "$D/.err"; then
        echo "FAIL $name: stderr does not start 'vramfit: $epath: ': $first"
    elif ! grep -q -e "$pat" "$D/.err"; then
        echo "FAIL $name: reason lacks '$pat': $first"
    elif [ -s "$D/.out" ]; then
        echo "FAIL $name: printed to stdout on error"
    else
        echo "ok $name"
    fi
done <<'CASES'
# safetensors framing
garbage bytes|garbage.safetensors|garbage.safetensors|3|exceeds the 100000000-byte limit
empty file|empty.safetensors|empty.safetensors|3|0 bytes, too small
file under 8 bytes|short.safetensors|short.safetensors|3|5 bytes, too small
header length past the end|len_past_end.safetensors|len_past_end.safetensors|3|runs past the end
header length over the cap|len_over_cap.safetensors|len_over_cap.safetensors|3|100000001 exceeds
header length 2^64-1|len_2_64.safetensors|len_2_64.safetensors|3|exceeds the 100000000-byte limit
header length zero|len_zero.safetensors|len_zero.safetensors|3|header is empty
header not json|hdr_not_json.safetensors|hdr_not_json.safetensors|3|invalid json
header not an object|hdr_not_object.safetensors|hdr_not_object.safetensors|3|not a json object
header json truncated|hdr_truncated_json.safetensors|hdr_truncated_json.safetensors|3|premature end
header invalid utf-8|hdr_bad_utf8.safetensors|hdr_bad_utf8.safetensors|3|not valid utf-8
header overlong utf-8|hdr_overlong_utf8.safetensors|hdr_overlong_utf8.safetensors|3|not valid utf-8
header nul byte|hdr_nul_byte.safetensors|hdr_nul_byte.safetensors|3|invalid json
header 10000 nested arrays|hdr_deep_nesting.safetensors|hdr_deep_nesting.safetensors|3|nested deeper
duplicate tensor key|hdr_dup_key.safetensors|hdr_dup_key.safetensors|3|duplicate object key
# tensor entries
entry not an object|entry_not_object.safetensors|entry_not_object.safetensors|3|not an object
empty tensor name|empty_name.safetensors|empty_name.safetensors|3|empty name
unknown dtype|dtype_unknown.safetensors|dtype_unknown.safetensors|3|unknown dtype 'F7'
dtype missing|dtype_missing.safetensors|dtype_missing.safetensors|3|missing dtype
dtype lower case|dtype_lowercase.safetensors|dtype_lowercase.safetensors|3|unknown dtype 'f32'
shape not an array|shape_not_array.safetensors|shape_not_array.safetensors|3|missing shape
negative dimension|shape_negative.safetensors|shape_negative.safetensors|3|non-negative integers
float dimension|shape_float.safetensors|shape_float.safetensors|3|non-negative integers
string dimension|shape_string.safetensors|shape_string.safetensors|3|non-negative integers
shape product overflow|shape_overflow.safetensors|shape_overflow.safetensors|3|element count overflows
byte size overflow|bytes_overflow.safetensors|bytes_overflow.safetensors|3|byte size overflows
too many dimensions|shape_too_many_dims.safetensors|shape_too_many_dims.safetensors|3|18 dimensions
dimension 2^64|shape_dim_2_64.safetensors|shape_dim_2_64.safetensors|3|too big integer
F4 odd element count|f4_odd_elements.safetensors|f4_odd_elements.safetensors|3|do not fill whole bytes
F6 partial block|f6_partial_block.safetensors|f6_partial_block.safetensors|3|do not fill whole bytes
# data offsets
offsets overlapping|off_overlap.safetensors|off_overlap.safetensors|3|(overlap)
offsets gapped|off_gap.safetensors|off_gap.safetensors|3|(gap)
offsets not from zero|off_not_from_zero.safetensors|off_not_from_zero.safetensors|3|expected 0 (gap)
offsets past the end|off_past_end.safetensors|off_past_end.safetensors|3|runs past the end of the file
offsets reversed|off_reversed.safetensors|off_reversed.safetensors|3|end before they begin
offset 1.5|off_fraction.safetensors|off_fraction.safetensors|3|two non-negative integers
offset "12"|off_string.safetensors|off_string.safetensors|3|two non-negative integers
offset 1e3|off_exponent.safetensors|off_exponent.safetensors|3|two non-negative integers
offsets beyond 2^63|off_beyond_2_63.safetensors|off_beyond_2_63.safetensors|3|too big integer
offsets near 2^63|off_int64_max.safetensors|off_int64_max.safetensors|3|expected 0 (gap)
offset negative|off_negative.safetensors|off_negative.safetensors|3|two non-negative integers
three offsets|off_three_values.safetensors|off_three_values.safetensors|3|two non-negative integers
offsets missing|off_missing.safetensors|off_missing.safetensors|3|two non-negative integers
offsets length differ from bytes|off_len_mismatch.safetensors|off_len_mismatch.safetensors|3|span 4 bytes, shape and dtype need 8
trailing bytes after data|trailing_bytes.safetensors|trailing_bytes.safetensors|3|covers 8 of 9 bytes
# metadata, names
non-string __metadata__ value|meta_int_value.safetensors|meta_int_value.safetensors|3|value 'step' is not a string
__metadata__ not an object|meta_not_object.safetensors|meta_not_object.safetensors|3|__metadata__ is not an object
newline in a quoted name|name_newline.safetensors|name_newline.safetensors|3|unknown dtype 'F9'
# sharded checkpoints (opened by their directory)
index names a missing shard|ix_missing_shard|ix_missing_shard/model.safetensors.index.json|3|'model-00002-of-00002.safetensors' named in weight_map is missing
index without weight_map|ix_no_weight_map|ix_no_weight_map/model.safetensors.index.json|3|no weight_map object
index weight_map an array|ix_weight_map_array|ix_weight_map_array/model.safetensors.index.json|3|no weight_map object
index weight_map empty|ix_empty_weight_map|ix_empty_weight_map/model.safetensors.index.json|3|weight_map is empty
index shard name with ../|ix_dotdot|ix_dotdot/model.safetensors.index.json|3|does not name a shard file
index shard name absolute|ix_absolute|ix_absolute/model.safetensors.index.json|3|does not name a shard file
index shard name not a string|ix_shard_not_string|ix_shard_not_string/model.safetensors.index.json|3|does not name a shard file
index tensor absent from shards|ix_tensor_absent|ix_tensor_absent/model.safetensors.index.json|3|tensor 'w' in weight_map is in no shard
index maps a tensor to the wrong shard|ix_wrong_shard|ix_wrong_shard/model.safetensors.index.json|3|mapped to 'b.safetensors' but stored elsewhere
tensor in two shards|ix_tensor_twice|ix_tensor_twice/model.safetensors.index.json|3|stored in two shards
index not json|ix_not_json|ix_not_json/model.safetensors.index.json|3|invalid json
index duplicate key|ix_dup_key|ix_dup_key/model.safetensors.index.json|3|duplicate object key
index opened by its path|ix_missing_shard/model.safetensors.index.json|ix_missing_shard/model.safetensors.index.json|3|is missing
index with a corrupt shard|ix_bad_shard|ix_bad_shard/model.safetensors|3|runs past the end of the file
index shard is a directory|ix_shard_is_dir|ix_shard_is_dir/model.safetensors.index.json|3|is missing
# directories
empty directory|dir_empty|dir_empty|3|no model files
directory without model files|dir_no_model|dir_no_model|3|no model files
directory with corrupt weights|dir_bad_weights|dir_bad_weights/model.safetensors|3|runs past the end of the file
directory with invalid config.json|dir_bad_config|dir_bad_config/config.json|3|invalid json
# config.json
config invalid json|cfg/invalid.json|cfg/invalid.json|3|invalid json
config an array|cfg/array.json|cfg/array.json|3|not a json object
config a string|cfg/string.json|cfg/string.json|3|expected near
config empty file|cfg/empty.json|cfg/empty.json|3|invalid json
config invalid utf-8|cfg/bad_utf8.json|cfg/bad_utf8.json|3|not valid utf-8
config duplicate key|cfg/dup_key.json|cfg/dup_key.json|3|duplicate object key
config 10000 nested arrays|cfg/deep.json|cfg/deep.json|3|nested deeper
CASES
