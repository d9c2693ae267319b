"""Reading and writing the line-oriented text files of a corpus: strict UTF-8, '\\n' as the only line break; and
`DataError`, the one exception of data preparation.

Lines are split on '\\n' alone, as grep, sed and the Moses perl scripts do (Python's `splitlines` would
also break on U+2028, U+0085, ... and shift a parallel corpus out of alignment). Invalid UTF-8 is an error
that names the file and the line, never a silent replacement.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from prelnx.exits import Refusal

_SEG_OPEN = re.compile(r'<seg id="[0-9]*">\s*')
_SEG_CLOSE = re.compile(r"\s*</seg>\s*")
_DOC_ID = re.compile(r'<doc\b[^>]*\bdocid="([^"]*)"')
_SEG_ID = re.compile(r'<seg id="?([^">]*)"?')


class DataError(Refusal):
    """Bad input data, a missing file or download, an unwritable output folder: one clear message (what to do)."""


def read_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 text file (gzip if it ends in .gz), without their '\\n'."""
    try:
        handle: BinaryIO = gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")  # noqa: SIM115
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    with handle:
        number = 0
        try:
            for number, raw in enumerate(handle, start=1):
                try:
                    yield raw.rstrip(b"\n").decode("utf-8")
                except UnicodeDecodeError as error:
                    raise DataError(
                        f"{path}: line {number} is not valid UTF-8 ({error.reason} at byte {error.start + 1}); "
                        f"convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)"
                    ) from None
        except (EOFError, gzip.BadGzipFile, OSError) as error:
            raise DataError(
                f"{path}: unreadable after line {number} ({error}); the file is truncated or corrupt"
            ) from None


def count_lines(path: Path) -> int:
    """Number of lines, validating UTF-8 on the way; an empty file is an error."""
    count = sum(1 for _ in read_lines(path))
    if count == 0:
        raise DataError(f"{path} is empty")
    return count


def write_lines(path: Path, lines: Iterable[str]) -> None:
    """Write lines with '\\n' endings."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.writelines(line + "\n" for line in lines)


def check_parallel(counts: dict[Path, int]) -> int:
    """Both sides of a parallel corpus have the same number of lines; returns it."""
    if len(set(counts.values())) > 1:
        described = " but ".join(f"{path} has {count:,} lines" for path, count in counts.items())
        raise DataError(f"source and target differ in length: {described}")
    return next(iter(counts.values()))


def parallel_lines(*paths: Path) -> int:
    """Count the lines of the sides of a parallel corpus (none empty, all the same); returns the count."""
    return check_parallel({path: count_lines(path) for path in paths})


def seg_lines(lines: Iterable[str]) -> Iterator[str]:
    """The text of the `<seg id="N">` lines of an IWSLT XML / WMT SGML file, as fairseq's scripts extract it:
    grep '<seg id' | sed 's/<seg id="[0-9]*">\\s*//g' | sed 's/\\s*<\\/seg>\\s*//g' | sed "s/’/'/g"."""
    for line in lines:
        if "<seg id" in line:
            yield _SEG_CLOSE.sub("", _SEG_OPEN.sub("", line)).replace("\u2019", "'")


def seg_ids(lines: Iterable[str]) -> list[tuple[str, str]]:
    """(document id, segment id) of every `<seg id` line, to check that two sides are aligned."""
    ids: list[tuple[str, str]] = []
    document = ""
    for line in lines:
        doc = _DOC_ID.search(line)
        if doc:
            document = doc.group(1)
        if "<seg id" in line:
            seg = _SEG_ID.search(line)
            ids.append((document, seg.group(1) if seg else ""))
    return ids


def check_aligned_segments(first: Path, second: Path) -> int:
    """Two XML/SGML files hold the same documents and segments in the same order; returns the segment count."""
    first_ids, second_ids = seg_ids(read_lines(first)), seg_ids(read_lines(second))
    if not first_ids:
        raise DataError(f"{first} holds no <seg id=...> lines")
    if len(first_ids) != len(second_ids):
        raise DataError(
            f"source and target differ in length: {first} has {len(first_ids):,} segments but {second} has "
            f"{len(second_ids):,}"
        )
    for number, (a, b) in enumerate(zip(first_ids, second_ids), start=1):
        if a != b:
            raise DataError(
                f"{first} and {second} are not aligned: segment {number} is doc {a[0]!r} seg {a[1]!r} in one and "
                f"doc {b[0]!r} seg {b[1]!r} in the other"
            )
    return len(first_ids)


def sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def tok_path(folder: Path, split: str, lang: str) -> Path:
    """The same text before BPE (fairseq's recipes' tmp/{split}.{lang}): text/tok/{split}.{lang}."""
    return folder / "text" / "tok" / f"{split}.{lang}"
