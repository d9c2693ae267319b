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
    joined_dictionary: bool,
    workers: int = 1,
) -> None:
    """Write fairseq dictionaries and binary splits for `text_dir/{split}.{lang}` into `dest_dir`.

    The first split is the one the dictionaries are built from (normally "train").
    """
    from prelnx.quiet import kept_logging

    with kept_logging():
        from fairseq import options
        from fairseq_cli import preprocess

    argv = [
        "--source-lang", source_lang,
        "--target-lang", target_lang,
        "--destdir", str(dest_dir),
        "--workers", str(workers),
    ]  # fmt: skip
    prefixes = {"train": "--trainpref", "valid": "--validpref", "test": "--testpref"}
    for split in splits:
        argv += [prefixes[split], str(text_dir / split)]
    if joined_dictionary:
        argv.append("--joined-dictionary")
    args = options.get_preprocessing_parser().parse_args(argv)
    handlers_before = list(preprocess.logger.handlers)
    propagate = preprocess.logger.propagate
    preprocess.logger.propagate = False  # its progress goes to dest_dir/preprocess.log, not the terminal
    try:
        preprocess.main(args)
    finally:
        preprocess.logger.propagate = propagate
        # fairseq adds a log-file handler per call; drop it so repeated calls in one process do not pile up.
        for handler in preprocess.logger.handlers[len(handlers_before) :]:
            handler.close()
            preprocess.logger.removeHandler(handler)
