"""prelnx's fairseq plugin, loaded with `--user-dir` (by `prelnx train`, or by hand from a run's command.txt).

Importing it registers the optimizers, the schedule and the models, and applies the patches below, each module's
docstring saying why. Besides fairseq and torch it imports only prelnx's bottom layer (../shared/DESIGN.md).
"""

from .safe_loading import force_safe_loading
from .checkpoint_guard import guard_checkpoint_writes
from .parent_watch import watch_parent
from .distributed import patch_distributed
from .bf16_autocast import enable_bf16_autocast
from .eager_optim import skip_dynamo_import
from .diagnostics import enable_diagnostics
from .stats_events import report_stats
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
report_stats()
