# CLI manners: help, version, usage errors, exit codes.
. tests/cli/lib.sh

check_out "help" 0 "usage: vramfit" "$VF" --help
check_out "version" 0 "^vramfit [0-9]" "$VF" --version
check "no args is a usage error" 2 "$VF"
check_err "unknown command" 2 "not a command" "$VF" frobnicate
for c in inspect estimate fit gpus dtypes models load plan serve; do
    check_out "$c --help" 0 "usage: vramfit $c" "$VF" "$c" --help
done
check_err "inspect unknown option" 2 "unknown option" "$VF" inspect --bogus x
check_err "inspect missing model" 3 "no such file" "$VF" inspect /nonexistent/model.safetensors
check_out "dtypes table" 0 "^Q4_K  *256  *144  *4.5 " "$VF" dtypes
check_json "dtypes json Q4_K" 0 '.dtypes[] | select(.name=="Q4_K") | .bits_per_element == 4.5' "$VF" dtypes --json
check_json "dtypes json MXFP4" 0 '.dtypes[] | select(.name=="MXFP4") | .block_bytes == 17 and .gguf_id == 39' "$VF" dtypes --json
check_json "dtypes nf4-dq about 4.13" 0 '.load_formats[] | select(.name=="nf4-dq") | (.bits_per_weight*100|round) == 413' "$VF" dtypes --json
