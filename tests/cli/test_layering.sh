# The call graph between the source files of the library and of the command
# has no cycles, and the folders keep the pipeline's order (docs/design.md,
# "Stages"): files -> model description -> memory model -> answers -> output.
# Reads the built objects with nm: which file defines each symbol, which files
# use it; tsort finds any cycle, between files and between folders.
. tests/cli/lib.sh
OBJ="$BUILD/obj/src"
[ -d "$OBJ/lib" ] && [ -d "$OBJ/cli" ] || { fail "layering" "no objects under $OBJ/lib and $OBJ/cli"; exit 0; }

# "user definer" pairs (paths below src/, without .c), one per file-to-file dependency
edges() {
    for o in $(find "$OBJ/lib" "$OBJ/cli" -name '*.o' | sort); do
        f=${o#"$OBJ"/}
        [ -f "src/${f%.o}.c" ] || continue # a stale object of a moved file
        nm "$o" | awk -v f="${f%.o}" '$1 ~ /^[0-9a-f]+$/ && $2 ~ /^[TDBR]$/ { print "D", $3, f } $1 == "U" { print "U", $2, f }'
    done | awk '$1 == "D" { def[$2] = $3; next } { use[NR] = $3 " " $2 }
        END { for (i in use) { split(use[i], a, " "); if ((a[2] in def) && def[a[2]] != a[1]) print a[1], def[a[2]] } }' | sort -u
}
edges >"$TMP/edges"
[ -s "$TMP/edges" ] && ok "layering: call graph read ($(wc -l <"$TMP/edges") file dependencies)" ||
    fail "layering: call graph" "no dependencies read from $OBJ"
grep -q '^cli/' "$TMP/edges" && ok "layering: the command's files are read too" ||
    fail "layering: the command's files" "no dependency of src/cli read"

# tsort prints "tsort: -: input contains a loop:" and the loop's members.
if tsort "$TMP/edges" >/dev/null 2>"$TMP/loops"; then
    ok "layering: no cycles between files"
else
    fail "layering: no cycles between files" "$(tr '\n' ' ' <"$TMP/loops")"
fi

# A file's stage: lib/<first folder> or cli/<first folder> ("cli/" for main.c).
stage() { awk '{ for (i = 1; i <= 2; i++) { n = split($i, p, "/"); s[i] = (n > 2) ? p[1] "/" p[2] : p[1] "/" } print s[1], s[2] }'; }
stage <"$TMP/edges" | awk '$1 != $2' | sort -u >"$TMP/stages"
if tsort "$TMP/stages" >/dev/null 2>"$TMP/sloops"; then
    ok "layering: no cycles between folders ($(wc -l <"$TMP/stages") folder dependencies)"
else
    fail "layering: no cycles between folders" "$(tr '\n' ' ' <"$TMP/sloops")"
fi

# Each folder and the folders it may use; any other dependency is a failure.
# (lib/* = any folder of the library: the command uses only its public header,
# and no library folder may use the command.)
cat >"$TMP/allowed" <<'EOF'
lib/base
lib/model lib/base
lib/device lib/base
lib/read lib/base lib/model
lib/memory lib/base lib/model lib/device
lib/answer lib/base lib/model lib/read lib/device lib/memory
lib/load lib/base lib/model lib/device
lib/oom lib/base
lib/snapshot lib/base
cli/output lib/*
cli/args cli/output lib/*
cli/watch cli/output lib/*
cli/serve cli/output cli/args lib/*
cli/builtin cli/args cli/output cli/serve cli/watch lib/*
cli/ cli/builtin cli/args cli/output lib/*
EOF
bad=$(awk 'NR == FNR { for (i = 2; i <= NF; i++) ok[$1 " " $i] = 1; known[$1] = 1; next }
    { u = $1; d = $2; split(d, p, "/"); if (!(u in known) || !((u " " d) in ok) && !((u " " p[1] "/*") in ok)) print u "->" d }' \
    "$TMP/allowed" "$TMP/stages" | head -5 | tr '\n' ' ')
[ -z "$bad" ] && ok "layering: every folder uses only the folders below it" || fail "layering: folder order" "$bad"

# never NAME A B: no file matching A uses a file matching B (regular expressions on paths below src/).
never() {
    bad=$(awk -v a="$2" -v b="$3" '$1 ~ a && $2 ~ b' "$TMP/edges" | head -3 | tr '\n' ';')
    [ -z "$bad" ] && ok "layering: $1" || fail "layering: $1" "$bad"
}
RD='^lib/read/(safetensors|gguf|gguf_hparams|hfconfig|st_parse|onnx|onnx_wire|catalog|source_file)$'
never "only the opener calls the readers" '^lib/(model|memory|answer|device|load|oom|base)/' '^lib/read/(safetensors|gguf|hfconfig|st_parse|onnx)$'
never "the readers do not call the opener" "$RD" '^lib/read/open$'
never "only the opener calls the hub" '^lib/read/(safetensors|gguf|gguf_hparams|hfconfig|st_parse|onnx|onnx_wire|catalog|source_file|arch/)' '^lib/read/hub/'
never "the hub calls no reader or opener" '^lib/read/hub/' '^lib/read/[a-z_]+$'
never "architectures call no reader" '^lib/read/arch/' '^lib/read/[a-z_]+$'
never "the memory model's parts call no runtime" '^lib/memory/(parts|torch)/' '^lib/memory/(vllm|llamacpp|transformers|litgpt|generic|train|graph)/'
never "a runtime calls no other runtime" '^lib/memory/vllm/' '^lib/memory/(llamacpp|transformers|litgpt|generic)/'
never "llama.cpp calls no other runtime" '^lib/memory/llamacpp/' '^lib/memory/(vllm|transformers|litgpt|generic)/'
never "graphs call no language-model runtime" '^lib/memory/graph/' '^lib/memory/(vllm|llamacpp|transformers|litgpt)/'
never "the command's output calls no command" '^cli/(output|args)/' '^cli/builtin/'
