"""Real run-dir files for the report's tests (no training): config.yaml, metrics.jsonl, status.json, sweep.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

PLATEAU_WORDS = 316  # a uniform target dictionary of 316 words: unigram plateau log2(316) = 8.30 bits


def write_dictionary(folder: Path, target: str = "en") -> float:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"dict.{target}.txt").write_text("".join(f"w{i} 10\n" for i in range(PLATEAU_WORDS)))
    return math.log2(PLATEAU_WORDS)


class Sweep:
    """A sweep dir filled run by run; `save()` writes its sweep.json."""

    def __init__(self, folder: Path, data: Path | None = None, task: str = "translation") -> None:
        self.folder, self.data, self.task, self.points = folder, data, task, []
        folder.mkdir(parents=True, exist_ok=True)

    def run(self, layout: str, warmup: int, losses: list[float], *, optimizer: str = "adam", lr: float = 1e-3,
            seed: int = 1, status: str = "finished", every: int = 10, nll: list[float] | None = None,
            extra: dict[str, object] | None = None, suffix: str = "") -> str:
        """`extra`: more config keys, dotted (`{"model.encoder_layers": 12}`); `suffix` to the run's name."""
        name = f"{layout.rpartition(':')[2] or layout}_{optimizer}_w{warmup}_lr{lr:g}_s{seed}"  # a file's: its class
        name += suffix + "".join(f"_{k.rpartition('.')[2]}{v}" for k, v in (extra or {}).items())
        run = self.folder / name
        run.mkdir()
        # a config the run-dir reader accepts (prelnx.records.run_config): a stop, the language model's preset
        config = {"task": self.task, "model": {"layout": layout}, "optimizer": {"name": optimizer, "lr": lr},
                  "schedule": {"warmup_updates": warmup},
                  "train": {"seed": seed, "max_epoch": 100},  # one budget for all: the budget is an arm key
                  "data": {"path": str(self.data) if self.data else None, "target_lang": "en"}}
        for key, value in (extra or {}).items():
            section, _, leaf = key.rpartition(".")
            config.setdefault(section, {})[leaf] = value
        if self.task == "language_model":
            config["model"]["arch"] = "transformer_lm"
            config["data"].pop("target_lang")
        (run / "config.yaml").write_text(yaml.safe_dump(config))
        rows = [{"epoch": i + 1, "num_updates": every * (i + 1), "valid_loss": loss, "valid_bleu": max(0.0, 10 - loss),
                 "valid_nll_loss": (nll[i] if nll else loss - 0.3)} for i, loss in enumerate(losses)]
        (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        update = rows[-1]["num_updates"] if rows else (every // 2 if status == "diverged" else 0)
        (run / "status.json").write_text(json.dumps({"status": status, "update": update, "reason": ""}))
        self.points.append({"name": name, "overrides": {"model.layout": layout, "optimizer.name": optimizer,
                            "schedule.warmup_updates": warmup, "optimizer.lr": lr, "train.seed": seed,
                                          **(extra or {})}})
        return name

    def seeds(self, layout: str, warmup: int, finals: list[float], **kwargs) -> None:
        """One run per final loss (seeds 1, 2, ...), each falling from 9.0 to its final loss over 3 epochs."""
        for seed, final in enumerate(finals, start=1):
            self.run(layout, warmup, [9.0, (9.0 + final) / 2, final], seed=seed, **kwargs)

    def save(self) -> Path:
        (self.folder / "sweep.json").write_text(json.dumps({"name": self.folder.name, "runs": self.points}))
        return self.folder
