"""bf16 on CPU: the plugin's autocast (fp32 weights and optimizer state) for every task, prelnx's runs with it, and
its refusal on a CPU without native bf16.

The plain-command tests run everywhere: autocast is correct on any CPU (emulated where the CPU lacks bf16, only
slower), and they are what command.txt runs. `prelnx train` with bf16 needs a CPU with native bf16 and skips,
saying so, elsewhere; its refusal is tested everywhere with the probe answering "none".
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from typer.testing import CliRunner

from prelnx import child_report
from prelnx.cli import app
from prelnx.config.load import load_config
from prelnx.machine import cpu_bf16_problem
from prelnx.records.metrics import read_metrics
from prelnx.launch.prepare import ensure_data
from prelnx.plan.launch import fairseq_argv
from prelnx.launch.local import train
from tests.bert.conftest import TINY_MLM

NO_BF16 = cpu_bf16_problem()
needs_bf16 = pytest.mark.skipif(NO_BF16 is not None, reason=f"no native bf16 on this CPU: {NO_BF16}")
NO_DROPOUT = {"dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0}


def plain_fairseq(argv: list[str]) -> str:
    """fairseq-train with these arguments, as command.txt runs it; its log (stdout)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "fairseq_cli.train", *argv], env=env, capture_output=True,
                          text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr


def records(log: str, kind: str) -> list[dict]:
    """fairseq's own JSON log lines of `kind` (plain fairseq reports no prelnx events), numbers as floats."""
    found = (re.search(r"\|\s*(\w+)\s*\|\s*(\{.*\})\s*$", line) for line in log.splitlines())
    return [child_report.Stats(kind, json.loads(match.group(2)), None).stats
            for match in found if match and match.group(1) == kind]  # fmt: skip


def assert_fp32_checkpoint(path: Path) -> None:
    state = torch.load(path, map_location="cpu", weights_only=False)
    floats = {name: tensor.dtype for name, tensor in state["model"].items() if tensor.is_floating_point()}
    assert floats and set(floats.values()) == {torch.float32}, floats
    moments = [value.dtype for entry in state["last_optimizer_state"]["state"].values()
               for value in entry.values() if torch.is_tensor(value) and value.dim() > 0]  # fmt: skip
    assert moments and set(moments) == {torch.float32}, moments


def write_config(path: Path, data: dict, **sections: dict) -> Path:
    merged = {key: dict(value) if isinstance(value, dict) else value for key, value in data.items()}
    for key, value in sections.items():
        merged[key] = {**merged.get(key, {}), **value}
    path.write_text(yaml.safe_dump(merged))
    return path


def train_plain(config_path: Path, precision: str, save_dir: Path, *overrides: str) -> str:
    config, _ = load_config(config_path, [f"train.precision={precision}", "train.device=cpu", *overrides])
    return plain_fairseq(fairseq_argv(config, ensure_data(config), save_dir, cuda=False))


# The tiny translation (no dropout, clipping at 0.5, one epoch) that the plain-command test and prelnx's bf16 run train.
TRANSLATION = {"model": NO_DROPOUT, "train": {"max_epoch": 1, "clip_norm": 0.5}}


@pytest.fixture(scope="module")
def plain_translation(tmp_path_factory) -> tuple[Path, dict[str, str], dict[str, list[str]]]:
    """(folder, log, argv) of the tiny translation trained by plain fairseq-train in fp32 and in bf16, each precision's
    checkpoints in folder/<precision>: trained once for the plain-command test and for prelnx's bf16 run, whose
    command.txt must be the bf16 argv (and so reproduce that run)."""
    from tests.conftest import TINY

    folder = tmp_path_factory.mktemp("plain-translation")
    path = write_config(folder / "tiny.yaml", TINY, **TRANSLATION)
    logs, argvs = {}, {}
    for precision in ("fp32", "bf16"):
        config, _ = load_config(path, [f"train.precision={precision}", "train.device=cpu"])
        argvs[precision] = fairseq_argv(config, ensure_data(config), folder / precision, cuda=False)
        logs[precision] = plain_fairseq(argvs[precision])
    return folder, logs, argvs


@pytest.mark.slow
def test_plain_bf16_command_trains_translation_under_autocast_with_fp32_weights(plain_translation):
    folder, logs, _ = plain_translation
    fp32 = records(logs["fp32"], "valid")
    bf16_log = logs["bf16"]
    bf16 = records(bf16_log, "valid")
    assert len(bf16) == len(fp32) == 1
    assert math.isfinite(bf16[0]["valid_loss"])
    assert all(math.isfinite(r["train_loss"]) for r in records(bf16_log, "train"))
    assert bf16[0]["valid_loss"] == pytest.approx(fp32[0]["valid_loss"], rel=0.05)
    # bf16 matmuls change the numbers (autocast is on; one-thread fp32 is bit-reproducible), not the training
    weights = {precision: torch.load(folder / precision / "checkpoint_last.pt", map_location="cpu",
                                     weights_only=False)["model"] for precision in ("fp32", "bf16")}  # fmt: skip
    changed = [name for name, tensor in weights["fp32"].items() if not torch.equal(tensor, weights["bf16"][name])]
    assert changed
    flat = {precision: torch.cat([tensor.flatten() for tensor in model.values() if tensor.is_floating_point()])
            for precision, model in weights.items()}  # fmt: skip
    assert (flat["bf16"] - flat["fp32"]).norm() / flat["fp32"].norm() < 0.05
    assert all(r["train_clip"] > 0 for r in records(bf16_log, "train"))  # clipping at 0.5 acted, on fp32 gradients
    assert_fp32_checkpoint(folder / "bf16" / "checkpoint_last.pt")


