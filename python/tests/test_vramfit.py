"""Tests of the installed vramfit package (tests/cli/test_python.sh runs them
in a fresh venv on Debian's python3). VRAMFIT_CLI is the vramfit binary of
the same build: every answer must equal its --json object."""
import ctypes
import gc
import json
import os
import pickle
import random
import resource
import struct
import subprocess
import sys
import tempfile
import unittest

import torch

import vramfit

CLI = os.environ["VRAMFIT_CLI"]


def cli_json(*args):
    p = subprocess.run([CLI, *args, "--json"], capture_output=True, text=True)
    return p.returncode, (json.loads(p.stdout) if p.stdout.strip() else None), p.stderr


def write_st(path, tensors):
    """A safetensors file from (name, dtype, shape, bytes), by the format's spec."""
    hdr, off, data = {}, 0, b""
    for name, dt, shape, b in tensors:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        data += b
    h = json.dumps(hdr).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)
    return 8 + len(h)


def raw(t):
    """The tensor's bytes where they lie (a view's memory, not a copy)."""
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


class Commands(unittest.TestCase):
    def test_estimate_equals_the_command(self):
        rc, want, _ = cli_json("estimate", "Qwen/Qwen3-8B", "--gpu", "H100", "--context", "8192")
        got = vramfit.estimate("Qwen/Qwen3-8B", gpu="H100", context=8192)
        self.assertEqual(rc, 0)
        self.assertEqual(got["per_gpu_bytes"], want["per_gpu_bytes"])
        self.assertEqual(got, want)

    def test_knobs_as_keywords(self):
        _, want, _ = cli_json("estimate", "meta-llama/Llama-3.1-8B", "--train", "--lora-rank", "16", "--offline")
        self.assertEqual(vramfit.estimate("meta-llama/Llama-3.1-8B", train=True, lora_rank=16, offline=True), want)

    def test_every_command(self):
        cases = [(vramfit.inspect, ("Qwen/Qwen3-8B",), {}, ["inspect", "Qwen/Qwen3-8B"]),
                 (vramfit.fit, ("Qwen/Qwen3-8B",), {"gpu": "RTX-4090", "context": 40960},
                  ["fit", "Qwen/Qwen3-8B", "--gpu", "RTX-4090", "--context", "40960"]),
                 (vramfit.plan, ("Qwen/Qwen3-8B",), {"emit": "vllm", "gpu": "H100"},
                  ["plan", "Qwen/Qwen3-8B", "--emit", "vllm", "--gpu", "H100"]),
                 (vramfit.sweep, ("Qwen/Qwen3-8B",), {"gpu": "H100", "values": [1024, 4096]},
                  ["sweep", "Qwen/Qwen3-8B", "--gpu", "H100", "--values", "1024,4096"]),
                 (vramfit.models, (), {}, ["models"])]
        for fn, args, kw, argv in cases:
            with self.subTest(argv[0]):
                rc, want, _ = cli_json(*argv)
                self.assertEqual(fn(*args, **kw), want)
        self.assertFalse(vramfit.fit("Qwen/Qwen3-8B", gpu="RTX-4090", context=40960)["fits"])  # exit 1 is an answer

    def test_unknown_model_raises_the_commands_message(self):
        rc, _, err = cli_json("estimate", "no-such/model-xyz", "--offline")
        with self.assertRaises(vramfit.InputError) as c:
            vramfit.estimate("no-such/model-xyz", offline=True)
        self.assertEqual(rc, 3)
        self.assertEqual(c.exception.exit_code, 3)
        self.assertEqual("vramfit: " + str(c.exception), err.strip().splitlines()[-1])
        self.assertIsInstance(c.exception, vramfit.Error)

    def test_usage_error(self):
        with self.assertRaises(vramfit.UsageError) as c:
            vramfit.estimate("Qwen/Qwen3-8B", context="lots")
        self.assertEqual(c.exception.exit_code, 2)
        self.assertNotIn("\n", str(c.exception))

    def test_snapshot(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "s.pickle")
        with open(path, "wb") as f:
            pickle.dump({"segments": [{"device": 0, "address": 4096, "total_size": 3 << 20, "stream": 0,
                                       "segment_type": "large", "segment_pool_id": (0, 0),
                                       "blocks": [{"address": 4096, "size": 2 << 20, "requested_size": 2 << 20,
                                                   "state": "active_allocated", "frames": []},
                                                  {"address": 4096 + (2 << 20), "size": 1 << 20,
                                                   "state": "inactive", "frames": []}]}],
                         "device_traces": [[]]}, f)
        got = vramfit.snapshot(path)
        self.assertEqual(got, cli_json("snapshot", path)[1])
        self.assertEqual((got["reserved_bytes"], got["allocated_bytes"], got["inactive_bytes"]),
                         (3 << 20, 2 << 20, 1 << 20))


