#!/usr/bin/env python3
"""Single Conv2d layers' kernel scratch measured with oracle.py's profiler (issue 23: convolution_backward's scratch).

A development tool, not part of the test suite; tests/unit/test_graph_scratch.c asserts its figures
(conv_scratch.json). Debian bookworm /usr/bin/python3, python3-torch 1.13.1, CPU (AVX-512), one thread
as wide.py measures:

    OMP_NUM_THREADS=1 /usr/bin/python3 conv_scratch_probe.py > conv_scratch.json

Each layer runs forward and backward twice (the second profiled); x requires grad or not (the first layer
of a network makes no input gradient). The figure is the largest sum of intra-op blocks (allocated and
freed inside one outermost aten:: op, oracle.analyze_tree) alive at once inside aten::convolution_backward.
"""
import json
import os
import sys

os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

# (in, out, kernel, stride, padding, dilation, groups, batch, side)
LAYERS = [(64, 64, 3, 1, 1, 1, 1, 2, 56), (64, 64, 3, 1, 1, 1, 1, 8, 56), (64, 64, 3, 1, 1, 1, 1, 1, 56),
          (256, 64, 1, 1, 0, 1, 1, 2, 56), (64, 256, 1, 1, 0, 1, 1, 2, 56), (64, 128, 3, 2, 1, 1, 1, 2, 56),
          (32, 32, 3, 1, 1, 1, 32, 2, 56), (3, 64, 7, 2, 3, 1, 1, 2, 224), (512, 512, 3, 1, 4, 4, 1, 2, 28),
          (256, 256, 3, 1, 2, 2, 1, 2, 28), (256, 256, 3, 1, 1, 1, 1, 1, 8), (2048, 256, 3, 1, 12, 12, 1, 2, 28),
          (2048, 256, 3, 1, 24, 24, 1, 2, 28), (512, 512, 3, 1, 12, 12, 1, 2, 33)]


def scratch_by_op(prof):
    allocs = oracle.tree_allocations(prof)
    live, intra = {}, set()
    for i, (_, _, nb, ptr, top, _) in enumerate(allocs):
        if nb > 0:
            live[ptr] = i
            continue
        j = live.pop(ptr, None)
        if j is not None and allocs[j][4] and top and allocs[j][4][0] == top[0]:
            intra.update((i, j))
    raw = ten = 0
    best = {}
    for i, (_, _, nb, _, top, _) in enumerate(allocs):
        raw += nb
        ten += 0 if i in intra else nb
        if top:
            best[top[1]] = max(best.get(top[1], 0), raw - ten)
    return best


def measure(layer, xgrad):
    cin, cout, k, s, p, d, g, n, hw = layer
    torch.manual_seed(0)
    conv = nn.Conv2d(cin, cout, k, stride=s, padding=p, dilation=d, groups=g, bias=False)
    x = torch.randn(n, cin, hw, hw, requires_grad=xgrad)
    for _ in range(2):
        y = conv(x)
        gy = torch.randn_like(y)
        with oracle.new_profiler() as prof:
            conv(x).backward(gy)
    return scratch_by_op(prof).get("aten::convolution_backward", 0)


def main():
    torch.set_num_threads(1)
    out = {"torch": torch.__version__, "threads": torch.get_num_threads(),
           "method": "intra-op blocks inside aten::convolution_backward (oracle.analyze_tree)", "layers": []}
    for layer in LAYERS:
        for xgrad in (True, False):
            out["layers"].append({"in": layer[0], "out": layer[1], "kernel": layer[2], "stride": layer[3],
                                  "pad": layer[4], "dilation": layer[5], "groups": layer[6], "batch": layer[7],
                                  "side": layer[8], "input_grad": xgrad, "scratch_bytes": measure(layer, xgrad)})
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
