"""vramfit from Python: the vramfit command's answers as dicts, weights
streamed into torch tensors, PyTorch memory snapshots explained.

    import vramfit
    vramfit.estimate("Qwen/Qwen3-8B", gpu="H100", context=8192)["per_gpu_bytes"]
    vramfit.fit("Qwen/Qwen3-8B", gpu="RTX-4090", train=True, lora_rank=16)["fits"]
    tensors = vramfit.load_safetensors("model.safetensors", device="cuda:0")
    vramfit.snapshot("memory_snapshot.pickle")["leak_suspects"]

Errors raise vramfit.Error subclasses (UsageError, InputError, IOFailure,
DeviceError: the command's exit statuses 2-5) with its one-line message."""
from ._commands import estimate, fit, inspect, models, plan, snapshot, sweep
from ._native import run
from ._torch import Tensors, load_safetensors
from .errors import DeviceError, Error, InputError, IOFailure, UsageError

__version__ = "0.1.0"
__all__ = ["inspect", "estimate", "fit", "plan", "sweep", "models", "snapshot", "load_safetensors", "Tensors",
           "run", "Error", "UsageError", "InputError", "IOFailure", "DeviceError"]
