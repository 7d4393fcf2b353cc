# The shared library's ABI (include/vramfit.h, "ABI"): results are opaque
# objects read through accessors; every public struct is at most 4 KiB and
# keeps its size, and every field its offset and size, as tests/abi/layout.txt
# recorded them (new fields only add lines). A program built from the public
# header alone runs against libvramfit.so.0.
. tests/cli/lib.sh
CC=${CC:-cc}
LIB="$BUILD/libvramfit.so"
[ -f "$LIB" ] || { fail "abi: library" "no $LIB"; exit 0; }
HDR=${VF_ABI_HEADER:-include/vramfit.h}
LAYOUT=${VF_ABI_LAYOUT:-tests/abi/layout.txt}

mkdir -p "$TMP/inc"
cp "$HDR" "$TMP/inc/vramfit.h"
sh tests/abi/gen_layout.sh "$TMP/inc/vramfit.h" "$TMP/layout.c"
if $CC -std=c17 -Wall -Wextra -Werror -I"$TMP/inc" -o "$TMP/layout" "$TMP/layout.c" 2>"$TMP/cc.err"; then
    "$TMP/layout" >"$TMP/now.txt"
    moved=$(grep -vxF -f "$TMP/now.txt" "$LAYOUT" | head -5 | tr '\n' ';')
    [ -z "$moved" ] && ok "abi: every recorded field keeps its offset and size ($(wc -l <"$LAYOUT") lines)" ||
        fail "abi: fields moved, resized or removed" "$moved"
    big=$(awk '$2 == "sizeof" && $3 > 4096 { print $1 " " $3 }' "$TMP/now.txt" | tr '\n' ';')
    [ -z "$big" ] && ok "abi: no public struct over 4 KiB ($(grep -c ' sizeof ' "$TMP/now.txt") structs)" ||
        fail "abi: public structs over 4 KiB" "$big"
    unrecorded=$(grep ' sizeof ' "$TMP/now.txt" | awk '{print $1}' | while read -r s; do
        grep -q "^$s sizeof " "$LAYOUT" || echo "$s"; done | tr '\n' ' ')
    [ -z "$unrecorded" ] && ok "abi: every public struct is recorded" ||
        fail "abi: structs missing from $LAYOUT (add their lines)" "$unrecorded"
else
    fail "abi: layout program" "$(head -3 "$TMP/cc.err")"
fi

# Results are opaque: a caller cannot take their size, so their layout can grow.
for r in vf_estimate vf_fit vf_load_result; do
    printf '#include "vramfit.h"\nunsigned long n = sizeof(%s);\n' "$r" >"$TMP/opaque.c"
    if $CC -std=c17 -I"$TMP/inc" -c -o "$TMP/opaque.o" "$TMP/opaque.c" 2>/dev/null; then
        fail "abi: $r is opaque" "sizeof($r) compiles against the public header"
    else
        ok "abi: $r is opaque (no size in the public header)"
    fi
done

# The public header alone, the shared library at run time (its soname). A
# sanitized library needs its runtime in the program too.
SANFLAGS=
nm -D "$LIB" 2>/dev/null | grep -q __asan_init && SANFLAGS="-fsanitize=address,undefined"
mkdir -p "$TMP/lib"
cp "$LIB" "$TMP/lib/libvramfit.so.0"
ln -sf libvramfit.so.0 "$TMP/lib/libvramfit.so"
if $CC -std=c17 -Wall -Wextra -Werror -I"$TMP/inc" $SANFLAGS -o "$TMP/caller" tests/abi/caller.c -L"$TMP/lib" -lvramfit \
    -Wl,-rpath,"$TMP/lib" 2>"$TMP/cc.err"; then
    check_out "abi: needs libvramfit.so.0" 0 "libvramfit.so.0" sh -c "readelf -d '$TMP/caller' 2>/dev/null || objdump -p '$TMP/caller'"
    # Qwen3-8B: 8,190,735,360 parameters (tests/reference/param-counts.tsv), all
    # BF16 (x 2 bytes); KV per token = 36 layers x 2 x 8 heads x 128 x 2 bytes = 147,456
    check_out "abi: a caller's parameter count" 0 "params 8190735360" "$TMP/caller"
    check_out "abi: a caller's bytes per dtype" 0 "bf16_bytes 16381470720" "$TMP/caller"
    check_out "abi: a caller's estimate" 0 "kv_per_token 147456" "$TMP/caller"
    check_out "abi: a fit's estimate through its accessor" 0 "fit_weights 16381470720" "$TMP/caller"
    check_out "abi: an estimate's assumptions" 0 "assumptions 1" "$TMP/caller"
    check_out "abi: a list read past its end is NULL" 0 "suggestions_past_end 1" "$TMP/caller"
else
    fail "abi: caller program" "$(head -3 "$TMP/cc.err")"
fi
