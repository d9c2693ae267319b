"""The entry of every fairseq process prelnx starts (`python -m prelnx.launch.fairseq_entry fairseq_cli.train ARGS`,
`fairseq_cli.generate`, torchrun's and Slurm's workers): fairseq's own program without the modules of UNUSED, which
import scikit-learn (and so scipy.stats), about 1 s of every fairseq start, more than a tiny training takes
(docs/benchmarks.md), nor those of CHILD_UNUSED (a further ~0.5 CPU-s of each start). They become empty modules that
register nothing: command.txt's plain `fairseq-train` trains the same run. It reports how the program ended as
child_report's `done` or `raised` (then re-raised). Standard library only: it runs before torch and fairseq."""

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
SKIPPED_DOC = "Skipped by prelnx.launch.fairseq_entry: a fairseq module this process never uses."


def _modules(package: str, names: str, keeper: str | None = None) -> dict[str, str | None]:
    return {f"{package}.{name}": keeper for name in names.split()}


# Kept out of the processes main() starts only, never out of one that imports fairseq itself (a test's, `prelnx
# layouts`'): the models, tasks and criterions of fairseq that no program prelnx starts builds (its tasks are
# translation, language_modeling, masked_lm and sentence_prediction; its models transformer, transformer_lm, roberta
# and the plugin's), none of them imported by fairseq's other modules, the plugin or prelnx; and TensorBoard, which
# fairseq's progress bar imports for --tensorboard-logdir (prelnx writes its TensorBoard events in its own process).
# Each registers only its own names (fairseq's registries and hydra's ConfigStore, 2-3 ms a dataclass) and sets no
# global state that a training reads (wav2vec2_classification's and text_to_speech's logging.basicConfig come after
# fairseq_cli.train's own). The program's name keeps a module as a task's or criterion's name does (main).
CHILD_UNUSED: dict[str, str | None] = {
    **_modules("fairseq.models", "bart fconv fconv_lm fconv_self_att hubert huggingface lightconv lightconv_lm lstm "
                                 "lstm_lm masked_lm multilingual_transformer multires_hubert nat speech_dlm "
                                 "speech_to_speech speech_to_text text_to_speech transformer_align "
                                 "transformer_from_pretrained_xlm transformer_ulm xmod"),
    # fairseq_cli.generate's --arch defaults to wav2vec2 ("for tasks that rely on model args"): it must be registered
    **_modules("fairseq.models", "wav2vec", keeper="fairseq_cli.generate"),
    **_modules("fairseq.tasks", "audio_finetuning audio_pretraining cross_lingual_lm denoising frm_text_to_speech "
                                "hubert_pretraining legacy_masked_lm multilingual_denoising "
                                "multilingual_language_modeling multilingual_masked_lm multilingual_translation "
                                "multires_hubert_pretraining nlu_finetuning online_backtranslation "
                                "semisupervised_translation sentence_ranking simultaneous_translation span_masked_lm "
                                "speech_dlm_task speech_to_speech speech_to_text speech_ulm_task text_to_speech "
                                "translation_from_pretrained_bart translation_from_pretrained_xlm translation_lev "
                                "translation_multi_simple_epoch"),
    **_modules("fairseq.criterions", "adaptive_loss composite_loss ctc fastspeech2_loss hubert_criterion "
                                     "label_smoothed_cross_entropy_latency_augmented "
                                     "label_smoothed_cross_entropy_with_alignment label_smoothed_cross_entropy_with_ctc "
                                     "label_smoothed_cross_entropy_with_rdrop legacy_masked_lm nat_loss sentence_ranking "
                                     "speech_dlm_criterion speech_to_speech_criterion speech_ulm_criterion "
                                     "tacotron2_loss wav2vec_criterion"),
    "torch.utils.tensorboard": None,
}
# fairseq.models and fairseq.modules import each other, and only in that order do both complete; fairseq imports
# models first only through modules of CHILD_UNUSED (criterions.ctc -> tasks.online_backtranslation ->
# sequence_generator -> models), so without them criterions.masked_lm's `from fairseq import modules` would come
# first and fail: where CHILD_UNUSED is skipped, fairseq.models is imported before fairseq's criterions.
MODELS_BEFORE = "fairseq.criterions"


class _SkipUnused(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # narrowed by every install (on sys.meta_path from the first)
    skipped: frozenset[str] = frozenset(UNUSED) | frozenset(CHILD_UNUSED)
    models_first = False  # set by the install of a process main() started (MODELS_BEFORE)

    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name == MODELS_BEFORE and self.models_first and "fairseq.models" not in sys.modules:
            importlib.import_module("fairseq.models")
        return importlib.machinery.ModuleSpec(name, self) if name in self.skipped else None

    def exec_module(self, module) -> None:  # type: ignore[no-untyped-def]
        module.__doc__ = SKIPPED_DOC


_FINDER = _SkipUnused()


def install(argv: Iterable[str] = (), *, child: bool = False) -> frozenset[str]:
    """Keep the modules the command `argv` never uses out of this process (before fairseq is imported; harmless
    after), CHILD_UNUSED too in a process main() started (`child`). A later call for a command that needs one of them
    (a process that builds several models) brings it back: its empty stand-in is dropped and the real module
    imported. Returns what is skipped now."""
    named, unused = set(argv), {**UNUSED, **(CHILD_UNUSED if child else {})}
    wanted = frozenset(module for module, keeper in unused.items() if keeper is None or keeper not in named)
    _FINDER.models_first = child
    needed_now = _FINDER.skipped - wanted
    _FINDER.skipped &= wanted
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
    stand_ins = sorted(name for name in needed_now if getattr(sys.modules.get(name), "__doc__", None) == SKIPPED_DOC)
    for name in stand_ins:  # all dropped before any is imported: one may import another
        del sys.modules[name]
    for name in stand_ins:
        importlib.import_module(name)
    return _FINDER.skipped


def main() -> None:
    """`python -m prelnx.launch.fairseq_entry PROGRAM ARGS...` runs PROGRAM as `python -m PROGRAM ARGS...` would."""
    if len(sys.argv) < 2:
        sys.exit("usage: python -m prelnx.launch.fairseq_entry fairseq_cli.train|fairseq_cli.generate ARGS...")
    program, args = sys.argv[1], sys.argv[2:]
    install([program, *args], child=True)
    sys.argv = [program, *args]
    try:
        runpy.run_module(program, run_name="__main__", alter_sys=True)
    except Exception as error:  # not SystemExit (an argument error, already said) nor a signal's KeyboardInterrupt
        child_report.emit(child_report.raised(error))
        raise
    child_report.emit(child_report.Done())


if __name__ == "__main__":
    main()
