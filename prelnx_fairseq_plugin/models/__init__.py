"""The plugin's models: `--arch prelnx_<preset>` and `prelnx_transformer_lm`, one component per file.

Every module of this folder is imported here, as fairseq's --user-dir imports a plugin's models/: a shipped
scheme is its file (registered against its row of prelnx/layouts.py), listed nowhere else.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
