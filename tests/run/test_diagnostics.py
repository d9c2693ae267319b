"""Training diagnostics (issue 31): real tiny trainings write diagnostics.jsonl at the asked intervals with finite
values, TensorBoard shows them; config errors name the key. That a killed and resumed run has each row once is
checked on tests/run/test_faults.py's killed parent, which trains with these diagnostics."""

from __future__ import annotations

import math
import shutil

import pytest

from prelnx.config.load import ConfigError, load_config
from prelnx.launch.local import train
from prelnx.plan.common import optimization_argv, run_argv
from prelnx.records.diagnostics import FILE, PER_GROUP, read_diagnostics
from prelnx.records.metrics import read_metrics
from prelnx.records.status import read_status
from tests.helpers import scalar_steps

EVERY, SHARPNESS = 2, 3


def diagnosed(**train):
    return {"diagnostics": {"every_updates": EVERY, "sharpness_every_updates": SHARPNESS}, **train}


def measured(upto: int) -> list[int]:
    return [u for u in range(1, upto + 1) if u % EVERY == 0 or u % SHARPNESS == 0]


@pytest.mark.slow
def test_rows_at_the_asked_intervals_finite_in_tensorboard_and_training_unchanged(tiny_config_file, tmp_path,
                                                                                  finished_tiny_run):  # fmt: skip
    config, _ = load_config(tiny_config_file(train=diagnosed()))
    run_dir = tmp_path / "run"
    assert train(config, run_dir=run_dir).status == "finished"
    updates = read_metrics(run_dir)[-1]["num_updates"]
    rows = read_diagnostics(run_dir)
    assert [row["num_updates"] for row in rows] == measured(updates)
    groups = {"encoder.0.self_attn", "encoder.1.ffn", "decoder.1.self_attn", "decoder.1.encoder_attn", "decoder.1.ffn"}
    for row in rows:
        if row["num_updates"] % EVERY == 0:
            assert groups <= set(row["grad_norm"]) and groups <= set(row["update_ratio"])
            assert {g for g in groups if "attn" in g} <= set(row["attn_logit_max"])
            assert set(row["hidden_rms"]) == {"encoder.0", "encoder.1", "decoder.0", "decoder.1"}  # per layer
            for key in PER_GROUP:
                assert all(math.isfinite(v) and v > 0 for v in row[key].values()), (key, row[key])
        else:
            assert row["grad_norm"] is None and row["attn_logit_max"] is None and row["hidden_rms"] is None
        if row["num_updates"] % SHARPNESS == 0:
            assert row["lambda_c"] == pytest.approx(2 / row["eta_c"]) and row["eta_c"] > 0, row
            assert math.isfinite(row["sharpness_loss"]) and 2 <= row["sharpness_passes"] <= 12
        else:
            assert row["lambda_c"] is None
    assert scalar_steps(run_dir, "diagnostics/grad_norm/decoder.1.ffn") == [u for u in measured(updates) if u % EVERY == 0]
    assert scalar_steps(run_dir, "diagnostics/attn_logit_max/encoder.0.self_attn")[0] == EVERY
    assert scalar_steps(run_dir, "diagnostics/lambda_c") == [u for u in measured(updates) if u % SHARPNESS == 0]
    assert '"event": "diagnosed"' in (run_dir / "train.log").read_text()  # reported as typed events
    assert "--diagnostics-every-updates 2 --sharpness-every-updates 3" in (run_dir / "command.txt").read_text()
    from prelnx.plots.curves import plot

    assert run_dir / "diagnostics.png" in plot(run_dir)

    # Diagnostics draw no random numbers and restore every weight: the same run without them trains identically. That
    # run is the tiny config as it is, which the session has trained already (tests/conftest.py): a copy of it.
    shutil.copytree(finished_tiny_run, tmp_path / "plain")
    assert read_status(tmp_path / "plain")["status"] == "finished"
    assert not (tmp_path / "plain" / FILE).exists()
    keys = ("num_updates", "train_loss", "valid_loss", "valid_bleu")
    assert [[r[k] for k in keys] for r in read_metrics(tmp_path / "plain")] == [[r[k] for k in keys] for r in read_metrics(run_dir)]
    (tmp_path / "sweep").mkdir()
    for name in ("run", "plain"):
        (tmp_path / name).rename(tmp_path / "sweep" / name)
    assert tmp_path / "sweep" / "diagnostics_summary.png" in plot(tmp_path / "sweep")  # the run without draws nothing


@pytest.mark.parametrize("sections, key", [
    ({"train": {"diagnostics": {"every_updates": 0}}}, "train.diagnostics.every_updates"),
    ({"train": {"diagnostics": {"sharpness_every_updates": -1}}}, "train.diagnostics.sharpness_every_updates"),
    ({"train": {"precision": "fp16", "device": "cuda", "diagnostics": {"every_updates": 5}}}, "train.diagnostics"),
    ({"optimizer": {"name": "sgd", "second_moment_init": "gradient"}}, "optimizer.second_moment_init"),
    ({"optimizer": {"name": "radam", "bias_correction": False}}, "optimizer.bias_correction"),
    ({"optimizer": {"second_moment_init": "ones"}}, "optimizer.second_moment_init"),
])  # fmt: skip
def test_config_errors_name_the_key(tiny_config_file, sections, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_config(tiny_config_file(**sections))


def test_the_planner_passes_the_options_only_when_asked(tiny_config_file, tmp_path):
    plain, _ = load_config(tiny_config_file())
    argv = optimization_argv(plain) + run_argv(plain, tmp_path, cuda=False)
    assert argv[argv.index("--optimizer") + 1] == "adam" and "--diagnostics-every-updates" not in argv
    gi, _ = load_config(tiny_config_file(optimizer={"second_moment_init": "gradient", "bias_correction": False}))
    argv = optimization_argv(gi)
    assert argv[argv.index("--optimizer") + 1] == "prelnx_adam"
    assert "--second-moment-init gradient --no-bias-correction" in " ".join(argv)
    radam, _ = load_config(tiny_config_file(optimizer={"name": "radam", "second_moment_init": "gradient"}))
    assert "--optimizer radam" in " ".join(optimization_argv(radam)) and "--second-moment-init" in optimization_argv(radam)
