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
# every command takes its options before or after MODEL, and names an option that lacks its value
L3=$REF/models/meta-llama__Meta-Llama-3-8B.json
for c in inspect estimate fit plan load; do
    case $c in
    fit) extra="--gpu H100" ;;
    plan) extra="--gpu H100 --emit vllm" ;;
    *) extra= ;;
    esac
    # shellcheck disable=SC2086
    [ "$c" = load ] || check_json "$c: options after MODEL" 0 'type == "object"' "$VF" "$c" "$L3" $extra --json
    check_err "$c: option without its value" 2 "option '--units' needs a value" "$VF" "$c" "$L3" --units
done
# (parsed: the options are taken, then the config-only model is refused)
check_err "load: options after MODEL" 3 "no tensor data" "$VF" load "$L3" --device null --json
check_err "models: option without its value" 2 "option '--family' needs a value" "$VF" models --family
check_err "serve: option without its value" 2 "option '--addr' needs a value" "$VF" serve --addr
check_err "dtypes: no argument" 2 "unexpected argument 'x'" "$VF" dtypes --json x

# make without the build dependencies: one line naming the set-up (no compiler error)
env -u MAKEFLAGS -u MAKELEVEL PKG_CONFIG_LIBDIR=/nonexistent PKG_CONFIG_PATH= make -n all >"$TMP/mk.out" 2>&1
if [ $? -ne 0 ] && [ "$(wc -l <"$TMP/mk.out")" -eq 1 ] && grep -q "make deps" "$TMP/mk.out"; then
    ok "make without dependencies names make deps"
else
    fail "make without dependencies names make deps" "$(head -3 "$TMP/mk.out")"
fi
