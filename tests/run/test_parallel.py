"""The batch arithmetic of data parallelism (no training)."""

from __future__ import annotations

import pytest

from prelnx.config.load import load_config
from prelnx.run.parallel import BatchError, Parallel, derive_update_freq, with_effective_batch


def test_update_freq_is_derived_exactly_or_refused_with_what_would_work():
    assert derive_update_freq(4096, 4096, 1) == 1
    assert derive_update_freq(65536, 4096, 4) == 4
    assert derive_update_freq(4096, 512, 2) == 4
    with pytest.raises(BatchError) as error:
        derive_update_freq(4096, 4096, 3)
    message = str(error.value)
    assert "max_tokens 4096 x 3 worker(s) = 12288" in message and "train.effective_batch_tokens 12288" in message
    with pytest.raises(BatchError, match="train.max_tokens 512, 1024, 2048, 4096"):
        derive_update_freq(8192, 3072, 2)


def test_the_paper_configs_keep_their_batch_on_any_number_of_workers():
    config, _ = load_config("iwslt14/postln_warmup.yaml")
    assert config.train.effective_batch_tokens == 4096
    assert with_effective_batch(config, Parallel(1, 1, cuda=True)).train.update_freq == 1
    with pytest.raises(BatchError, match="Would work: train.max_tokens 512, 1024, 2048;"):
        with_effective_batch(config, Parallel(2, 1, cuda=True))  # 2 x 4096 tokens overshoot the paper's batch
    small, _ = load_config("iwslt14/postln_warmup.yaml", ["train.max_tokens=1024"])
    assert with_effective_batch(small, Parallel(2, 1, cuda=True)).train.update_freq == 2
    conflicting, _ = load_config("iwslt14/postln_warmup.yaml", ["train.update_freq=3"])
    with pytest.raises(BatchError, match="train.update_freq: 3"):
        with_effective_batch(conflicting, Parallel(1, 1, cuda=True))


def test_workers_launch_through_torchrun_and_share_the_cores():
    cpu = Parallel(processes=2, nodes=1, cuda=False)
    assert cpu.launcher() == ["--standalone", "--nproc-per-node", "2", "--max-restarts", "0"]
    assert "--ddp-backend" in cpu.fairseq_argv() and "gloo" in cpu.fairseq_argv()
    assert Parallel(1, 1, cuda=False).launcher() == [] and Parallel(1, 1, cuda=False).fairseq_argv() == []
    assert "nccl" in Parallel(4, 1, cuda=True).fairseq_argv()
    assert cpu.threads(None) >= 1 and cpu.threads(3) == 3


def test_a_sweeps_gpu_slice_and_the_effective_batch_set_the_default_workers():
    from prelnx.run.parallel import _fitting, visible_gpus

    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}) == 2  # a sweep job's slice, not the whole machine
    assert _fitting(8, 4096, 4096) == 1  # the paper's IWSLT14 batch is one GPU's: 1 worker on an 8-GPU machine
    assert _fitting(8, 4096, 65536) == 8 and _fitting(3, 4096, 65536) == 2 and _fitting(4, 512, None) == 4


def test_a_run_dir_of_an_earlier_prelnx_is_the_same_run(tiny_config_file):
    """Keys a newer prelnx added (defaults) and renamed keys are no difference: old runs resume."""
    from prelnx.config.load import config_to_dict
    from prelnx.run.runner import config_differences

    config, _ = load_config(tiny_config_file())
    saved = config_to_dict(config)
    del saved["train"]["nodes"], saved["eval"]["test"], saved["train"]["processes"]
    saved["train"]["gpus"] = None  # the old name of train.processes
    assert config_differences(saved, config) == []
    saved["optimizer"]["lr"] = 0.5
    assert config_differences(saved, config) == ["optimizer.lr: 0.5 -> 0.003"]


def test_a_sweep_whose_batch_cannot_be_kept_stops_before_anything_is_created(tiny_config_file):
    from prelnx.sweep.preflight import check_points
    from prelnx.sweep.spec import expand, resolve_spec

    points = expand(resolve_spec(tiny_config_file(), ["optimizer.lr=0.001,0.002"],
                                 ["train.processes=2", "train.effective_batch_tokens=1000"], None))  # fmt: skip
    with pytest.raises(Exception, match=r"nothing was created:\n.*Would work: train.effective_batch_tokens 1024 \(2 runs"):
        check_points(points)
