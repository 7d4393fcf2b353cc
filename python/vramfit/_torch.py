"""load_safetensors: a checkpoint streamed by libvramfit's loader into one
allocation per file (through the pinned ring for CUDA; read in place for the
host), each tensor a view handed to PyTorch as a DLPack capsule that
libvramfit produced. The memory is freed when the last tensor is."""
import ctypes

from . import _native
from .errors import error_for

_py_capsule_new = ctypes.pythonapi.PyCapsule_New
_py_capsule_new.restype = ctypes.py_object
_py_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_DLTENSOR = b"dltensor"  # the capsule's name, as the DLPack protocol fixes it (kept alive here)
_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DELETER_OFFSET = 56  # DLManagedTensor: DLTensor (48 bytes), manager_ctx, deleter


class Tensors(dict):
    """{name: torch.Tensor}; .dtypes names every tensor's type as the file
    stores it ("BF16", "F8_E4M3", "Q4_K"); .raw holds the names handed over
    as their raw bytes (uint8): types torch lacks (FP8 in torch 1.13,
    U16-U64, GGUF's quantized blocks)."""

    def __init__(self):
        super().__init__()
        self.dtypes = {}
        self.raw = set()


def _device_name(device):
    d = str(device)
    if d == "cpu":
        return "host"
    if d == "cuda":
        return "cuda:0"
    if d.startswith("cuda:"):
        return d
    raise ValueError("vramfit: device %r is not 'cpu' or 'cuda:N'" % (device,))


def _to_torch(ptr):
    from torch.utils.dlpack import from_dlpack

    capsule = _py_capsule_new(ptr, _DLTENSOR, None)
    try:
        return from_dlpack(capsule)
    except Exception:
        _DELETER(ctypes.c_void_p.from_address(ptr + _DELETER_OFFSET).value)(ptr)  # never consumed: ours to free
        raise


def load_safetensors(path, device="cpu", staging_mb=None, threads=None):
    """Loads a .safetensors file, a sharded checkpoint's index.json, a
    directory, or a .gguf into torch tensors on device ("cpu" or "cuda:N")."""
    opts = _native.LoadOpts()
    _native.core.vf_load_opts_init(ctypes.byref(opts))
    opts.device = _device_name(device).encode()
    if staging_mb:
        opts.staging_bytes = int(staging_mb) << 20
    if threads:
        opts.threads = int(threads)
    err = _native.Error()
    s = ctypes.c_void_p()
    m = ctypes.c_void_p()
    st = _native.core.vf_model_open(str(path).encode(), ctypes.byref(m), ctypes.byref(err))
    if st != 0:
        raise _error(st, err)
    st = _native.core.vf_dlpack_load(m, ctypes.byref(opts), ctypes.byref(s), None, ctypes.byref(err))  # takes m
    if st != 0:
        raise _error(st, err)
    out = Tensors()
    try:
        for i in range(_native.core.vf_dlpack_count(s)):
            name = _native.core.vf_dlpack_name(s, i).decode()
            ptr = _native.core.vf_dlpack_take(s, i, ctypes.byref(err))
            if not ptr:
                raise _error(err.status, err)
            t = _to_torch(ptr)
            out[name] = t
            out.dtypes[name] = _native.core.vf_dlpack_dtype(s, i).decode()
            if _native.core.vf_dlpack_raw(s, i):
                out.raw.add(name)
    finally:
        _native.core.vf_dlpack_release(s)  # the tensors hold the memory from here on
    return out


# vf_status -> the command's exit status (src/cli/exit_code.h)
_EXIT = {1: 2, 2: 4, 3: 4, 4: 3, 5: 3, 6: 3, 7: 3, 8: 5, 9: 5, 10: 4}


def _error(status, err):
    return error_for(_EXIT.get(status, 1), "vramfit: " + err.msg.decode("utf-8", "replace"))
