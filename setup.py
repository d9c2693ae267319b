"""The one build step pyproject.toml cannot say: the packages (namespace folders included: prelnx/config has no
__init__.py), plus the top-level configs/ folder carried as the package `prelnx._configs` (pyproject.toml's
package-dir maps it), so that an installed prelnx finds every shipped config with importlib.resources
(prelnx/config/shipped.py) while the configs stay where the project keeps them."""

from setuptools import find_namespace_packages, setup

PACKAGES = find_namespace_packages(include=["prelnx", "prelnx.*", "prelnx_fairseq_plugin", "prelnx_fairseq_plugin.*"],
                                   exclude=["*.__pycache__"])  # fmt: skip
setup(packages=[*PACKAGES, "prelnx._configs"])
