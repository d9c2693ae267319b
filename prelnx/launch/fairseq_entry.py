"""The entry of every fairseq process prelnx starts (`python -m prelnx.launch.fairseq_entry fairseq_cli.train ARGS`,
`fairseq_cli.generate`, torchrun's and Slurm's workers): fairseq's own program without the modules of UNUSED, which
import scikit-learn (and so scipy.stats), about 1 s of every fairseq start, more than a tiny training takes
(docs/benchmarks.md). They become empty modules that register nothing: command.txt's plain `fairseq-train` trains the
same run. It reports how the program ended as child_report's `done` or `raised` (then re-raised). Standard library
only: it runs before torch and fairseq."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import runpy
import sys
from collections.abc import Iterable

from prelnx import child_report

# module -> the task/criterion name whose presence in the command keeps it (None: no command prelnx plans needs it)
UNUSED: dict[str, str | None] = {
    "fairseq.tasks.audio_classification": None,
    "fairseq.criterions.sentence_prediction": "sentence_prediction",
    "fairseq.criterions.sentence_prediction_adapters": "sentence_prediction",
}
SKIPPED_DOC = "Skipped by prelnx.launch.fairseq_entry: a fairseq module this process never uses (it imports scikit-learn)."


class _SkipUnused(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    skipped: frozenset[str] = frozenset(UNUSED)  # narrowed by every install (on sys.meta_path from the first)

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        return importlib.machinery.ModuleSpec(name, self) if name in self.skipped else None

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        return None  # the default: an empty module

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        module.__doc__ = SKIPPED_DOC


_FINDER = _SkipUnused()


def install(argv: Iterable[str] = ()) -> frozenset[str]:
    """Keep the modules the command `argv` never uses out of this process (before fairseq is imported; harmless
    after). A later call for a command that needs one of them (a process that builds several models) brings it
    back: its empty stand-in is dropped and the real module imported. Returns what is skipped now."""
    named = set(argv)
    wanted = frozenset(module for module, keeper in UNUSED.items() if keeper is None or keeper not in named)
    needed_now = _FINDER.skipped - wanted
    _FINDER.skipped &= wanted
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    for name in sorted(needed_now):
        module = sys.modules.get(name)
        if module is not None and module.__doc__ == SKIPPED_DOC:
            del sys.modules[name]
            importlib.import_module(name)
    return _FINDER.skipped


def main() -> None:
    """`python -m prelnx.launch.fairseq_entry PROGRAM ARGS...` runs PROGRAM as `python -m PROGRAM ARGS...` would."""
    if len(sys.argv) < 2:
        sys.exit("usage: python -m prelnx.launch.fairseq_entry fairseq_cli.train|fairseq_cli.generate ARGS...")
    program, args = sys.argv[1], sys.argv[2:]
    install(args)
    sys.argv = [program, *args]
    try:
        runpy.run_module(program, run_name="__main__", alter_sys=True)
    except Exception as error:  # not SystemExit (an argument error, already said) nor a signal's KeyboardInterrupt
        child_report.emit(child_report.raised(error))
        raise
    child_report.emit(child_report.Done())


if __name__ == "__main__":
    main()
