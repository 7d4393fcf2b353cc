# Corrupt GGUF files (tests/corrupt/gguf/cases.tsv, built by gen_gguf): each
# must give exit 3 and exactly one stderr line "vramfit: PATH: reason".
. tests/cli/lib.sh
GEN=${BUILD:-build}/tests/gen_gguf
if ! "$GEN" "$TMP/g"; then
    fail "gen_gguf" "could not build the corrupt files"
    exit 1
fi
n=0
while IFS='	' read -r name reason rule; do
    case "$name" in '#'* | '') continue ;; esac
    f="$TMP/g/$name.gguf"
    check_err "gguf corrupt: $name ($rule)" 3 "^vramfit: $f: .*$reason" "$VF" inspect "$f"
    n=$((n + 1))
done <tests/corrupt/gguf/cases.tsv
[ "$n" -ge 20 ] && ok "gguf corrupt: $n cases" || fail "gguf corrupt" "only $n cases read"
