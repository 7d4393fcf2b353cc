# vramfit snapshot: PyTorch memory snapshots made by tests/cli/gen_snapshot.py
# (torch's own layouts, pickled by Debian's python3), checked against the
# generator's own bookkeeping and against torch.cuda._memory_viz.stats run on
# the same pickle (torch 1.13, CPU). Refusals: a pickle naming a global runs
# nothing and exits 3; malformed ones exit 3 in one line.
. tests/cli/lib.sh
PY=/usr/bin/python3
S="$TMP/snap"
if ! "$PY" tests/cli/gen_snapshot.py "$S"; then
    fail "snapshot: generator" "tests/cli/gen_snapshot.py failed (Debian's python3 missing? run 'make deps')"
    exit 0
fi

# compare NAME: vramfit's --json against NAME.expect.json and _memory_viz.stats
cat >"$TMP/compare.py" <<'EOF'
import json, pickle, sys
name, got_path, exp_path, pkl = sys.argv[1:5]
got, exp = json.load(open(got_path)), json.load(open(exp_path))
bad = []
for k in ("peak_bytes", "reserved_bytes", "segments", "states"):
    if got[k] != exp[k]:
        bad.append("%s %r != expected %r" % (k, got[k], exp[k]))
if got["layout"] == "dict":
    for k in ("end_bytes", "before_trace_bytes"):
        if got[k] != exp[k]:
            bad.append("%s %r != expected %r" % (k, got[k], exp[k]))
sites = sorted(s["frames"][0] for s in got["leak_suspects"])
if sites != sorted(exp["leak_sites"]):
    bad.append("leak suspects %r != %r" % (sites, exp["leak_sites"]))
if got["allocated_bytes"] != exp["states"].get("active_allocated", 0) or \
   got["inactive_bytes"] != exp["states"].get("inactive", 0):
    bad.append("allocated/inactive differ from the states")
try:
    import torch.cuda._memory_viz as mv
except Exception as e:
    print("FAIL snapshot %s: torch.cuda._memory_viz not importable (%s): run 'make deps'" % (name, e))
    sys.exit(0)
snap = pickle.load(open(pkl, "rb"))
st = mv.stats(snap["segments"] if isinstance(snap, dict) else snap)  # 1.13's stats reads the segment list
theirs = {k: v.value for k, v in st.items() if k not in ("segments", "total_size")}
if st["segments"] != got["segments"] or st["total_size"].value != got["reserved_bytes"] or theirs != got["states"]:
    bad.append("torch's stats %r differ" % ({k: getattr(v, "value", v) for k, v in st.items()},))
print(("FAIL snapshot %s: " % name + "; ".join(bad)) if bad else "ok snapshot %s: peak, reserved, states and leaks as expected and as torch.cuda._memory_viz.stats" % name)
EOF
for n in leak noleak ring proto2 proto5 leak-113 noleak-113; do
    if run "snapshot $n: --json" 0 "$VF" snapshot "$S/$n.pickle" --json; then
        "$PY" "$TMP/compare.py" "$n" "$TMP/out" "$S/$n.expect.json" "$S/$n.pickle"
    fi
done

check_json "snapshot: the issue's keys" 0 \
    'has("segments") and has("reserved_bytes") and has("allocated_bytes") and has("inactive_bytes") and has("peak_bytes")
     and (.largest | length) == 10 and (.largest[0].frames[0] == "model.py:12:load_weights")
     and (.leak_suspects[0].count == 6) and (.leak_suspects[0].iterations == 6) and .peak_source == "trace"' \
    "$VF" snapshot "$S/leak.pickle" --json
check_json "snapshot: per pool and stream" 0 \
    '[.pools[] | .pool] == ["large", "small", "large", "pool 1,0 small"] and .pools[2].stream == 94000000
     and .pools[2].inactive_bytes == 20971520 and .pools[3].pending_free_bytes == 1048576' \
    "$VF" snapshot "$S/leak.pickle" --json
check_json "snapshot: 1.13 has no trace: the peak is the segments'" 0 \
    '.layout == "list" and .peak_source == "segments" and .peak_bytes == .allocated_bytes and .leak_suspects == []
     and .largest[0].requested_bytes == 11534336' \
    "$VF" snapshot "$S/leak-113.pickle" --json
