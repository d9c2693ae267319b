"""prelnx's fairseq plugin, loaded with `--user-dir` (by `prelnx train`, or by hand from a run's command.txt).

Importing it registers `--optimizer radam`, `--lr-scheduler warmup_decay` and the normalisation variants
model (`--arch prelnx_<preset>`: RMSNorm, DyT, DeepNorm, QK-Norm), and allowlists the globals
fairseq pickles in checkpoints so that they load under torch >= 2.6. It imports only fairseq and torch.
"""

from .safe_loading import allow_fairseq_checkpoint_globals
from .optim import radam  # noqa: F401  (registers)
from .lr_scheduler import warmup_decay  # noqa: F401  (registers)
from .models import normalized_transformer  # noqa: F401  (registers --arch prelnx_<preset>)

allow_fairseq_checkpoint_globals()
