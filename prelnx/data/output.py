"""A prepared folder: built in a temporary sibling and renamed into place when complete, with a manifest.json;
its binary splits written by fairseq-preprocess (`binarize`).

`manifest.json` is written last, inside the staging folder, so a folder that has one is complete; a failed
preparation leaves nothing under the output name. `build_cached` builds generated data the same way, once per
settings; when another process finished the same build first, its copy is used.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from prelnx.data.textio import DataError, count_lines, sha256_file

if TYPE_CHECKING:
    from prelnx.data.sources import Recipe

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


def read_manifest(folder: Path) -> dict | None:
    try:
        return json.loads((folder / MANIFEST).read_text())
    except (OSError, json.JSONDecodeError):
        return None


def _built(folder: Path, identity: dict) -> dict | None:
    """`folder`'s manifest when it holds every entry of `identity`, else None."""
    manifest = read_manifest(folder)
    return manifest if manifest is not None and all(manifest.get(k) == v for k, v in identity.items()) else None


def is_prepared(folder: Path, dataset: str, settings: dict) -> bool:
    """`folder` holds a complete preparation of `dataset` with these settings."""
    settings = json.loads(json.dumps(settings))  # as stored: tuples became lists
    manifest = _built(folder, {"dataset": dataset, "settings": settings})
    return manifest is not None and all((folder / name).is_file() for name in manifest.get("files", {}))


def check_replaceable(out: Path, *, force: bool) -> None:
    """Refuse to overwrite what is not ours, and a different preparation unless --force."""
    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} is a file, not a folder")
    if not out.is_dir() or not any(out.iterdir()):
        return
    manifest = read_manifest(out)
    if manifest is None:
        raise DataError(f"--out {out} exists and is not a prepared data folder (no {MANIFEST}); choose another --out")
    if not force:
        raise DataError(
            f"--out {out} already holds a different preparation ({manifest.get('dataset')}, "
            f"settings {json.dumps(manifest.get('settings'))}); pass --force to replace it"
        )


@contextmanager
def staged_folder(out: Path, done: Callable[[], bool] = lambda: False) -> Iterator[Path]:
    """An empty temporary folder next to `out`; on success it replaces `out` (unless `done()`: another process
    finished the same build meanwhile, and its copy is used), on any failure it is removed."""
    created = [folder for folder in (out.parent, *out.parent.parents) if not folder.exists()]  # removed on failure
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.staging-", dir=out.parent))
        umask = os.umask(0)
        os.umask(umask)
        staging.chmod(0o777 & ~umask)  # mkdtemp's 0700 would otherwise become the prepared folder's mode
    except OSError as error:
        raise DataError(f"cannot write the output folder {out}: {error.strerror or error}") from None
    try:
        yield staging
        previous = out.parent / f".{out.name}.replaced-{os.getpid()}"
        if done():
            return
        if out.exists():
            out.rename(previous)
        try:
            staging.rename(out)
        except OSError:
            if not done():
                raise
        shutil.rmtree(previous, ignore_errors=True)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        for folder in created:  # deepest first: a failed preparation leaves no empty data-bin/ behind
            with suppress(OSError):
                folder.rmdir()


def build_cached(out_dir: Path, identity: dict, build: Callable[[Path], dict]) -> Path:
    """Unless `out_dir`'s manifest.json holds every entry of `identity`, `build(staging)` writes the data and returns
    the manifest, written last; returns `out_dir`."""
    done = lambda: _built(out_dir, identity) is not None
    if not done():
        with staged_folder(out_dir, done) as staging:
            manifest = build(staging)
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return out_dir


def write_manifest(folder: Path, recipe: Recipe, *, command: str, sources: dict, bpe: dict | None) -> None:
    """Line counts of every split and side (the text that was binarized), sha256 of every file, and how it was made."""
    from prelnx.machine import FAIRSEQ, installed  # its metadata's 20 ms, which every training's start need not pay

    tools = {"python": platform.python_version()}
    for name in ("prelnx", "sacremoses", "subword-nmt", "torch"):
        version, found = installed(name)
        if found:
            tools[name] = version
    version, distribution = installed(*FAIRSEQ)  # the first of them installed
    if distribution:
        tools["fairseq"] = f"{version} ({distribution})"
    files = sorted(path for path in folder.rglob("*") if path.is_file() and path.name != MANIFEST)
    manifest = {
        "format": MANIFEST_FORMAT,
        "dataset": recipe.dataset,
        "command": command,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "languages": {"source": recipe.languages[0], "target": recipe.languages[1]},
        "settings": recipe.settings,
        "lines": {
            split: {lang: count_lines(text_path(folder, split, lang)) for lang in recipe.languages}
            for split in recipe.splits
        },
        "bpe": bpe,
        "sources": sources,
        "tools": tools,
        "files": {
            str(path.relative_to(folder)): {"sha256": sha256_file(path), "bytes": path.stat().st_size} for path in files
        },
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")


def text_path(folder: Path, split: str, lang: str) -> Path:
    """The text that is binarized (after BPE), as fairseq's recipes leave it: text/{split}.{lang}."""
    return folder / "text" / f"{split}.{lang}"


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
    """Write fairseq dictionaries and binary splits for `text_dir/{split}.{lang}` into `dest_dir`, through fairseq's
    own preprocessing (`fairseq-preprocess`).

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
