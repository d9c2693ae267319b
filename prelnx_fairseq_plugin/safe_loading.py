"""Let fairseq load its own checkpoints under torch >= 2.6, where `torch.load` defaults to `weights_only=True`.

fairseq pickles a few plain Python/NumPy objects next to the tensors (the argparse `Namespace` of the run,
NumPy scalars for best metrics). We allowlist exactly those globals; safe loading stays on for everything
else. This is the one place prelnx touches checkpoint loading: training, resume, evaluation and averaging
all go through fairseq's `checkpoint_utils`, which calls `torch.load` and so sees this allowlist.
"""

import argparse

import numpy
import torch


def _numpy_globals() -> list:
    """NumPy arrays and scalars (fairseq stores some RNG and best-metric state as NumPy objects)."""
    core = getattr(numpy, "_core", None) or numpy.core  # numpy 2 renamed numpy.core to numpy._core
    found = [numpy.ndarray, numpy.dtype, core.multiarray._reconstruct, core.multiarray.scalar]
    found += [type(numpy.dtype(name)) for name in ("float64", "float32", "int64", "int32", "uint32", "bool")]
    return found


FAIRSEQ_CHECKPOINT_GLOBALS = [argparse.Namespace, *_numpy_globals()]


def allow_fairseq_checkpoint_globals() -> None:
    if hasattr(torch.serialization, "add_safe_globals"):  # torch < 2.4 loads unsafely by default anyway
        torch.serialization.add_safe_globals(FAIRSEQ_CHECKPOINT_GLOBALS)
