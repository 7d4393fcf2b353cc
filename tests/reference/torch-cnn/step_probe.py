#!/usr/bin/env python3
"""Two small networks' training steps measured with oracle.py's method (issue 23: the step's peak).

A development tool, not part of the test suite; tests/unit/test_graph_step.c asserts its figures
(step_probe.json). Debian bookworm /usr/bin/python3, python3-torch 1.13.1, CPU, one thread.

    OMP_NUM_THREADS=1 /usr/bin/python3 step_probe.py > step_probe.json

- seg: Conv2d(3, 8, 3, padding=1), ReLU(inplace=True), Conv2d(8, 21, 1) on [2, 3, 64, 64], cross-entropy
  against int64 targets [2, 64, 64], AdamW(foreach=False): the peak is the loss's backward.
- mlp: Linear(256, 4096), ReLU(inplace=True), (Sigmoid, Tanh) x 3, Linear(4096, 10) on [32, 256],
  SGD(momentum=0.9, foreach=False): the saved tensors are freed through backward while the big first
  layer's gradient is made last, so the peak is well below gradients + saved tensors.

Each figure is the steady-state step (the second, optimizer state present): baseline (parameters,
buffers, inputs, targets, optimizer state) + the running-sum peak of zero_grad(set_to_none=True),
forward, loss, backward, step (oracle.profiled_train_step); saved tensors by saved-tensor hooks.
"""
import json
import os
import sys

os.environ["OMP_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

oracle.loss_fn = lambda name, out, y: F.cross_entropy(out, y)


def probe(name, model, x, y, opt):
    oracle.profiled_train_step(name, model, opt, x, y)  # the first step allocates the optimizer state
    s, saved = oracle.profiled_train_step(name, model, opt, x, y, hooks=True)
    s2, _ = oracle.profiled_train_step(name, model, opt, x, y)
    return {"network": name, "saved_activation_bytes": saved["saved_activation_bytes"],
            "saved_input_bytes": saved["saved_input_bytes"], "train_step_peak": s2["peak_abs"],
            "baseline_bytes": s2["baseline_bytes"], "peak_delta": s2["peak_delta"],
            "peak_delta_excl_intra_op": s2["peak_delta_excl_intra_op"], "peak_phase": s2["peak_phase"],
            "peak_op": s2["peak_ctx"]["outer_op"], "repeat_identical": s["peak_abs"] == s2["peak_abs"]}


def main():
    torch.set_num_threads(1)
    out = {"torch": torch.__version__, "method": "oracle.profiled_train_step (README.md, Method)", "networks": []}
    g = torch.Generator().manual_seed(1)
    torch.manual_seed(0)
    seg = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(inplace=True), nn.Conv2d(8, 21, 1))
    x, y = torch.randn(2, 3, 64, 64, generator=g), torch.randint(0, 21, (2, 64, 64), generator=g)
    out["networks"].append(probe("seg", seg, x, y, torch.optim.AdamW(seg.parameters(), lr=1e-3, foreach=False)))
    mlp = nn.Sequential(nn.Linear(256, 4096), nn.ReLU(inplace=True), nn.Sigmoid(), nn.Tanh(), nn.Sigmoid(), nn.Tanh(),
                        nn.Sigmoid(), nn.Tanh(), nn.Linear(4096, 10))
    x, y = torch.randn(32, 256, generator=g), torch.randint(0, 10, (32,), generator=g)
    out["networks"].append(probe("mlp", mlp, x, y,
                                 torch.optim.SGD(mlp.parameters(), lr=1e-3, momentum=0.9, foreach=False)))
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
