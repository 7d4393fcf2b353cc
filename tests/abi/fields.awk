# fields.awk — the fields of every pinned public struct in include/vramfit.h,
# as "STRUCT FIELD" lines in declaration order. Reads the header's own style:
# "typedef struct NAME { VF_GROWABLE_BEGIN", one declaration per line (or
# "type a, b;"), "VF_GROWABLE_END(N) } NAME;".
{
    line = $0
    # comments: drop /* ... */ on one line, and the lines of a longer one
    if (incomment) { if (line ~ /\*\//) { sub(/.*\*\//, "", line); incomment = 0 } else next }
    gsub(/\/\*[^*]*(\*+[^\/*][^*]*)*\*+\//, "", line)
    if (line ~ /\/\*/) { sub(/\/\*.*/, "", line); incomment = 1 }
}
line ~ /^typedef struct [a-z_0-9]+ \{ VF_GROWABLE_BEGIN/ { name = line; sub(/^typedef struct /, "", name); sub(/ .*/, "", name); inside = 1; next }
inside && line ~ /VF_GROWABLE_END/ { inside = 0; next }
inside {
    n = split(line, decls, ";")
    for (i = 1; i < n; i++) {
        d = decls[i]
        gsub(/\[[^]]*\]/, "", d)      # array bounds
        gsub(/\*/, " ", d)            # pointers
        m = split(d, parts, ",")
        for (j = 1; j <= m; j++) {
            k = split(parts[j], w, " ")
            if (k > 0) print name, w[k]
        }
    }
}