@pytest.mark.slow
def test_plain_bf16_command_pretrains_and_finetunes_an_encoder(tmp_path):
    mlm = write_config(tmp_path / "mlm.yaml", TINY_MLM, train={"max_update": 10}, eval={"every_updates": 10})
    log = train_plain(mlm, "bf16", tmp_path / "mlm")
    assert records(log, "valid") and all(math.isfinite(r["valid_loss"]) for r in records(log, "valid"))
    assert_fp32_checkpoint(tmp_path / "mlm" / "checkpoint_last.pt")
    finetune = write_config(tmp_path / "ft.yaml", {
        "task": "sentence_prediction", "data": TINY_MLM["data"], "model": TINY_MLM["model"],
        "optimizer": {"lr": 1e-3}, "train": {"max_tokens": 256, "max_update": 6, "threads": 1, "log_interval": 2,
                                             "num_workers": 0, "keep_last_epochs": 0}})  # fmt: skip
    pretrained = tmp_path / "mlm" / "checkpoint_last.pt"
    log = train_plain(finetune, "bf16", tmp_path / "ft", f"finetune.from_checkpoint={pretrained}")
    valid = records(log, "valid")
    assert valid and all(math.isfinite(r["valid_loss"]) and 0 <= r["valid_accuracy"] <= 100 for r in valid)
    assert_fp32_checkpoint(tmp_path / "ft" / "checkpoint_last.pt")


@needs_bf16
@pytest.mark.slow
def test_prelnx_trains_in_bf16_on_cpu_and_command_txt_reproduces_it(tiny_config_file, tmp_path, plain_translation):
    """command.txt's fairseq-train argv is the plain bf16 run's (its checkpoints' folder aside), and that run's
    validation losses are prelnx's."""
    folder, logs, argvs = plain_translation
    path = tiny_config_file(**{**TRANSLATION, "train": {**TRANSLATION["train"], "precision": "bf16", "device": "cpu"}})
    config, _ = load_config(path)
    run = tmp_path / "run"
    assert train(config, run_dir=run).status == "finished"
    losses = [row["valid_loss"] for row in read_metrics(run)]
    assert losses and all(math.isfinite(loss) for loss in losses)
    assert_fp32_checkpoint(run / "checkpoints" / "checkpoint_last.pt")
    command = (run / "command.txt").read_text().strip()
    assert " --cpu --bf16 " in command
    again = command.replace(str(run / "checkpoints"), str(folder / "bf16"))
    argv = shlex.split(again.partition(" fairseq-train ")[2])
    assert argv == argvs["bf16"]
    assert [r["valid_loss"] for r in records(logs["bf16"], "valid")] == losses


@needs_bf16
@pytest.mark.slow
def test_prelnx_pretrains_a_masked_lm_in_bf16_on_cpu(tmp_path):
    mlm = write_config(tmp_path / "mlm.yaml", TINY_MLM, train={"max_update": 10, "precision": "bf16", "device": "cpu"},
                       eval={"every_updates": 10})  # fmt: skip
    config, _ = load_config(mlm)
    assert train(config, run_dir=tmp_path / "run").status == "finished"
    assert all(math.isfinite(row["valid_loss"]) for row in read_metrics(tmp_path / "run"))


def test_bf16_is_refused_before_training_on_a_cpu_without_it(tiny_config_file, tmp_path, monkeypatch):
    import prelnx.machine

    monkeypatch.setattr(prelnx.machine, "cpu_bf16_flags", lambda: ())  # a CPU whose probe finds no bf16 feature
    path = tiny_config_file(train={"precision": "bf16", "device": "cpu"})
    for extra in (["--dry-run"], []):
        result = CliRunner().invoke(app, ["train", "--config", str(path), "--run-dir", str(tmp_path / "run"), *extra])
        assert result.exit_code == 2, result.output
        assert "train.precision: bf16 on CPU needs native bf16 instructions" in result.output
        assert "Traceback" not in result.output and not (tmp_path / "run").exists()
    monkeypatch.setattr(prelnx.machine, "cpu_bf16_flags", lambda: ("amx_bf16",))
    result = CliRunner().invoke(app, ["train", "--config", str(path), "--run-dir", str(tmp_path / "run"), "--dry-run"])
    assert result.exit_code == 0 and "--cpu --bf16" in result.output, result.output


def test_the_probe_reads_cpuinfo_flags(tmp_path, monkeypatch):
    import prelnx.machine

    monkeypatch.setattr(torch._C._cpu, "_get_cpu_capability", lambda: {})  # torch's probe silent: /proc/cpuinfo
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("flags\t\t: fpu avx2 avx512f avx512_bf16 amx_tile amx_bf16\n")
    assert prelnx.machine.cpu_bf16_flags(cpuinfo) == ("avx512_bf16", "amx_bf16")
    cpuinfo.write_text("flags\t\t: fpu avx avx2\n")
    assert prelnx.machine.cpu_bf16_flags(cpuinfo) == ()
    assert prelnx.machine.cpu_bf16_flags(tmp_path / "missing") is None
