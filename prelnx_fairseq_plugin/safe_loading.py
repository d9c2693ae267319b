"""Safe checkpoint loading for fairseq, whatever torch's default: `weights_only=True` always, plus an allowlist.

fairseq 0.12 calls `torch.load` without `weights_only`. `force_safe_loading` makes every `torch.load` in the process
pass `weights_only=True` (fairseq's loader included) and allowlists exactly the plain globals fairseq pickles beside
the tensors (the run's argparse `Namespace`, NumPy arrays and scalars). A refused file raises `CheckpointRefused`,
naming the file and the global, never suggesting to turn safe loading off. On a torch older than MIN_TORCH every
load is refused before torch reads a byte (ADVISORIES), judged at load time, so a torch installed later counts too.

It imports only torch and NumPy, so prelnx's own process can load it by path (`prelnx.records.checkpoints`).
"""

import argparse
import functools
import pickle
import re

import numpy
import torch


class CheckpointRefused(pickle.UnpicklingError):
    """A checkpoint pickles something other than tensors and fairseq's allowlisted types (or torch is too old)."""


MIN_TORCH = (2, 10)  # pyproject.toml's floor says the same
ADVISORIES = (
    "CVE-2025-32434: torch.load with weights_only=True can run code, fixed in 2.6.0; "
    "CVE-2026-24747: its weights_only unpickler can corrupt memory, fixed in 2.10.0"
)


def _release(version: str) -> tuple[int, int, int, int]:
    """`2.10.1+cpu` -> (2, 10, 1, 0); a pre-release, `2.10.0a0+git1234`, -> (2, 10, 0, -1): it comes before
    2.10.0 and may lack its fixes. A version that cannot be read counts as the oldest."""
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?([^+]*)", version)
    if not found:
        return (0, 0, 0, 0)
    major, minor, patch, rest = found.groups()
    return (int(major), int(minor), int(patch or 0), -1 if re.search(r"[a-z]", rest, re.IGNORECASE) else 0)


def torch_refusal(source: object) -> str | None:
    """Why no checkpoint may be loaded with this process's torch, naming `source`; None when that torch is recent."""
    version = str(torch.__version__)
    if _release(version) >= (*MIN_TORCH, 0, 0):
        return None
    floor = ".".join(map(str, MIN_TORCH))
    return (
        f"{source}: refused: torch {version} is older than {floor}, and checkpoint loading on it has known exploits "
        f"({ADVISORIES}); prelnx loads no checkpoint with it: install torch >= {floor} (pip install 'torch>={floor}')"
    )


_NUMPY_CORE = getattr(numpy, "_core", None) or numpy.core  # numpy 2 renamed numpy.core to numpy._core
_NUMPY_FUNCTIONS = (_NUMPY_CORE.multiarray._reconstruct, _NUMPY_CORE.multiarray.scalar)
FAIRSEQ_CHECKPOINT_GLOBALS = [  # the run's Namespace; NumPy arrays and scalars (fairseq's RNG and best-metric state)
    argparse.Namespace, numpy.ndarray, numpy.dtype, *_NUMPY_FUNCTIONS,
    *(type(numpy.dtype(name)) for name in ("float64", "float32", "int64", "int32", "uint32", "bool")),
]
# torch's wording varies by version: "Unsupported global: GLOBAL posix.system ...",
# "Trying to load unsupported GLOBAL posix.system whose module posix is blocked."
_FORBIDDEN = re.compile(r"GLOBAL ([\w.]+)")


def is_refusal(error: BaseException) -> bool:
    """Whether safe loading refused the file (as opposed to the file not being a pickle at all)."""
    text = str(error)
    return isinstance(error, CheckpointRefused) or bool(_FORBIDDEN.search(text)) or "allowed global" in text


def refusal_message(source: object, error: BaseException) -> str:
    """One line: which file, which global, and that it will not be loaded (never torch's hint to disable safety)."""
    found = _FORBIDDEN.search(str(error))
    what = f"it pickles {found.group(1)}" if found else "it pickles objects"
    return (
        f"{source}: refused: {what}, which is neither a tensor nor one of the plain types fairseq stores in "
        f"checkpoints; prelnx loads checkpoints only with safe (weights_only) loading and will not load this file"
    )


def force_safe_loading() -> None:
    """Make `torch.load` in this process always load with weights_only=True and the allowlist. Idempotent."""
    torch.serialization.add_safe_globals(FAIRSEQ_CHECKPOINT_GLOBALS)
    try:  # the same functions under the names numpy 1.x pickled (older checkpoints); (object, name): torch >= 2.5
        torch.serialization.add_safe_globals([(f, f"numpy.core.multiarray.{f.__name__}") for f in _NUMPY_FUNCTIONS])
    except (TypeError, AttributeError):
        pass
    if getattr(torch.load, "_prelnx_safe", False):
        return
    unsafe_load = torch.load

    @functools.wraps(unsafe_load)
    def safe_load(f, *args, **kwargs):
        source = str(getattr(f, "name", f))
        too_old = torch_refusal(source)
        if too_old:
            raise CheckpointRefused(too_old)
        kwargs["weights_only"] = True  # whatever the caller or torch's default says
        try:
            return unsafe_load(f, *args, **kwargs)
        except pickle.UnpicklingError as error:
            if not is_refusal(error):
                raise  # not a pickle at all (a damaged or foreign file): the caller says so
            raise CheckpointRefused(refusal_message(source, error)) from None

    safe_load._prelnx_safe = True
    torch.load = safe_load