check_out "snapshot: the table" 0 "Leak suspects (alive at the end, grown across iterations)" "$VF" snapshot "$S/leak.pickle"
check_out "snapshot: the table's leak site" 0 "6 allocations over 6 iterations  train.py:40:step" "$VF" snapshot "$S/leak.pickle"
check_out "snapshot: no leak said so" 0 "Leak suspects: none" "$VF" snapshot "$S/noleak.pickle"
check_json "snapshot: --estimate beside the peak" 0 \
    '.estimate.device_bytes > 0 and .estimate.spec == "Qwen/Qwen3-0.6B --context 1024"' \
    "$VF" snapshot "$S/leak.pickle" --json --estimate "Qwen/Qwen3-0.6B --context 1024"
check_out "snapshot: --help" 0 "usage: vramfit snapshot FILE.pickle" "$VF" snapshot --help

# Refusals: what pickle.load would run, never run (the marker file stays absent).
"$PY" - "$TMP" <<'EOF'
import os, pickle, sys
d = sys.argv[1]
class Run:
    def __reduce__(self):
        return (os.system, ("touch %s/ran" % d,))
for proto in (0, 2, 4):
    open("%s/evil%d.pickle" % (d, proto), "wb").write(pickle.dumps({"segments": [Run()]}, protocol=proto))
open(d + "/set.pickle", "wb").write(pickle.dumps({"segments": {1, 2}}, protocol=4))
open(d + "/notsnap.pickle", "wb").write(pickle.dumps({"a": 1}, protocol=4))
open(d + "/trunc.pickle", "wb").write(pickle.dumps({"segments": []}, protocol=4)[:-3])
open(d + "/bigint.pickle", "wb").write(pickle.dumps({"segments": [{"total_size": 1 << 80, "blocks": []}]}))
EOF
check_err "snapshot: protocol 0 (text opcodes) refused" 3 "protocol 0/1 text opcodes" "$VF" snapshot "$TMP/evil0.pickle"
check_err "snapshot: GLOBAL refused (protocol 2)" 3 "refused: the pickle names the global 'posix system'" "$VF" snapshot "$TMP/evil2.pickle"
check_err "snapshot: STACK_GLOBAL refused (protocol 4)" 3 "refused: pickle opcode STACK_GLOBAL" "$VF" snapshot "$TMP/evil4.pickle"
[ ! -e "$TMP/ran" ] && ok "snapshot: nothing the pickles named ran" || fail "snapshot: nothing ran" "$TMP/ran exists"
"$PY" -c "import pickle; pickle.load(open('$TMP/evil4.pickle', 'rb'))" >/dev/null 2>&1
[ -e "$TMP/ran" ] && ok "snapshot: pickle.load itself would have run it (the refusal is real)" ||
    fail "snapshot: the refusal test's control" "pickle.load did not run the global"
check_err "snapshot: a set is not in the subset" 3 "EMPTY_SET" "$VF" snapshot "$TMP/set.pickle"
check_err "snapshot: a dict without segments" 3 'without "segments"' "$VF" snapshot "$TMP/notsnap.pickle"
check_err "snapshot: truncated" 3 "malformed pickle" "$VF" snapshot "$TMP/trunc.pickle"
check_err "snapshot: an integer wider than 8 bytes" 3 "an integer of 11 bytes" "$VF" snapshot "$TMP/bigint.pickle"
: >"$TMP/empty.pickle"
check_err "snapshot: empty file" 3 "no STOP" "$VF" snapshot "$TMP/empty.pickle"
check_err "snapshot: no such file" 3 "No such file" "$VF" snapshot "$TMP/none.pickle"
check_err "snapshot: no FILE" 2 "missing FILE" "$VF" snapshot
check_err "snapshot: unknown option" 2 "unknown option" "$VF" snapshot "$S/leak.pickle" --frobnicate
# 10^6 references to one list of 10^3 items: the walk's budget ends it (one line, fast)
"$PY" - "$TMP/shared.pickle" <<'EOF'
import sys
# PROTO 4, {"segments": [seg] + [memo 0] * 2,000,000}: seg (memo 0) holds a blocks list of one
# block dict (memo 1) and 2,000 references to it: 4 * 10^9 blocks to visit in a 26 MB file
blk = b"}(\x8c\x04sizeK\x01\x8c\x05state\x8c\x08inactiveu\x94"
seg = b"}\x94(\x8c\x0atotal_sizeK\x00\x8c\x06blocks](" + blk + b"h\x01" * 2000 + b"eu"
b = b"\x80\x04}\x8c\x08segments](" + seg + b"h\x00" * 2000000 + b"es."
open(sys.argv[1], "wb").write(b)
EOF
t0=$(date +%s)
check_err "snapshot: shared references bounded" 3 "too many times" "$VF" snapshot "$TMP/shared.pickle"
[ $(($(date +%s) - t0)) -le 20 ] && ok "snapshot: shared references end fast" || fail "snapshot: shared references" "took over 20 s"
