# Every "published" row of data/models/catalog.tsv: its file's sha256 is the
# row's sha256 column (the digest that row's source and note give for the
# Hub's config.json), so a file edited after it was checked cannot stay
# labelled byte for byte as published. sha256sum is coreutils', not vramfit.
. tests/cli/lib.sh
TSV=data/models/catalog.tsv
awk -F'\t' '!/^#/ && $1 != "id" && $3 == "published" { print $2 "\t" $4 }' "$TSV" >"$TMP/rows"
n=0
bad=""
while IFS="$(printf '\t')" read -r file want; do
    n=$((n + 1))
    got=$(sha256sum "data/models/$file" 2>/dev/null | cut -d' ' -f1)
    [ "$got" = "$want" ] || bad="$bad $file(${got:-missing})"
done <"$TMP/rows"
[ "$n" -gt 0 ] && ok "catalog sha256: $n published rows read" || fail "catalog sha256: rows" "no published row in $TSV"
[ -z "$bad" ] && ok "catalog sha256: every published file's digest is its row's" ||
    fail "catalog sha256: published files whose digest differs from the row's" "$bad"
