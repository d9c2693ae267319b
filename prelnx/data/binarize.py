"""Binarize parallel text for fairseq through fairseq's own preprocessing (`fairseq-preprocess`)."""

from __future__ import annotations

from pathlib import Path


def binarize(
    text_dir: Path,
    dest_dir: Path,
    *,
    source_lang: str,
    target_lang: str,
    splits: list[str],
    joined_dictionary: bool = False,
    workers: int = 1,
    monolingual: bool = False,
    dictionary: Path | None = None,
) -> None:
    """Write fairseq dictionaries and binary splits for `text_dir/{split}.{lang}` into `dest_dir`.

    The first split is the one the dictionaries are built from (normally "train"). `monolingual`: the
    `source_lang` text only, written as fairseq's masked_lm reads it (dict.txt, {split}.bin/.idx);
    `dictionary`: use this dictionary instead of building one (fine-tuning data must use the pre-training ids).
    """
    from fairseq import options
    from fairseq_cli import preprocess

    argv = ["--destdir", str(dest_dir), "--workers", str(workers)]
    if monolingual:  # no language: the prefixes are the files themselves, the outputs carry no suffix
        argv.append("--only-source")
    else:
        argv += ["--source-lang", source_lang, "--target-lang", target_lang]
    prefixes = {"train": "--trainpref", "valid": "--validpref", "test": "--testpref"}
    for split in splits:
        argv += [prefixes[split], str(text_dir / (f"{split}.{source_lang}" if monolingual else split))]
    if joined_dictionary:
        argv.append("--joined-dictionary")
    if dictionary is not None:
        argv += ["--srcdict", str(dictionary)]
    args = options.get_preprocessing_parser().parse_args(argv)
    handlers_before = list(preprocess.logger.handlers)
    try:
        preprocess.main(args)  # its progress: dest_dir/preprocess.log, and the terminal with -v (prelnx/console.py)
    finally:
        # fairseq adds a log-file handler per call; drop it so repeated calls in one process do not pile up.
        for handler in preprocess.logger.handlers[len(handlers_before) :]:
            handler.close()
            preprocess.logger.removeHandler(handler)
