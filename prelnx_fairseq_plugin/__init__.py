"""prelnx's fairseq plugin, loaded with `--user-dir` (by `prelnx train`, or by hand from a run's command.txt).

Importing it registers `--optimizer radam` and `prelnx_adam` (GI-Adam, Adam without bias correction), `--lr-scheduler warmup_decay` and the normalisation variants
model (`--arch prelnx_<preset>`: RMSNorm, DyT, DeepNorm, QK-Norm, and the warm-up-free Admin, T-Fixup, ReZero
and B2T, and the norm placements Peri-LN, OLMo 2's reordered norm, Mix-LN, ResiDual and LayerNorm Scaling; with
the same options the decoder-only `--arch prelnx_transformer_lm`); makes every checkpoint load safe (`weights_only=True` with an allowlist; on a torch older than 2.10,
whose safe loading has known exploits, no load at all); gives `--bf16` without a TPU the meaning of bf16 autocast
with fp32 weights and optimizer state (fairseq's own `--bf16` needs torch_xla; bf16_autocast.py); keeps a full
disk or a kill from leaving a truncated checkpoint under a loadable name; lets torchrun start CPU data-parallel
workers; under `prelnx train`, ends the process if prelnx itself dies; and keeps torch._dynamo's 6-7 s import
out of a process that never compiles (eager_optim.py); and with `--diagnostics-every-updates` /
`--sharpness-every-updates` logs the warm-up diagnostics of issue 31 (diagnostics.py, sharpness.py).
It imports only fairseq and torch.
"""

from .safe_loading import force_safe_loading
from .checkpoint_guard import guard_checkpoint_writes
from .parent_watch import watch_parent
from .distributed import patch_distributed
from .bf16_autocast import enable_bf16_autocast
from .eager_optim import skip_dynamo_import
from .diagnostics import enable_diagnostics
from .optim import adam_moments, radam  # noqa: F401  (registers)
from .lr_scheduler import warmup_decay  # noqa: F401  (registers)
from .models import normalized_lm, normalized_transformer  # noqa: F401  (--arch prelnx_<preset>, prelnx_transformer_lm)

force_safe_loading()
guard_checkpoint_writes()
watch_parent()
patch_distributed()
enable_bf16_autocast()
skip_dynamo_import()
enable_diagnostics()
