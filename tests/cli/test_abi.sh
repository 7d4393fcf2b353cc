# The shared library's ABI (include/vramfit.h, "ABI: how the public structs
# grow"): every pinned struct keeps its size and every field its offset and
# size as tests/abi/layout.txt recorded them; new fields only add lines. And a
# program built from the public header alone runs against libvramfit.so.
. tests/cli/lib.sh
CC=${CC:-cc}
LIB="$BUILD/libvramfit.so"
[ -f "$LIB" ] || { fail "abi: library" "no $LIB"; exit 0; }

sh tests/abi/gen_layout.sh include/vramfit.h "$TMP/layout.c"
if $CC -std=c17 -Wall -Wextra -Werror -Iinclude -o "$TMP/layout" "$TMP/layout.c" 2>"$TMP/cc.err"; then
    "$TMP/layout" >"$TMP/now.txt"
    moved=$(grep -vxF -f "$TMP/now.txt" tests/abi/layout.txt | head -5 | tr '\n' ';')
    [ -z "$moved" ] && ok "abi: every recorded field keeps its offset and size ($(wc -l <tests/abi/layout.txt) lines)" ||
        fail "abi: fields moved, resized or removed" "$moved"
    new=$(grep -vxF -f tests/abi/layout.txt "$TMP/now.txt" | grep -v ' sizeof ' | awk '{print $1}' | sort -u | tr '\n' ' ')
    ok "abi: layout read (structs with fields added since the record: ${new:-none})"
else
    fail "abi: layout program" "$(head -3 "$TMP/cc.err")"
fi

# The public header alone, the shared library at run time (its soname). A
# sanitized library needs its runtime in the program too.
SANFLAGS=
nm -D "$LIB" 2>/dev/null | grep -q __asan_init && SANFLAGS="-fsanitize=address,undefined"
mkdir -p "$TMP/lib"
cp "$LIB" "$TMP/lib/libvramfit.so.0"
ln -sf libvramfit.so.0 "$TMP/lib/libvramfit.so"
if $CC -std=c17 -Wall -Wextra -Werror -Iinclude $SANFLAGS -o "$TMP/caller" tests/abi/caller.c -L"$TMP/lib" -lvramfit \
    -Wl,-rpath,"$TMP/lib" 2>"$TMP/cc.err"; then
    check_out "abi: needs libvramfit.so.0" 0 "libvramfit.so.0" sh -c "readelf -d '$TMP/caller' 2>/dev/null || objdump -p '$TMP/caller'"
    # Qwen3-8B: 8,190,735,360 parameters (tests/reference/param-counts.tsv);
    # KV per token = 36 layers x 2 x 8 heads x 128 x 2 bytes = 147,456
    check_out "abi: an older caller's estimate" 0 "kv_per_token 147456" "$TMP/caller"
    check_out "abi: an older caller's parameter count" 0 "params 8190735360" "$TMP/caller"
else
    fail "abi: caller program" "$(head -3 "$TMP/cc.err")"
fi
