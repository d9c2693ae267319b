"""Reading fairseq checkpoints safely (the plugin's `safe_loading`, loaded by path before fairseq starts: a planted
checkpoint refused with one message), choosing the one a resume may trust (a damaged one set aside for the newest
intact one), and the one grammar of --checkpoint (`checkpoint_grammar`; finetune's also `stages`, repeated).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
import threading
import time
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prelnx.exits import Refusal
from prelnx.plugin_path import PLUGIN_DIR


class CheckpointRefused(Refusal):
    """A checkpoint safe loading will not load (it pickles a forbidden global); the message names both."""


class CheckpointDamaged(Refusal):
    """A checkpoint that cannot be read (truncated, not a checkpoint)."""


SAFE_LOADING = "prelnx_fairseq_plugin.safe_loading"  # its name when fairseq imports the plugin (--user-dir)
_SAFE_LOADING_LOCK = threading.Lock()
_LOADED: list[Any] = []  # the module once it has run and force_safe_loading() has been applied


def safe_loading() -> Any:
    """The plugin's safe_loading module, loaded by path (the package __init__ imports fairseq) under the plugin's own
    name: one copy per process. Under a lock, in sys.modules only once it has run, for a sweep's threads."""
    with _SAFE_LOADING_LOCK:
        if not _LOADED:
            module = sys.modules.get(SAFE_LOADING)
            if module is None:
                spec = importlib.util.spec_from_file_location(SAFE_LOADING, PLUGIN_DIR / "safe_loading.py")
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                module = sys.modules.setdefault(SAFE_LOADING, module)
            module.force_safe_loading()
            _LOADED.append(module)
        return _LOADED[0]


def load_checkpoint(path: Path, *, mmap: bool = False) -> dict[str, Any]:
    """The checkpoint's state, loaded safely; CheckpointRefused or CheckpointDamaged otherwise (an OSError, no verdict
    on the content, propagates)."""
    import pickle

    import torch

    loader = safe_loading()
    mmap = mmap and zipfile.is_zipfile(path)  # torch's legacy (non-zip) format cannot be memory-mapped
    try:
        return torch.load(str(path), map_location="cpu", weights_only=True, mmap=mmap)
    except loader.CheckpointRefused as error:
        raise CheckpointRefused(str(error)) from None
    except pickle.UnpicklingError as error:
        if loader.is_refusal(error):
            raise CheckpointRefused(loader.refusal_message(path, error)) from None
        raise CheckpointDamaged(f"{path}: damaged or not a checkpoint (its bytes are not a torch checkpoint)") from None
    except (RuntimeError, EOFError, ValueError, KeyError, IndexError, TypeError, AttributeError) as error:
        # a few bytes that are no zip file go to torch's legacy unpickler, which fails in many ways (IndexError...)
        said = ": ".join([type(error).__name__, *str(error).strip().splitlines()[:1]])  # KeyError's words: a bare key
        raise CheckpointDamaged(f"{path}: damaged or not a checkpoint ({said})") from None


@dataclass(frozen=True)
class CheckpointInfo:
    path: Path
    epoch: int  # the last epoch the checkpoint trained (completed, or stopped in by max_update)
    update: int
    mid_epoch: bool = False  # saved inside `epoch` (every N updates, or max_update), not at its end

    def meets(self, max_epoch: int | None, max_update: int | None) -> bool:
        """Whether this checkpoint has trained the whole budget (fairseq would train one update more on resume)."""
        return (max_update is not None and self.update >= max_update) or (
            max_epoch is not None and self.epoch >= max_epoch and not self.mid_epoch)


def checkpoint_info(path: Path) -> CheckpointInfo:
    """Epoch and update count stored in a fairseq checkpoint (read with mmap: the weights are not read)."""
    state = load_checkpoint(path, mmap=True)
    try:
        # fairseq's EpochBatchIterator.state_dict: at the end of epoch E it stores epoch E+1 with 0 iterations;
        # when training stopped inside epoch E (max_update), epoch E with the iterations done, and fairseq
        # validated and logged that partial epoch like a whole one.
        iterator = state["extra_state"]["train_iterator"]
        mid_epoch = bool(iterator.get("iterations_in_epoch", 0))
        epoch = int(iterator["epoch"]) - (0 if mid_epoch else 1)
        update = int(state["optimizer_history"][-1]["num_updates"])
    except (KeyError, IndexError, TypeError) as error:
        raise CheckpointDamaged(f"{path}: not a fairseq training checkpoint (no {error})") from None
    return CheckpointInfo(path, epoch, update, mid_epoch)


CHECKPOINT_NAMES = {"best": "checkpoint_best.pt", "last": "checkpoint_last.pt"}
STAGES = "stages"  # every kept checkpoint_<epoch>_<update>.pt (Figure 5b/c's stages), where several are taken


def checkpoint_grammar(many: bool = False) -> str:
    """The one grammar of --checkpoint (evaluate, grads, finetune), in words: their help and their refusals."""
    stages = f", {STAGES} (every kept checkpoint_<epoch>_<update>.pt: Figure 5b/c's stages)" if many else ""
    return (f"best, last{stages}, a file of the run dir's checkpoints/ (checkpoint2.pt) or a path to a .pt "
            f"(./model.pt)")  # fmt: skip


