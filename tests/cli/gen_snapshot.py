#!/usr/bin/python3
"""gen_snapshot.py OUTDIR — PyTorch memory snapshots for tests/cli/test_snapshot.sh,
made without a GPU as torch makes them: pickle.dump of plain dicts, lists,
tuples, strings and ints shaped as torch/cuda/memory.py documents them
(Segment, Block, Frame, TraceEntry: 2.x) and as torch 1.13's
_cuda_memorySnapshot returns them (a list of segments whose blocks carry a
"history", newest first). A small program is simulated: its allocations, a
caching allocator's segments at the end, and the expected figures computed
here by this script's own bookkeeping (OUTDIR/NAME.expect.json), not by
vramfit. Deterministic (seeded)."""
import json
import os
import pickle
import random
import sys

MiB = 1 << 20


def frames(*names):
    return [{"filename": "/work/%s.py" % f, "line": line, "name": fn} for f, line, fn in names]


class Program:
    """Events of a training-like loop; addresses from a bump pointer."""

    def __init__(self, seed):
        self.rng = random.Random(seed)
        self.next_addr = 0x7F0000000000
        self.events = []  # (action, addr, size, frames)
        self.live = {}    # addr -> (size, frames)

    def alloc(self, size, fr):
        addr = self.next_addr
        self.next_addr += (size + 511) // 512 * 512 + 512
        self.events.append(("alloc", addr, size, fr))
        self.live[addr] = (size, fr)
        return addr

    def free(self, addr):
        size, fr = self.live.pop(addr)
        self.events.append(("free_requested", addr, size, fr))
        self.events.append(("free_completed", addr, size, fr))


def training(seed, iterations, leak):
    p = Program(seed)
    load = frames(("model", 12, "load_weights"), ("train", 5, "main"))
    for i in range(8):  # weights: one burst, no frees between
        p.alloc((4 + i) * MiB, load)
    grads = []
    loss_site = frames(("train", 40, "step"), ("train", 60, "main"))
    bwd = frames(("train", 44, "step"), ("train", 60, "main"))
    leaked = []
    for it in range(iterations):
        acts = [p.alloc(p.rng.randint(1, 6) * MiB, frames(("model", 30 + k, "forward"), ("train", 38, "step")))
                for k in range(5)]
        loss = p.alloc(2048, loss_site)
        for a in acts:  # the backward: temporaries and, in the first iteration, the gradients
            tmp = p.alloc(p.rng.randint(1, 3) * MiB, bwd)
            p.free(a)
            if it == 0 and len(grads) < 4:
                grads.append(p.alloc(3 * MiB, bwd))
            p.free(tmp)
        if leak:
            leaked.append(loss)  # losses.append(loss): kept across iterations
        else:
            p.free(loss)
    return p


def end_blocks(p, rng):
    """Segments at the end: each live allocation in a segment of its own with
    cached (inactive) blocks around it; a few small-pool segments."""
    segs = []
    for addr, (size, fr) in sorted(p.live.items()):
        gap = rng.randint(0, 3) * MiB
        blocks = [{"address": addr, "size": (size + 511) // 512 * 512, "requested_size": size,
                   "state": "active_allocated", "frames": fr}]
        if gap:
            blocks.append({"address": addr + blocks[0]["size"], "size": gap, "requested_size": 0,
                           "state": "inactive", "frames": []})
        small = size < MiB
        segs.append({"device": 0, "address": addr, "total_size": sum(b["size"] for b in blocks),
                     "allocated_size": blocks[0]["size"], "active_size": blocks[0]["size"],
                     "requested_size": size, "stream": 0, "segment_type": "small" if small else "large",
                     "segment_pool_id": (0, 0), "is_expandable": False, "frames": fr, "blocks": blocks})
    # a cached segment with nothing live, on another stream, and one of a CUDA graph's private pool
    segs.append({"device": 0, "address": 0x7E0000000000, "total_size": 20 * MiB, "allocated_size": 0,
                 "active_size": 0, "requested_size": 0, "stream": 94000000, "segment_type": "large",
                 "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                 "blocks": [{"address": 0x7E0000000000, "size": 20 * MiB, "requested_size": 0,
                             "state": "inactive", "frames": []}]})
    segs.append({"device": 0, "address": 0x7D0000000000, "total_size": 2 * MiB, "allocated_size": 0,
                 "active_size": MiB, "requested_size": 0, "stream": 0, "segment_type": "small",
                 "segment_pool_id": (1, 0), "is_expandable": False, "frames": [],
                 "blocks": [{"address": 0x7D0000000000, "size": MiB, "requested_size": MiB,
                             "state": "active_awaiting_free", "frames": []},
                            {"address": 0x7D0000000000 + MiB, "size": MiB, "requested_size": 0,
                             "state": "inactive", "frames": []}]})
    return segs


