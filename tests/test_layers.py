"""The house's rule, checked on the code: imports only go down the layers, and no module imports itself back.

Every `import` in prelnx/ is read (function-level ones too) with Python's own parser. A folder may import its own
modules and those of the layers below it; a folder importing one of its own layer or above fails, and so does an
import cycle between modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "prelnx"

# Bottom to top. Each folder can say in one line what it never does (README, "Architecture").
LAYERS: list[set[str]] = [
    {"exits", "layout_options"},  # the exit-code table and Refusal, a layout's Option: what every module may raise or declare
    {"atomic", "console", "plugin_path", "paper", "eta", "machine", "layouts", "sequential", "child_report", "interval"},  # helpers, the paper's numbers, the layout table, the sequential boundaries, a child's report of what it measured and how it ended: know nothing of prelnx
    {"data"},  # datasets: never reads a config, never trains
    {"config"},  # the YAML vocabulary: never touches a run
    {"records"},  # run-dir files: never starts a process, never builds an argv
    {"plan"},  # config -> argv, workers, launch plan: never writes, never starts
    {"launch"},  # the only code that starts or stops a training process
    {"sweep", "evaluate", "finetune"},  # work over several runs or one finished run
    {"plots"},  # draw runs read through the records
    {"analysis"},  # studies in this process (gradients at init, theory): never records a run
    {"report"},  # the verdicts on the paper's claims (paper.yaml) from a sweep and a gradient study: never trains
    {"reproduce"},  # every experiment of the paper at one scale: stages over sweep, analysis, report (plan never writes)
    {"commands"},  # one command each: parse, call one function, render errors
    {"cli"},  # the app
]
LAYER_OF = {name: index for index, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports() -> dict[str, set[str]]:
    """module -> the prelnx modules it imports (anywhere in its code)."""
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    found: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                names = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for name in names:
                while name and name not in files:
                    name = name.rpartition(".")[0]
                if name and name != module and name.startswith("prelnx"):
                    targets.add(name)
        found[module] = targets
    return found


def folder(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_every_folder_is_in_a_layer():
    folders = {folder(m) for m in imports()} - {""}
    assert folders <= set(LAYER_OF), f"folders in no layer: {sorted(folders - set(LAYER_OF))}"


def test_imports_only_go_down():
    upward = []
    for module, targets in imports().items():
        here = folder(module)
        for target in targets:
            there = folder(target)
            if not there or there == here:
                continue  # the package itself (prelnx/__init__), or the folder's own modules
            if LAYER_OF[there] >= LAYER_OF[here]:
                upward.append(f"{module} imports {target} ({there} is not below {here})")
    assert not upward, "\n".join(sorted(upward))


def test_no_import_cycle():
    graph = {m: {t for t in targets if t in imports_cache()} for m, targets in imports_cache().items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


_CACHE: dict[str, set[str]] = {}


def imports_cache() -> dict[str, set[str]]:
    if not _CACHE:
        _CACHE.update(imports())
    return _CACHE


@pytest.mark.parametrize("module", sorted(imports()))
def test_no_module_is_too_long(module):
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    if not path.is_file():
        path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    assert len(path.read_text().splitlines()) <= 350, f"{path}: over 350 lines; split it by job"


PLUGIN = PACKAGE.parent / "prelnx_fairseq_plugin"
# Besides the standard library: fairseq, torch, and two libraries fairseq itself imports on every start (its
# dataclass configs' omegaconf, numpy); of prelnx, the bottom layers only (nothing that starts a process).
PLUGIN_MAY_IMPORT = {"fairseq", "torch", "omegaconf", "numpy", "prelnx_fairseq_plugin"}
BOTTOM = {f"prelnx.{name}" for layer in LAYERS[:2] for name in layer}


def test_the_plugin_imports_only_fairseq_torch_and_prelnxs_bottom_layer():
    """`fairseq-train --user-dir` loads the plugin in fairseq's process (../shared/DESIGN.md): it may read the run-dir
    formats and the layout table, never a module that plans, launches or reports."""
    import sys

    found = []
    for path in sorted(PLUGIN.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top == "prelnx":
                    if not any(name == ok or name.startswith(ok + ".") for ok in BOTTOM):
                        found.append(f"{path.relative_to(PLUGIN.parent)} imports {name}")
                elif top not in sys.stdlib_module_names and top not in PLUGIN_MAY_IMPORT:
                    found.append(f"{path.relative_to(PLUGIN.parent)} imports {name}")
    assert not found, "\n".join(found)


PYPLOT = {"matplotlib.pyplot", "pylab", "matplotlib.pylab"}


def test_no_module_imports_pyplot():
    """A sweep draws its figures from threads: pyplot keeps one registry of figures for the process, so every figure is
    matplotlib's object API (prelnx/plots/diagnostics.py). The quick guard; tests/run/test_thread_safety.py draws
    from threads at a barrier and compares the bytes (slow: it draws dozens of figures)."""
    found = []
    for path in sorted([*PACKAGE.rglob("*.py"), *PLUGIN.rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [f"{path.relative_to(PACKAGE.parent)} imports {n}" for n in names if n in PYPLOT]
    assert not found, "\n".join(found)
