"""Checkpoint averaging over model state dicts (as the Admin and fairseq WMT recipes average the last N epochs).

Checkpoints are read with fairseq's loader, so torch's safe (weights_only) loading and the plugin's
allowlist apply; nothing is unpickled unsafely.
"""

from __future__ import annotations

from pathlib import Path

from prelnx.config.errors import Refusal
from prelnx.records.checkpoints import epoch_checkpoints  # noqa: F401  (re-exported for evaluate)


class CheckpointError(Refusal):
    pass


def average_checkpoints(paths: list[Path], output: Path) -> Path:
    """Write a checkpoint whose model weights are the element-wise mean of `paths`' (the rest from the last)."""
    import torch
    from omegaconf import DictConfig, OmegaConf

    from prelnx.launch.inprocess import load_plugin

    load_plugin()  # the safe-loading allowlist
    from fairseq import checkpoint_utils

    if not paths:
        raise CheckpointError("no checkpoints to average")
    total: dict[str, "torch.Tensor"] = {}
    state = None
    for path in paths:
        state = checkpoint_utils.load_checkpoint_to_cpu(str(path))
        model = state["model"]
        if total and set(model) != set(total):
            raise CheckpointError(f"{path}: its parameters differ from {paths[0]}'s; cannot average")
        for key, tensor in model.items():
            value = tensor.double() if tensor.is_floating_point() else tensor
            total[key] = total[key] + value if key in total and tensor.is_floating_point() else value.clone()
    assert state is not None
    state["model"] = {
        key: (value / len(paths)).to(state["model"][key].dtype) if value.is_floating_point() else value
        for key, value in total.items()
    }
    if isinstance(state.get("cfg"), DictConfig):
        # fairseq's loader turned it into an OmegaConf object; store plain containers, as fairseq's own saver
        # does, so the averaged file loads under safe (weights_only) loading like any other checkpoint.
        state["cfg"] = OmegaConf.to_container(state["cfg"], resolve=True, enum_to_str=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_suffix(".tmp")
    torch.save(state, temporary)
    temporary.replace(output)
    return output
