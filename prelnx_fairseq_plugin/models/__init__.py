"""The plugin's model: `--arch prelnx_<preset>`, fairseq's transformer with other normalisations.

One component per file: `norms` (RMSNorm, DyT), `deepnorm` (DeepNet's alpha/beta and initialisation),
`qk_norm_attention` (per-head query/key normalisation), `normalized_layers` (the encoder/decoder layers that
use them), `normalized_transformer` (the stacks, the registered model and its architectures), the layouts of
`schemes` (warm-up-free schemes and norm placements, one file each) and `normalized_lm` (the decoder-only model).

Every module of this folder is imported here, as fairseq's --user-dir imports a plugin's models/: a shipped
scheme is its file (registered against its row of prelnx/layouts.py), listed nowhere else.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
