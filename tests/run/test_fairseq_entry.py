"""Every fairseq process prelnx starts goes through launch/fairseq_entry.py: scikit-learn and scipy.stats (1 s of
every start) stay out of it, and a command that needs the module that imports them keeps it; fairseq's models, tasks
and criterions prelnx never builds and TensorBoard (CHILD_UNUSED) stay out of those processes only, never out of one
that imports fairseq itself."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from prelnx.config.load import load_config
from prelnx.launch.fairseq_entry import CHILD_UNUSED
from prelnx.launch.local import train

pytestmark = pytest.mark.slow
KEPT_OUT = ("sklearn", "scipy.stats")
# modules only CHILD_UNUSED's import (with TensorBoard's): wav2vec 2.0 (hubert's), non-autoregressive translation
BEHIND_CHILD_UNUSED = ("fairseq.models.wav2vec.wav2vec2", "fairseq.models.nat.fairseq_nat_model")


def imported(log: str) -> list[str]:
    """Module names in `python -X importtime` output (PYTHONPROFILEIMPORTTIME=1), once per import, every process."""
    return [line.rsplit("|", 1)[1].strip() for line in log.splitlines() if line.startswith("import time:")]


def test_plain_fairseq_imports_scikit_learn_the_control():
    listed = "import sys, fairseq_cli.train\nprint(*sys.modules, sep='\\n')"
    done = subprocess.run([sys.executable, "-c", listed], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # what the entry saves is real: fairseq alone imports every module it keeps out (none of them misspelt)
    assert set(KEPT_OUT) | set(CHILD_UNUSED) <= set(done.stdout.splitlines())


def test_no_process_of_a_two_worker_training_imports_scikit_learn_or_scipy_stats(tiny_config_file, tmp_path):
    config, _ = load_config(tiny_config_file(train={"max_epoch": 1, "processes": 2}))
    run_dir = tmp_path / "run"
    result = train(config, run_dir=run_dir, extra_env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert result.status == "finished", (run_dir / "train.log").read_text()[-3000:]
    names = imported((run_dir / "train.log").read_text())
    assert names.count("fairseq.models.transformer") == 2  # both torchrun workers' imports are in the log
    assert not [name for name in names if name in KEPT_OUT or name.startswith("sklearn.")]
    # CHILD_UNUSED's stand-ins are imported (empty), what the real modules import is not
    assert not [name for name in names if name.partition(".")[0] == "tensorboard" or name in BEHIND_CHILD_UNUSED]


PROBE = """
import json, sys
from prelnx.launch import fairseq_entry
fairseq_entry.install(sys.argv[1:])
import fairseq
from fairseq.criterions import CRITERION_REGISTRY
from fairseq.tasks import TASK_REGISTRY
print(json.dumps({"sklearn": "sklearn" in sys.modules, "scipy.stats": "scipy.stats" in sys.modules,
                  "criterion": "sentence_prediction" in CRITERION_REGISTRY, "audio": "audio_classification" in TASK_REGISTRY,
                  "translation": "translation" in TASK_REGISTRY, "hubert": "hubert_pretraining" in TASK_REGISTRY,
                  "tensorboard": "tensorboard" in sys.modules}))
"""


@pytest.mark.parametrize("argv, keeps", [(["--task", "translation"], False),
                                         (["--task", "sentence_prediction", "--criterion", "sentence_prediction"], True)])  # fmt: skip
def test_the_sentence_prediction_criterion_is_kept_only_for_a_command_that_names_it(argv, keeps):
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    # CHILD_UNUSED is skipped only in the processes fairseq_entry.main starts: here fairseq has all of them
    assert seen == {"sklearn": keeps, "scipy.stats": keeps, "criterion": keeps, "audio": False, "translation": True,
                    "hubert": True, "tensorboard": True}


def test_a_process_that_later_needs_a_skipped_module_gets_the_real_one():
    probe = ("import sys\nfrom prelnx.launch import fairseq_entry\nfairseq_entry.install(['--task', 'translation'])\n"
             "import fairseq\nfrom fairseq.criterions import CRITERION_REGISTRY\n"
             "assert 'sentence_prediction' not in CRITERION_REGISTRY\n"
             "fairseq_entry.install(['--criterion', 'sentence_prediction'])\n"
             "assert 'sentence_prediction' in CRITERION_REGISTRY and 'sklearn' in sys.modules\nprint('ok')\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]
