#!/bin/sh
# gen_layout.sh HEADER OUT.c — a C program that prints, for every pinned public
# struct's field (fields.awk), "STRUCT FIELD OFFSET SIZE", and "STRUCT sizeof N".
# Built against the public header alone: what a program linking libvramfit sees.
hdr=$1
out=$2
{
    echo '#include "vramfit.h"'
    echo '#include <stdio.h>'
    echo '#include <stddef.h>'
    echo 'int main(void) {'
    awk -f "$(dirname "$0")/fields.awk" "$hdr" | awk '
        { if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 }
          printf "    printf(\"%s %s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(((%s *)0)->%s));\n", $1, $2, $1, $2, $1, $2 }
        END { for (i = 1; i <= n; i++) printf "    printf(\"%s sizeof %%zu\\n\", sizeof(%s));\n", order[i], order[i] }'
    echo '    return 0;'
    echo '}'
} >"$out"