def expected(p, first, segs, leak_sites):
    """Peak over the kept window of the full run's allocated bytes (this
    script's own running sum), and the segments' sums."""
    cur, sums = 0, []
    for action, _, size, _ in p.events:
        if action == "alloc":
            cur += size
        elif action == "free_completed":
            cur -= size
        sums.append(cur)
    start = sums[first - 1] if first else 0
    window = [start] + sums[first:]
    states = {}
    for s in segs:
        for b in s["blocks"]:
            states[b["state"]] = states.get(b["state"], 0) + b["size"]
    return {"peak_bytes": max(window), "end_bytes": window[-1], "before_trace_bytes": start,
            "reserved_bytes": sum(s["total_size"] for s in segs), "states": states, "segments": len(segs),
            "leak_sites": leak_sites}


def v2(p, segs, first):
    t = 1000
    trace = []
    for action, addr, size, fr in p.events[first:]:
        t += 7
        trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "frames": fr, "time_us": t,
                      "compile_context": "N/A", "user_metadata": ""})
    trace.insert(len(trace) // 2, {"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "frames": [],
                                   "time_us": t})
    return {"segments": segs, "device_traces": [trace, []],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0, "expandable_segments": False,
                                   "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                                   "pinned_use_cuda_host_register": False, "roundup_power2_divisions": {}},
            "external_annotations": []}


def v113(p, segs):
    """torch 1.13: no trace; blocks without addresses, a history per live block."""
    out = []
    for s in segs:
        blocks = []
        for b in s["blocks"]:
            nb = {"size": b["size"], "state": "active_pending_free" if b["state"] == "active_awaiting_free"
                  else b["state"]}
            if b["state"] == "active_allocated":
                nb["history"] = [{"addr": b["address"], "real_size": b["requested_size"], "frames": b["frames"]}]
            blocks.append(nb)
        out.append({"device": s["device"], "address": s["address"], "total_size": s["total_size"],
                    "allocated_size": s["allocated_size"], "active_size": s["active_size"],
                    "stream": s["stream"], "segment_type": s["segment_type"], "blocks": blocks})
    return out


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = [("leak", 1, 6, True, 0, 4), ("noleak", 2, 6, False, 0, 4), ("ring", 3, 8, True, 150, 2),
             ("proto2", 4, 4, True, 0, 2), ("proto5", 5, 5, False, 0, 5)]
    for name, seed, iters, leak, first, proto in cases:
        p = training(seed, iters, leak)
        rng = random.Random(seed + 100)
        segs = end_blocks(p, rng)
        sites = ["train.py:40:step"] if leak else []
        exp = expected(p, first, segs, sites)
        with open(os.path.join(out, name + ".pickle"), "wb") as f:
            pickle.dump(v2(p, segs, first), f, protocol=proto)
        with open(os.path.join(out, name + ".expect.json"), "w") as f:
            json.dump(exp, f)
        if name in ("leak", "noleak"):
            old = v113(p, segs)
            with open(os.path.join(out, name + "-113.pickle"), "wb") as f:
                pickle.dump(old, f, protocol=2)  # torch 1.13 users pickled _snapshot() themselves
            e113 = dict(exp, peak_bytes=sum(b["size"] for s in old for b in s["blocks"]
                                            if b["state"] == "active_allocated"))
            e113["states"] = {("active_pending_free" if k == "active_awaiting_free" else k): v
                              for k, v in exp["states"].items()}
            e113["leak_sites"] = []
            with open(os.path.join(out, name + "-113.expect.json"), "w") as f:
                json.dump(e113, f)


if __name__ == "__main__":
    main()
