"""inspect, estimate, fit, plan, sweep, models, snapshot: the vramfit command's
--json answers as dicts. Keyword arguments are the command's options:
gpu="H100" is --gpu H100, train=True is --train, lora_rank=16 is
--lora-rank 16, values=[1024, 2048] is --values 1024,2048; False and None
leave an option out."""
import json

from . import _native
from .errors import error_for


def _argv(cmd, positional, knobs):
    args = [cmd] + [str(p) for p in positional]
    for key, value in knobs.items():
        if value is None or value is False:
            continue
        opt = "--" + key.replace("_", "-")
        if value is True:
            args.append(opt)
        elif isinstance(value, (list, tuple)):
            args += [opt, ",".join(str(v) for v in value)]
        else:
            args += [opt, str(value)]
    return args + ["--json"]


def _call(cmd, positional, knobs, ok=(0,)):
    rc, out, err = _native.run(_argv(cmd, positional, knobs))
    if rc not in ok:
        raise error_for(rc, err)
    try:
        return json.loads(out)
    except ValueError:
        raise error_for(4, "vramfit: %s printed no JSON object" % cmd) from None


def inspect(model, **knobs):
    return _call("inspect", [model], knobs)


def estimate(model, **knobs):
    return _call("estimate", [model], knobs)


def fit(model, **knobs):
    """Exit 1 (it does not fit) is an answer, not an error: see the dict's "fits"."""
    return _call("fit", [model], knobs, ok=(0, 1))


def plan(model, **knobs):
    return _call("plan", [model], knobs, ok=(0, 1))


def sweep(model, **knobs):
    return _call("sweep", [model], knobs)


def models(**knobs):
    return _call("models", [], knobs)


def snapshot(path, **knobs):
    """A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) explained."""
    return _call("snapshot", [path], knobs)
