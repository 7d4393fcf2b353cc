#!/bin/sh
# accuracy.sh — every row of tests/reference/measured.csv against vramfit,
# row by row with the sign of the error, then the headline: false fits
# (a GPU row the estimate undercuts by more than 3 %), the median and the
# worst error. Rows and their vramfit arguments: tests/data/accuracy.tsv.
#   VF=build/vramfit sh bench/accuracy.sh
VF=${VF:-build/vramfit}
TSV=${ACCURACY_TSV:-tests/data/accuracy.tsv}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%-5s %-26s %14s %14s %9s  %s\n' row figure measured vramfit error verdict
grep -v '^#' "$TSV" | while IFS='	' read -r id path meas unit lo hi gpu args; do
    [ -n "$id" ] || continue
    if [ "$path" = "-" ]; then
        printf '%-5s %-26s %14s %14s %9s  not expressed: %s\n' "$id" "-" "$meas $unit" "-" "-" "$args"
        continue
    fi
    case $unit in GiB) div=1073741824 ;; MiB) div=1048576 ;; GB) div=1000000000 ;; *) div=1 ;; esac
    # shellcheck disable=SC2086 # the arguments are words
    got=$("$VF" estimate $args --json 2>/dev/null | jq -r "$path // empty")
    if [ -z "$got" ]; then
        printf '%-5s %-26s %14s %14s %9s  ERROR: no figure\n' "$id" "$path" "$meas $unit" "-" "-"
        echo "$id error 0 $gpu" >>"$out"
        continue
    fi
    line=$(awk -v g="$got" -v d="$div" -v m="$meas" -v lo="$lo" -v hi="$hi" -v gpu="$gpu" 'BEGIN {
        v = g / d; e = 100 * (v - m) / m
        verdict = (e == 0 ? "exact" : sprintf("within %+.1f %%", e))
        if (e < lo - 1e-9 || e > hi + 1e-9) verdict = verdict " OUTSIDE its band"
        else if (hi < 0) verdict = verdict ", a known miss (errs low)"
        else if (lo > 0) verdict = verdict ", a known miss (errs high)"
        if ((gpu == 1 && e < -3) || (gpu == -1 && e > 3)) verdict = verdict ", FALSE FIT"
        printf "%.2f|%+.2f|%s", v, e, verdict }')
    v=${line%%|*}
    rest=${line#*|}
    e=${rest%%|*}
    printf '%-5s %-26s %14s %14s %8s%%  %s\n' "$id" "$path" "$meas $unit" "$v $unit" "$e" "${rest#*|}"
    echo "$id $e $gpu" >>"$out"
done
awk '$2 != "error" { n++; e[n] = $2 + 0; if (($3 == 1 && $2 + 0 < -3) || ($3 == -1 && $2 + 0 > 3)) ff++; if (n == 1 || $2 + 0 < lo) lo = $2 + 0; if (n == 1 || $2 + 0 > hi) hi = $2 + 0 }
     $2 == "error" { bad++ }
     END {
        for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (e[j] < e[i]) { t = e[i]; e[i] = e[j]; e[j] = t }
        med = n % 2 ? e[(n + 1) / 2] : (e[n / 2] + e[n / 2 + 1]) / 2
        printf "\n%d rows expressed: false fits %d, median error %+.2f %%, lowest %+.2f %%, highest %+.2f %%%s\n",
               n, ff + 0, med, lo, hi, bad ? sprintf(", %d rows without a figure", bad) : "" }' "$out"
