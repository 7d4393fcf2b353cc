# make install into a DESTDIR, then build and run a program against the
# installed header, library and pkg-config file. Plain pass only: the
# sanitizer build is not what gets installed.
. tests/cli/lib.sh
[ "${BUILD:-build}" = build ] || exit 0
root=$TMP/root
if ! make -s install DESTDIR="$root" PREFIX=/opt/vf >"$TMP/install.log" 2>&1; then
    fail "make install" "$(tail -c 300 "$TMP/install.log")"
    exit 1
fi
ok "make install"
for f in bin/vramfit include/vramfit.h lib/libvramfit.a lib/libvramfit.so.0 lib/libvramfit.so \
    lib/pkgconfig/vramfit.pc share/man/man1/vramfit.1; do
    if [ -e "$root/opt/vf/$f" ]; then ok "installed $f"; else fail "installed $f" "missing"; fi
done
export PKG_CONFIG_PATH="$root/opt/vf/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$root"
flags=$(pkg-config --cflags --libs vramfit 2>&1)
case "$flags" in
*"-I$root/opt/vf/include"*"-lvramfit"*) ok "pkg-config --cflags --libs" ;;
*) fail "pkg-config --cflags --libs" "$flags" ;;
esac
cat >"$TMP/t.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <vramfit.h>
int main(void)
{
    const vf_dtype_info *d = vf_dtype_get(vf_dtype_from_name("Q4_K"));
    printf("%s %s %.1f\n", vf_version(), vf_strerror(VF_EFORMAT), d ? d->bits_per_element : 0.0);
    return strcmp(vf_version(), VF_VERSION_STRING) != 0;
}
C
if ${CC:-cc} -o "$TMP/t" "$TMP/t.c" $flags 2>"$TMP/cc.err" &&
    out=$(LD_LIBRARY_PATH="$root/opt/vf/lib" "$TMP/t") && [ "$out" = "0.1.0 malformed model file 4.5" ]; then
    ok "program built against the installed library"
else
    fail "program built against the installed library" "$(head -c 300 "$TMP/cc.err") $out"
fi
if ${CC:-cc} -o "$TMP/ts" "$TMP/t.c" $(pkg-config --cflags vramfit) "$root/opt/vf/lib/libvramfit.a" \
    $(pkg-config --static --libs-only-other --libs-only-l vramfit | sed 's/-lvramfit//') 2>"$TMP/cc.err" &&
    "$TMP/ts" >/dev/null; then
    ok "program linked statically"
else
    fail "program linked statically" "$(head -c 300 "$TMP/cc.err")"
fi
# The installed page, as man finds and shows it: man (man-db, which
# tools/deps.sh installs) must be here; its absence is a failure, not a pass.
page=$root/opt/vf/share/man/man1/vramfit.1
if ! command -v man >/dev/null 2>&1; then
    fail "man page renders" "no man here (Debian: man-db; tools/deps.sh installs it)"
else
    found=$(MANPATH="$root/opt/vf/share/man" man -w vramfit 2>&1)
    if [ "$found" = "$page" ]; then ok "man -w vramfit finds the installed page"; else fail "man -w vramfit finds the installed page" "$found"; fi
    MANPATH="$root/opt/vf/share/man" MANWIDTH=80 man vramfit >"$TMP/man.txt" 2>"$TMP/man.err"
    missing=""
    for h in NAME SYNOPSIS COMMANDS "EXIT STATUS" EXAMPLES; do
        grep -q "^$h\$" "$TMP/man.txt" || missing="$missing '$h'"
    done
    if [ -s "$TMP/man.err" ]; then
        fail "man page renders" "$(head -c 300 "$TMP/man.err")"
    elif [ -n "$missing" ] || ! grep -q '^VRAMFIT(1) ' "$TMP/man.txt"; then
        fail "man page renders" "no VRAMFIT(1) header or sections$missing"
    else
        ok "man page renders ($(wc -l <"$TMP/man.txt") lines, NAME to EXAMPLES)"
    fi
fi
