# lib.sh — helpers for CLI tests. Each check prints "ok NAME" or "FAIL NAME: why".
# $VF is the vramfit binary under test; $TMP a scratch directory.
VF=${VF:-build/vramfit}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
REF=${VF_REFERENCE:-tests/reference}

ok() { echo "ok $1"; }

# grow_gguf NAME — a real GGUF rebuilt in $TMP from its saved header in
# $REF/llamacpp/heads: the header, then a hole up to NAME.head.size (sparse).
grow_gguf() {
    cp "$REF/llamacpp/heads/$1.head" "$TMP/$1" && truncate -s "$(cat "$REF/llamacpp/heads/$1.head.size")" "$TMP/$1" &&
        echo "$TMP/$1"
}
fail() { echo "FAIL $1: $2"; }

# run NAME EXPECTED_EXIT CMD... — runs CMD, keeps stdout in $TMP/out, stderr in $TMP/err
run() {
    name=$1
    want=$2
    shift 2
    "$@" >"$TMP/out" 2>"$TMP/err"
    got=$?
    if [ "$got" -ne "$want" ]; then
        fail "$name" "exit $got, expected $want; stderr: $(head -c 300 "$TMP/err")"
        return 1
    fi
    return 0
}

# check NAME EXPECTED_EXIT CMD... — just the exit status
check() {
    run "$@" && ok "$1"
}

# check_out NAME EXPECTED_EXIT PATTERN CMD... — exit status and stdout matching a grep pattern
check_out() {
    name=$1
    want=$2
    pat=$3
    shift 3
    run "$name" "$want" "$@" || return 1
    if grep -q -- "$pat" "$TMP/out"; then ok "$name"; else fail "$name" "stdout lacks '$pat'"; fi
}

# check_err NAME EXPECTED_EXIT PATTERN CMD... — exit status, one stderr line starting "vramfit: " and matching
check_err() {
    name=$1
    want=$2
    pat=$3
    shift 3
    run "$name" "$want" "$@" || return 1
    lines=$(wc -l <"$TMP/err")
    if [ "$lines" -ne 1 ]; then fail "$name" "stderr has $lines lines: $(head -c 300 "$TMP/err")"; return 1; fi
    if ! grep -q '^vramfit: ' "$TMP/err"; then fail "$name" "stderr does not start with 'vramfit: '"; return 1; fi
    if grep -q -- "$pat" "$TMP/err"; then ok "$name"; else fail "$name" "stderr '$(cat "$TMP/err")' lacks '$pat'"; fi
}

# check_json NAME EXPECTED_EXIT JQ_EXPR CMD... — exit status and a jq expression that must be true
check_json() {
    name=$1
    want=$2
    expr=$3
    shift 3
    run "$name" "$want" "$@" || return 1
    if [ "$(jq -e "$expr" <"$TMP/out" 2>&1)" = "true" ]; then ok "$name"; else fail "$name" "jq '$expr' not true on: $(head -c 300 "$TMP/out")"; fi
}
