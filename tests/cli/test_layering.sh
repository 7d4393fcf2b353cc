# The library's call graph between its source files has no cycles, and the
# layers keep their order: files -> description -> memory model -> answers.
# Reads the built objects with nm: which file defines each symbol, which files
# use it; tsort finds any cycle. (DESIGN: data flows one way.)
. tests/cli/lib.sh
OBJ="$BUILD/obj/src/lib"
[ -d "$OBJ" ] || { fail "layering" "no objects under $OBJ"; exit 0; }

# "user definer" pairs, one per file-to-file dependency
edges() {
    for o in $(find "$OBJ" -name '*.o' | sort); do
        f=${o#"$OBJ"/}
        [ -f "src/lib/${f%.o}.c" ] || continue # a stale object of a moved file
        nm "$o" | awk -v f="${f%.o}" '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[TDBR]$/ { print "D", $3, f } $1 == "U" { print "U", $2, f }'
    done | awk '$1 == "D" { def[$2] = $3; next } { use[NR] = $3 " " $2 }
        END { for (i in use) { split(use[i], a, " "); if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]] } }' | sort -u
}
edges >"$TMP/edges"
[ -s "$TMP/edges" ] && ok "layering: call graph read ($(wc -l <"$TMP/edges") file dependencies)" ||
    fail "layering: call graph" "no dependencies read from $OBJ"

# tsort prints "tsort: -: input contains a loop:" and the loop's members.
if tsort "$TMP/edges" >/dev/null 2>"$TMP/loops"; then
    ok "layering: no cycles"
else
    fail "layering: no cycles" "$(tr '\n' ' ' <"$TMP/loops")"
fi

# depends A B: no file matching A uses a file matching B (both are globs on paths below src/lib).
never() {
    bad=$(awk -v a="$2" -v b="$3" '$1 ~ a && $2 ~ b' "$TMP/edges" | head -3 | tr '\n' ';')
    [ -z "$bad" ] && ok "layering: $1" || fail "layering: $1" "$bad"
}
never "only the opener calls the readers" '^(model|classify|estimate|fit|infer|train|plan|speed|load/)' '^read/(safetensors|gguf|hfconfig|st_parse)'
never "readers do not call each other's opener" '^read/(safetensors|gguf|hfconfig|st_parse|catalog)' '^read/open$'
never "the description calls no reader, memory model or answer" '^(model|classify)$' '^(read/|infer|train|estimate|fit|plan|arch/)'
never "notes depend on nothing" '^notes$' '.'
never "the memory model calls no answer" '^(infer|train)' '^(fit|plan)'
never "architectures call no reader or memory model" '^arch/' '^(read/|infer|train|estimate|fit)'
never "only the opener calls the hub" '^(model|classify|estimate|fit|infer|train|plan|speed|notes|load/|arch/|read/(safetensors|gguf|hfconfig|st_parse|catalog|source_file))' '^hub/'
never "the hub calls no reader or opener" '^hub/' '^read/(safetensors|gguf|hfconfig|st_parse|catalog|open)$'
never "only the opener calls the onnx reader" '^(model|classify|estimate|fit|infer|train|plan|speed|load/|graph)' '^read/onnx'
never "the graph description calls no reader or memory model" '^graph$' '^(read/|graph_|infer|train|estimate|fit)'
