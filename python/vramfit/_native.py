"""The libraries, through ctypes: libvramfit.so.0 (the loader's DLPack tensors)
and libvramfit-cli.so (the vramfit command run in-process: its --json answers
and one-line errors exactly). Found in the package's _lib (the copies made
when it was installed), else VRAMFIT_LIB_DIR, else the repository's build/."""
import ctypes
import os
import threading

_HERE = os.path.dirname(os.path.abspath(__file__))


def _lib_dir():
    for d in (os.path.join(_HERE, "_lib"), os.environ.get("VRAMFIT_LIB_DIR", ""),
              os.path.join(_HERE, "..", "..", "build")):
        if d and os.path.isfile(os.path.join(d, "libvramfit-cli.so")):
            return d
    raise ImportError("vramfit: libvramfit-cli.so not found (run 'make', then 'pip install ./python')")


LIB_DIR = _lib_dir()
_core_name = "libvramfit.so.0" if os.path.isfile(os.path.join(LIB_DIR, "libvramfit.so.0")) else "libvramfit.so"
core = ctypes.CDLL(os.path.join(LIB_DIR, _core_name))
cli = ctypes.CDLL(os.path.join(LIB_DIR, "libvramfit-cli.so"))
# The command's globals (getopt) and the process's stdout/stderr: one call at a time.
lock = threading.Lock()

cli.vf_cli_run.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_void_p),
                           ctypes.POINTER(ctypes.c_void_p)]
cli.vf_cli_run.restype = ctypes.c_int
cli.vf_cli_release.argtypes = [ctypes.c_void_p]
cli.vf_cli_release.restype = None


def run(args):
    """Runs 'vramfit ARGS...' in this process: (exit status, stdout, stderr)."""
    argv = [b"vramfit"] + [a.encode() if isinstance(a, str) else bytes(a) for a in args]
    arr = (ctypes.c_char_p * (len(argv) + 1))(*argv, None)
    out, err = ctypes.c_void_p(), ctypes.c_void_p()
    with lock:
        rc = cli.vf_cli_run(len(argv), arr, ctypes.byref(out), ctypes.byref(err))
    texts = []
    for p in (out, err):
        texts.append(ctypes.string_at(p.value).decode("utf-8", "replace") if p.value else "")
        cli.vf_cli_release(p)
    return rc, texts[0], texts[1]


class Error(ctypes.Structure):
    """vf_error: status, then a 512-byte message, in 1024 bytes."""
    _fields_ = [("status", ctypes.c_int), ("msg", ctypes.c_char * 512), ("_reserved", ctypes.c_ubyte * 508)]


class LoadOpts(ctypes.Structure):
    """vf_load_opts (include/vramfit.h), 256 bytes."""
    _fields_ = [("device", ctypes.c_char * 32), ("staging_bytes", ctypes.c_uint64), ("buffers", ctypes.c_uint32),
                ("threads", ctypes.c_uint32), ("direct", ctypes.c_bool), ("verify", ctypes.c_bool),
                ("device_map", ctypes.c_char_p), ("progress", ctypes.c_void_p), ("progress_user", ctypes.c_void_p),
                ("cancel", ctypes.c_void_p), ("_reserved", ctypes.c_ubyte * 168)]


assert ctypes.sizeof(Error) == 1024 and ctypes.sizeof(LoadOpts) == 256

_sig = [("vf_load_opts_init", None, [ctypes.POINTER(LoadOpts)]),
        ("vf_model_open", ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(Error)]),
        ("vf_dlpack_load", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(LoadOpts), ctypes.POINTER(ctypes.c_void_p),
                                          ctypes.c_void_p, ctypes.POINTER(Error)]),
        ("vf_dlpack_count", ctypes.c_size_t, [ctypes.c_void_p]),
        ("vf_dlpack_name", ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
        ("vf_dlpack_dtype", ctypes.c_char_p, [ctypes.c_void_p, ctypes.c_size_t]),
        ("vf_dlpack_raw", ctypes.c_bool, [ctypes.c_void_p, ctypes.c_size_t]),
        ("vf_dlpack_take", ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(Error)]),
        ("vf_dlpack_release", None, [ctypes.c_void_p]),
        ("vf_version", ctypes.c_char_p, [])]
for _name, _res, _args in _sig:
    _f = getattr(core, _name)
    _f.restype, _f.argtypes = _res, _args
