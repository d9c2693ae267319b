"""The batch arithmetic and the launch of data parallelism: torchrun on one machine, Slurm tasks across nodes
(no training)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prelnx.config.load import load_config
from prelnx.exits import Refusal
from prelnx.plan.parallel import BatchError, Parallel, derive_update_freq, with_effective_batch


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
    from prelnx.plan.parallel import _fitting, visible_gpus

    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2,3"}) == 2  # a sweep job's slice, not the whole machine
    assert _fitting(8, 4096, 4096) == 1  # the paper's IWSLT14 batch is one GPU's: 1 worker on an 8-GPU machine
    assert _fitting(8, 4096, 65536) == 8 and _fitting(3, 4096, 65536) == 2 and _fitting(4, 512, None) == 4


def test_a_sweep_whose_batch_cannot_be_kept_stops_before_anything_is_created(tiny_config_file):
    from prelnx.sweep.execute import check_points
    from prelnx.sweep.spec import expand, resolve_spec

    points = expand(resolve_spec(tiny_config_file(), ["optimizer.lr=0.001,0.002"],
                                 ["train.processes=2", "train.effective_batch_tokens=1000"], None))  # fmt: skip
    with pytest.raises(Exception, match=r"nothing was created:\n.*Would work: train.effective_batch_tokens 1024 \(2 runs"):
        check_points(points)


def test_slurm_tasks_are_the_workers_when_a_task_of_prelnx_train_executor_slurm_runs(tiny_config_file):
    from prelnx.plan.launch import plan_run
    from prelnx.plan.parallel import SLURM_PORT_ENV, rendezvous_port, resolve

    assert rendezvous_port("1234") == 21234 and rendezvous_port("41234") == 21234 and rendezvous_port("77_3") == 20077
    config, _ = load_config(tiny_config_file(train={"nodes": 2, "processes": 2, "effective_batch_tokens": 4096}))
    with pytest.raises(Refusal, match=r"train.nodes: 2 .*`prelnx train --executor slurm`"):
        resolve(config, cuda=False)  # on this machine, or in a sweep: refused, naming the key and the way
    env = {SLURM_PORT_ENV: "21234"}
    slurm = resolve(config, cuda=False, env=env)
    assert slurm.world_size == 4 and slurm.launcher() == []  # no torchrun: Slurm started the tasks
    assert slurm.slurm_tasks() == ["--nodes", "2", "--ntasks-per-node", "2"]
    argv = slurm.fairseq_argv()
    assert argv[argv.index("--distributed-world-size") + 1] == "4" and argv[-2:] == ["--distributed-port", "21234"]
    assert with_effective_batch(config, slurm).train.update_freq == 2  # 4096 = 512 x 4 workers x 2
    plan = plan_run(config, Path("run"), env)
    assert plan.config.train.update_freq == 2
    assert f" srun --nodes 2 --ntasks-per-node 2 fairseq-train {plan.data} " in plan.launch.command_line()


def test_what_a_slurm_training_asks_for(tiny_config_file, monkeypatch):
    from prelnx.launch import slurm_job
    from prelnx.launch import slurm_task as slurm
    from prelnx.launch import slurm_task as slurm_train

    config, _ = load_config(tiny_config_file(train={"nodes": 3, "processes": 2, "threads": None}))
    monkeypatch.setattr(slurm, "partition_cpus", lambda partition: 16)
    request = slurm_job.run_request(config, partition="cpu")
    assert (request.nodes, request.tasks_per_node, request.cpus_per_task, request.gpus_per_node) == (3, 2, 8, 0)
    assert slurm_job.run_request(config, cpus_per_run=18, mem_gb_per_run=60).parameters("x") == {
        "name": "x", "nodes": 3, "tasks_per_node": 2, "cpus_per_task": 3, "timeout_min": 24 * 60, "mem_gb": 20}  # fmt: skip
    monkeypatch.setattr(slurm, "partition_cpus", lambda partition: 2)
    assert slurm_job.run_request(config).cpus_per_task == 1  # 2 CPUs shared by the node's 2 tasks
    assert slurm_train.task_config(config, request).train.threads == 8
    assert slurm_train.submitit_folder(Path("runs/a")) == Path("runs/.submitit/a")  # --force moves runs/a aside


def test_the_progress_of_a_slurm_job_is_read_from_a_growing_log(tmp_path):
    from prelnx.launch.slurm_job import Rank0Output

    log = tmp_path / "log"
    tail = Rank0Output(log)
    assert tail.lines() == []
    log.write_text("starting tiny\nepoch 1")
    assert tail.lines() == ["starting tiny"]
    with open(log, "a") as handle:
        handle.write(" done\n")
    assert tail.lines() == ["epoch 1 done"]
    log.write_text("again\n")  # a requeued job starts the file again
    assert tail.lines() == ["again"]


def test_fairseqs_slurm_rendezvous_on_cpu_uses_one_device_and_the_tasks_ranks(monkeypatch):
    from types import SimpleNamespace

    from prelnx_fairseq_plugin import distributed

    monkeypatch.setattr(distributed.torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(distributed.subprocess, "check_output", lambda argv, text: "nodeA\nnodeB\n")
    for key, value in {"SLURM_STEP_NODELIST": "node[A-B]", "SLURM_PROCID": "3", "SLURM_LOCALID": "1",
                       "SLURM_NTASKS": "4", "SLURM_NNODES": "2"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    cfg = SimpleNamespace(pipeline_model_parallel=False, distributed_world_size=4, distributed_port=21234,
                          distributed_init_method=None, distributed_rank=0, device_id=0, distributed_no_spawn=False)  # fmt: skip
    assert distributed._infer_slurm_init(cfg, None) is True
    assert (cfg.distributed_init_method, cfg.distributed_rank, cfg.device_id) == ("tcp://nodeA:21234", 3, 0)
    cfg.distributed_world_size = 2
    with pytest.raises(ValueError, match="this Slurm step has 4 tasks"):  # the plugin's, in fairseq's process
        distributed._infer_slurm_init(cfg, None)
    monkeypatch.delenv("SLURM_PROCID")
    assert distributed._infer_slurm_init(cfg, None) is False  # not a Slurm task: fairseq goes on as without Slurm


def test_a_parent_pid_inherited_from_elsewhere_is_not_watched(monkeypatch):
    from prelnx_fairseq_plugin import parent_watch

    died = []
    monkeypatch.setattr(parent_watch, "_die", lambda: died.append(True))
    monkeypatch.setattr(parent_watch, "_poll", lambda gone: died.append("poll"))
    monkeypatch.setenv("PRELNX_PARENT_PID", "999999999")  # e.g. a pid of the submitting machine
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    parent_watch.watch_parent()
    assert died == []
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")
    monkeypatch.setenv("LOCAL_RANK", "1")
    parent_watch.watch_parent()  # a torchrun worker: prelnx runs on this machine, and is polled
    assert died == ["poll"]


def test_the_other_ranks_start_nothing_when_rank_0_ends_without_starting(tiny_config_file, tmp_path):
    from prelnx.launch.slurm_task import Rank0Marks, run_worker, task_env

    config, _ = load_config(tiny_config_file(train={"processes": 2}))
    marks = Rank0Marks(tmp_path, "0")
    marks.ended.touch()  # e.g. the run dir was locked, or the run already finished
    assert run_worker(config, tmp_path / "run", task_env("7"), marks, poll_s=0.01) == 0
    assert not (tmp_path / "run").exists()


def test_a_sweep_point_across_several_nodes_is_refused_before_anything_is_created(tiny_config_file):
    from prelnx.sweep.execute import check_points
    from prelnx.sweep.spec import expand, resolve_spec

    points = expand(resolve_spec(tiny_config_file(), ["optimizer.lr=0.001,0.002"], ["train.nodes=2"], None))
    with pytest.raises(Exception, match=r"train.nodes: 2 .*`prelnx train --executor slurm`.*sweeps train each run on one"):
        check_points(points)