@dataclass(frozen=True)
class CheckpointChoice:
    """One --checkpoint value, parsed; `run_dir_as`: how the command is given its run dir (`--run-dir RUN_DIR`)."""

    text: str
    kind: str  # "best" | "last" | "stages" | "name" | "path"
    run_dir_as: str

    @property
    def in_run(self) -> bool:
        """Whether it names a checkpoint of the run dir (everything but a path)."""
        return self.kind != "path"

    def files(self, run_dir: Path | None) -> list[Path]:
        """The checkpoint file(s) it names, each an existing file; a Refusal (one line) otherwise."""
        if not self.in_run:
            found = [Path(self.text)]
        elif run_dir is None:
            raise Refusal(f"--checkpoint {self.text}: a checkpoint of a run dir; give the run dir ({self.run_dir_as}), "
                          f"or a path to a .pt (./{self.text if self.kind == 'name' else 'model.pt'})")  # fmt: skip
        elif self.kind == STAGES:
            found = update_checkpoints(run_dir / "checkpoints")
            if not found:
                raise Refusal(f"--checkpoint {STAGES}: {run_dir / 'checkpoints'} keeps no "
                              f"checkpoint_<epoch>_<update>.pt (train.keep_last_epochs, train.keep_every_updates)")
        else:
            found = [run_dir / "checkpoints" / CHECKPOINT_NAMES.get(self.text, self.text)]
        for path in found:
            if path.is_file():
                continue
            if not self.in_run:
                raise Refusal(f"--checkpoint {self.text}: no such file")
            kept = sorted(p.name for p in path.parent.glob("*.pt"))
            held = (f"it holds {', '.join(kept)}" if kept else
                    "it holds no checkpoint" if path.parent.is_dir() else "no such folder")  # fmt: skip
            raise Refusal(f"--checkpoint {self.text}: {path.parent} has no {path.name} ({held})")
        return found


def parse_checkpoints(values: Sequence[str | CheckpointChoice], *, run_dir_as: str,
                      many: bool = False) -> tuple[CheckpointChoice, ...]:  # fmt: skip
    """The one parser of --checkpoint (`many`: finetune's). Reads no file; a bad value is a Refusal naming the
    grammar; `RUN_DIR:best` answers with today's spelling."""
    if len(values) > 1 and not many:
        raise Refusal(f"--checkpoint: one checkpoint here, got {len(values)}")
    return tuple(value if isinstance(value, CheckpointChoice) else _parse(value, run_dir_as, many) for value in values)


def _parse(text: str, run_dir_as: str, many: bool) -> CheckpointChoice:
    run_dir, sep, which = text.rpartition(":")
    if text in CHECKPOINT_NAMES or text == STAGES:
        if text == STAGES and not many:
            raise Refusal(f"--checkpoint {STAGES}: several checkpoints, and this command takes one: "
                          f"{checkpoint_grammar()}")  # fmt: skip
        return CheckpointChoice(text, text, run_dir_as)
    if sep and run_dir and which in (*CHECKPOINT_NAMES, STAGES):
        new = run_dir_as.replace("RUN_DIR", run_dir)
        raise Refusal(f"--checkpoint {text}: renamed {new} --checkpoint {which} (same meaning); use that spelling")
    if text.endswith(".pt") and Path(text).name != ".pt":
        return CheckpointChoice(text, "name" if Path(text).name == text else "path", run_dir_as)
    folder = f"; a run dir is given as {run_dir_as}" if text and Path(text).is_dir() else ""
    raise Refusal(f"--checkpoint {text!r}: expected {checkpoint_grammar(many)}{folder}")


def _numbered(checkpoint_dir: Path, pattern: str) -> list[Path]:
    found = [(int(m.group(1)), p) for p in checkpoint_dir.glob("*.pt") if (m := re.fullmatch(pattern, p.name))]
    return [path for _, path in sorted(found)]


def epoch_checkpoints(checkpoint_dir: Path) -> list[Path]:
    """checkpoint<E>.pt files, oldest epoch first."""
    return _numbered(checkpoint_dir, r"checkpoint(\d+)\.pt")


def update_checkpoints(checkpoint_dir: Path) -> list[Path]:
    """checkpoint_<E>_<U>.pt files (runs that save every N updates), oldest update first."""
    return _numbered(checkpoint_dir, r"checkpoint_\d+_(\d+)\.pt")


def remove_partial_writes(checkpoint_dir: Path) -> None:
    """Temporary files of a save or copy that was killed; never loadable, so removed."""
    for path in checkpoint_dir.glob("*.pt.tmp"):
        path.unlink(missing_ok=True)


def resume_point(checkpoint_dir: Path, say: Callable[[str], None]) -> CheckpointInfo | None:
    """The checkpoint the resume will start from: a damaged checkpoint_last.pt is renamed `*.damaged-<time>` and
    replaced by a copy of the newest intact one (none: training starts again), warned of through `say`. CheckpointRefused
    (nothing changed) for a checkpoint safe loading refuses; OSError when a file cannot be read or written."""
    remove_partial_writes(checkpoint_dir)
    last = checkpoint_dir / "checkpoint_last.pt"
    if not last.is_file():
        return None
    try:
        return checkpoint_info(last)
    except CheckpointDamaged as error:
        damaged = error
    aside = last.with_name(f"{last.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
    for candidate in reversed(epoch_checkpoints(checkpoint_dir) + update_checkpoints(checkpoint_dir)):
        try:
            info = checkpoint_info(candidate)
        except CheckpointDamaged as error:
            say(f"{error}; skipped")
            continue
        temporary = last.with_name(last.name + ".tmp")
        shutil.copyfile(candidate, temporary)  # first: a full disk here leaves checkpoint_last.pt where it was
        last.rename(aside)
        temporary.replace(last)
        say(f"{damaged}; kept as {aside.name}; resuming from {candidate.name} (epoch {info.epoch}, "
            f"update {info.update}) instead")  # fmt: skip
        return CheckpointInfo(last, info.epoch, info.update, info.mid_epoch)
    last.rename(aside)
    say(f"{damaged}; kept as {aside.name}; no intact checkpoint left, so training starts again")
    return None
