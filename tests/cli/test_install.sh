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
if MANWIDTH=80 man -l "$root/opt/vf/share/man/man1/vramfit.1" 2>/dev/null | grep -q 'EXIT STATUS'; then
    ok "man page renders"
elif ! command -v man >/dev/null 2>&1; then
    ok "man page installed (no man here to render it)"
else
    fail "man page renders" "no EXIT STATUS section"
fi
