# The man page against the program: every command in 'vramfit --help' has a
# ".B vramfit CMD" synopsis line, every long option a '--help' prints is in
# the page, the page renders without warnings, and each EXAMPLES line that
# needs no file, GPU or network runs and exits as its text says; and
# docs/accuracy.md is what bench/accuracy.sh --markdown prints now.
. tests/cli/lib.sh
MAN=docs/vramfit.1

# has_opt OPT — the page holds OPT with its hyphens escaped (\-\-gpu), as a
# whole option: not a prefix of a longer one (\-\-gpu\-util).
has_opt() {
    esc=$(printf '%s' "$1" | sed 's/-/\\\\-/g')
    grep -Eq -- "${esc}([^a-z0-9\\\\]|\\\\[^-]|\$)" "$MAN"
}

# The check itself can fail: an option the page does not have, and a prefix.
if has_opt --no-such-option; then fail "has_opt rejects a missing option" "found"; else ok "has_opt rejects a missing option"; fi
printf '.B \\-\\-gpu\\-util\n' >"$TMP/prefix.1"
if MAN="$TMP/prefix.1" has_opt --gpu; then fail "has_opt rejects a prefix" "found"; else ok "has_opt rejects a prefix"; fi
if MAN="$TMP/prefix.1" has_opt --gpu-util; then ok "has_opt finds an option"; else fail "has_opt finds an option" "not found"; fi

"$VF" --help >"$TMP/main" 2>&1 || fail "vramfit --help" "exit $?"
cmds=$(sed -n '/^Commands:/,/^$/p' "$TMP/main" | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
n=$(printf '%s\n' $cmds | wc -l)
if [ "$n" -ge 9 ]; then ok "commands listed ($n)"; else fail "commands listed" "only $n: $cmds"; fi

for o in $(grep -o -- '--[a-z][a-z0-9-]*' "$TMP/main" | sort -u); do
    if has_opt "$o"; then ok "man: vramfit $o"; else fail "man: vramfit $o" "not in $MAN"; fi
done

for c in $cmds; do
    if grep -q "^\\.B vramfit $c\$" "$MAN"; then ok "man synopsis: $c"; else fail "man synopsis: $c" "no '.B vramfit $c' line"; fi
    if grep -q "^\\.SS vramfit $c\\( \\|\$\\)" "$MAN"; then ok "man section: $c"; else fail "man section: $c" "no '.SS vramfit $c' heading"; fi
    if ! "$VF" "$c" --help >"$TMP/help" 2>"$TMP/err"; then
        fail "$c --help" "exit status not 0"
        continue
    fi
    for o in $(grep -o -- '--[a-z][a-z0-9-]*' "$TMP/help" | sort -u); do
        if has_opt "$o"; then ok "man: $c $o"; else fail "man: $c $o" "'vramfit $c --help' prints it, $MAN lacks it"; fi
    done
done

# Renders cleanly (groff's own warnings, as 'man --warnings' shows them).
if command -v groff >/dev/null 2>&1; then
    for w in 80 100; do
        groff -man -Tutf8 -ww -rLL=${w}n -z "$MAN" >"$TMP/warn" 2>&1
        if [ -s "$TMP/warn" ]; then fail "man renders at $w columns" "$(head -c 300 "$TMP/warn")"; else ok "man renders at $w columns"; fi
    done
fi

# EXAMPLES: each ".B vramfit ..." line whose arguments name no file (no path
# with a dot-extension) and that is not 'serve' runs with the exit status its
# description states ("exit status N"), else 0; its options are in its --help.
sed -n '/^\.SH EXAMPLES/,/^\.SH /p' "$MAN" | awk '
    /^\.B vramfit / { cmd = $0; getline desc; print cmd "\t" desc }' >"$TMP/examples"
k=0
while IFS='	' read -r line desc; do
    k=$((k + 1))
    args=$(printf '%s' "$line" | sed -e 's/^\.B vramfit //' -e 's/\\-/-/g' -e 's/\\(dq/"/g')
    eval "set -- $args"
    c=$1
    "$VF" "$c" --help >"$TMP/help" 2>/dev/null
    for o in $(printf '%s\n' "$@" | grep -- '^--' | sed 's/=.*//'); do
        if grep -q -- "$o\\([^a-z0-9-]\\|\$\\)" "$TMP/help"; then ok "example $k: $c $o is real"; else fail "example $k: $c $o is real" "not in 'vramfit $c --help'"; fi
    done
    case "$c $*" in
    serve* | *.safetensors* | *.gguf* | *.json\ * | *.json) continue ;;
    esac
    want=$(printf '%s' "$desc" | sed -n 's/.*exit status \([0-9]\).*/\1/p')
    check "example $k: vramfit $args" "${want:-0}" "$VF" "$@"
done <"$TMP/examples"
if [ "$k" -ge 8 ]; then ok "examples found ($k)"; else fail "examples found" "only $k"; fi

# docs/accuracy.md is what bench/accuracy.sh --markdown prints with this
# build: the table cannot drift from the figures.
if VF="$VF" sh bench/accuracy.sh --markdown >"$TMP/accuracy.md" 2>"$TMP/accuracy.err"; then
    if cmp -s "$TMP/accuracy.md" docs/accuracy.md; then
        ok "docs/accuracy.md is what bench/accuracy.sh --markdown prints"
    else
        fail "docs/accuracy.md is what bench/accuracy.sh --markdown prints" \
            "it differs (regenerate: VF=build/vramfit sh bench/accuracy.sh --markdown >docs/accuracy.md): $(diff docs/accuracy.md "$TMP/accuracy.md" | head -n 6 | cut -c1-160)"
    fi
else
    fail "bench/accuracy.sh --markdown" "exit $?: $(head -c 300 "$TMP/accuracy.err")"
fi