class Loader(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        r = random.Random(7)
        self.rb = lambda n: bytes(r.getrandbits(8) for _ in range(n))

    def test_every_dtype_equals_the_files_bytes(self):
        f32 = [1.5, -2.25, 3.0, 0.125, 1e10, -7.0]
        i64 = [-1, 1 << 40, 7]
        ts = [("a.f32", "F32", [2, 3], struct.pack("<6f", *f32)), ("b.f16", "F16", [4], self.rb(8)),
              ("c.bf16", "BF16", [2, 2], self.rb(8)), ("d.i64", "I64", [3], struct.pack("<3q", *i64)),
              ("e.u8", "U8", [5], self.rb(5)), ("f.fp8", "F8_E4M3", [2, 4], self.rb(8))]
        path = os.path.join(self.dir, "m.safetensors")
        write_st(path, ts)
        t = vramfit.load_safetensors(path, device="cpu")
        want_dtype = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
                      "U8": torch.uint8, "F8_E4M3": torch.uint8}  # torch 1.13 has no float8: raw bytes, named
        for name, dt, shape, b in ts:
            with self.subTest(name):
                self.assertEqual(t[name].dtype, want_dtype[dt])
                self.assertEqual(list(t[name].shape), shape)
                self.assertEqual(raw(t[name]), b)
                self.assertEqual(t.dtypes[name], dt)
                self.assertEqual(name in t.raw, dt == "F8_E4M3")
        self.assertEqual(t["a.f32"].flatten().tolist(), f32)
        self.assertEqual(t["d.i64"].tolist(), i64)
        self.assertEqual(t["b.f16"].view(torch.int16).tolist(), list(struct.unpack("<4h", ts[1][3])))
        # views into one allocation: addresses differ as the offsets do
        base = t["a.f32"].data_ptr()
        off = 0
        for name, _, _, b in ts:
            self.assertEqual(t[name].data_ptr() - base, off)
            off += len(b)

    def test_sharded(self):
        a = [("x", "F32", [4], self.rb(16)), ("y", "BF16", [3], self.rb(6))]
        b = [("z", "I64", [2], self.rb(16)), ("w", "U8", [3], self.rb(3))]
        write_st(os.path.join(self.dir, "model-00001-of-00002.safetensors"), a)
        write_st(os.path.join(self.dir, "model-00002-of-00002.safetensors"), b)
        wm = {n: "model-00001-of-00002.safetensors" for n, *_ in a}
        wm.update({n: "model-00002-of-00002.safetensors" for n, *_ in b})
        ix = os.path.join(self.dir, "model.safetensors.index.json")
        with open(ix, "w") as f:
            json.dump({"metadata": {}, "weight_map": wm}, f)
        t = vramfit.load_safetensors(ix)
        self.assertEqual(sorted(t), ["w", "x", "y", "z"])
        for name, _, _, data in a + b:
            self.assertEqual(raw(t[name]), data)
        self.assertEqual(t["y"].data_ptr() - t["x"].data_ptr(), 16)
        self.assertEqual(t["w"].data_ptr() - t["z"].data_ptr(), 16)

    def test_errors(self):
        with self.assertRaises(vramfit.InputError):
            vramfit.load_safetensors(os.path.join(self.dir, "none.safetensors"))
        with self.assertRaises(vramfit.InputError):
            vramfit.load_safetensors("Qwen/Qwen3-8B")  # a description without weights
        with self.assertRaises(ValueError):
            vramfit.load_safetensors("x", device="mps")


MEASURE = r"""
import gc, os, resource, sys, torch, torch.utils.dlpack, vramfit
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
base_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = rss()
t = vramfit.load_safetensors(sys.argv[1], device="cpu")
loaded = rss()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
keep = t["b"]
del t
gc.collect()
one_left = rss()
del keep
gc.collect()
print(before, loaded, max(peak, base_peak), one_left, rss())
"""


class HostMemory(unittest.TestCase):
    def test_ring_plus_tensors_and_freed_with_the_last(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "big.safetensors")
        n = 128 << 20
        hdr = write_st(path, [("a", "BF16", [n // 4], b""), ("b", "U8", [16], b"")])  # header only...
        with open(path, "r+b") as f:  # ...then the real header for the data, written sparse
            h = json.dumps({"a": {"dtype": "BF16", "shape": [n // 4], "data_offsets": [0, n // 2]},
                            "b": {"dtype": "U8", "shape": [n // 2], "data_offsets": [n // 2, n]}}).encode()
            h += b" " * ((8 - len(h) % 8) % 8)
            f.seek(0)
            f.write(struct.pack("<Q", len(h)) + h)
            f.truncate(8 + len(h) + n)
        del hdr
        p = subprocess.run([sys.executable, "-c", MEASURE, path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        before, loaded, peak, one_left, after = map(int, p.stdout.split())
        mib = 1 << 20
        print("\n  host RSS: %.1f MiB before, %.1f MiB loaded (+%.1f MiB for %d MiB of tensors), peak %.1f MiB, "
              "one tensor left %.1f MiB, none %.1f MiB" % (before / mib, loaded / mib, (loaded - before) / mib,
                                                         n // mib, peak / mib, one_left / mib, after / mib),
              file=sys.stderr)
        self.assertLessEqual(peak - before, n + (64 << 20))  # the host device reads in place: no ring on top
        self.assertGreaterEqual(loaded - before, n - (8 << 20))
        self.assertGreaterEqual(one_left - before, n - (8 << 20))  # one view keeps its file's allocation
        self.assertLessEqual(after - before, 16 << 20)  # the last tensor took it with it


if __name__ == "__main__":
    unittest.main(verbosity=2)
