# Every example in README.md and docs/*.md runs, and prints what it shows.
# An example is a line "$ vramfit ARGS" inside a fenced code block; the lines
# after it, up to the next "$ " line or the end of the block, are what it
# shows. ARGS are read as the shell reads them (quotes work; "# ..." is a
# comment). It runs from the repository root with the binary under test and
# no network (HF_HUB_OFFLINE=1), and what it shows is compared with its
# standard error followed by its standard output, line by line, exactly but
# for trailing blanks and two elisions:
#   - a line that is only "..." (indented or not) stands for any number of
#     lines, none included;
#   - "..." inside a line stands for any text within that line.
# A block whose opening fence names "norun" (```text norun) shows commands
# that need what a test does not have (the network, a GPU, a file made
# elsewhere): its examples are listed, not run. The exit status is not
# compared: a usage or input error prints a line no example shows.
# (The man page's EXAMPLES are run by test_docs.sh.)
. tests/cli/lib.sh
export HF_HUB_OFFLINE=1

# matches WANT GOT — exit 0 when GOT (file) is what WANT (file) shows.
matches() {
    awk '
    function strip(s) { sub(/[ \t\r]+$/, "", s); return s }
    # one shown line against one printed line; "..." inside a line is any text
    function line_ok(w, g,   n, parts, i, pos, p, last) {
        if (index(w, "...") == 0) return w == g
        n = split(w, parts, /\.\.\./)
        if (substr(g, 1, length(parts[1])) != parts[1]) return 0
        pos = length(parts[1]) + 1
        for (i = 2; i < n; i++) {
            p = index(substr(g, pos), parts[i])
            if (!p) return 0
            pos += p - 1 + length(parts[i])
        }
        last = parts[n]
        if (length(g) - pos + 1 < length(last)) return 0
        return substr(g, length(g) - length(last) + 1) == last
    }
    function from(i, j,   k) {
        if (i > nw) return j > ng
        if (W[i] ~ /^[ \t]*\.\.\.$/) {
            for (k = j; k <= ng + 1; k++) if (from(i + 1, k)) return 1
            return 0
        }
        if (j > ng) return 0
        return line_ok(W[i], G[j]) && from(i + 1, j + 1)
    }
    NR == FNR { W[++nw] = strip($0); next }
    { G[++ng] = strip($0) }
    END { exit from(1, 1) ? 0 : 1 }' "$1" "$2"
}

# The matcher itself can fail: a changed figure, a missing line, an extra
# line; and the elisions match what they stand for.
printf 'a 1\nb 2\nc 3\n' >"$TMP/got"
printf 'a 1\nb 2\nc 3\n' >"$TMP/w1"
printf 'a 1\nb 9\nc 3\n' >"$TMP/w2"
printf 'a 1\nc 3\n' >"$TMP/w3"
printf 'a 1\nb 2\n' >"$TMP/w4"
printf 'a 1\n...\nc 3\n' >"$TMP/w5"
printf 'a ...\n  ...\n' >"$TMP/w6"
printf 'a 1\n...\nb 2\nb 2\n' >"$TMP/w7"
for c in "w1 0 the same lines" "w2 1 a changed figure" "w3 1 a missing line" "w4 1 an extra line printed" \
    "w5 0 a line of ... for lines" "w6 0 ... within a line and for the rest" "w7 1 a line shown twice, printed once"; do
    # shellcheck disable=SC2086 # words
    set -- $c
    w=$1
    want=$2
    shift 2
    matches "$TMP/$w" "$TMP/got"
    got=$?
    if [ "$got" -eq "$want" ]; then ok "examples: the matcher: $*"; else fail "examples: the matcher: $*" "answered $got, expected $want"; fi
done

# The examples: one directory per example under $TMP/ex, with the file and
# line it comes from, its arguments, whether its block is norun, and the lines
# it shows.
mkdir -p "$TMP/ex"
for f in README.md docs/*.md; do
    [ -f "$f" ] || continue
    awk -v file="$f" -v dir="$TMP/ex" '
    function close_ex() { if (ex) { close(want); ex = 0 } }
    /^[ \t]*```/ {
        if (!inblock) { inblock = 1; norun = ($0 ~ /norun/) } else { close_ex(); inblock = 0 }
        next
    }
    !inblock { next }
    /^\$ / {
        close_ex()
        if ($0 !~ /^\$ vramfit( |$)/) next
        name = sprintf("%s.%04d", file, FNR)
        gsub(/\//, "_", name)
        d = dir "/" name
        system("mkdir -p \"" d "\"")
        print file ":" FNR > (d "/where"); close(d "/where")
        args = substr($0, 11)
        print args > (d "/args"); close(d "/args")
        if (norun) { print "" > (d "/norun"); close(d "/norun") }
        want = d "/want"
        printf "" > want
        ex = 1
        next
    }
    ex { print > want }
    END { close_ex() }' "$f"
done

n=0
skipped=0
for d in "$TMP"/ex/*/; do
    [ -f "$d/args" ] || continue
    where=$(cat "$d/where")
    args=$(cat "$d/args")
    if [ -f "$d/norun" ]; then
        skipped=$((skipped + 1))
        echo "# not run (norun block): $where: vramfit $args"
        continue
    fi
    n=$((n + 1))
    name="example $where: vramfit $args"
    if ! eval "set -- $args" 2>/dev/null; then
        fail "$name" "its arguments do not parse as shell words"
        continue
    fi
    "$VF" "$@" >"$d/out" 2>"$d/err" </dev/null
    cat "$d/err" "$d/out" >"$d/got"
    if matches "$d/want" "$d/got"; then
        ok "$name"
    else
        fail "$name" "prints (stderr, then stdout; first differences against what it shows):
$(diff "$d/want" "$d/got" | head -n 16)"
    fi
done
if [ "$n" -ge 5 ]; then ok "examples found ($n run, $skipped in norun blocks)"; else fail "examples found" "only $n run"; fi
