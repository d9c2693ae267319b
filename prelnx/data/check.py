"""Binarized data checked before training: a damaged split is one error naming the file, not a fairseq traceback
deep inside training ("offset must be non-negative", "index out of range").

The mmap `.idx` (fairseq's `MMapIndexedDataset`) is read with NumPy, not fairseq (4 s more per start): the `.bin`
must hold exactly what the index says, and its largest token id must fit the dictionary.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

from prelnx.exits import Refusal

MAGIC = b"MMIDIDX\x00\x00"
# fairseq.data.indexed_dataset._code_to_dtype
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float64, 8: np.uint16,
          9: np.uint32, 10: np.uint64}
HEADER_BYTES = len(MAGIC) + 8 + 1 + 8  # magic, version, token type code, sentence count
SPECIAL_SYMBOLS = 4  # fairseq's Dictionary: <s>, <pad>, </s>, <unk> come before the file's entries


class DataDamaged(Refusal):
    """A binarized split that fairseq would fail on; the message names the file."""


def dictionary_size(path: Path) -> int:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return SPECIAL_SYMBOLS + sum(1 for line in handle if line.strip())
    except OSError as error:
        raise DataDamaged(f"{path}: cannot read ({error.strerror})") from None


def _header(index: Path) -> tuple[int, int] | None:
    """(token type code, sentence count) of an mmap `.idx`; None for another fairseq format (raw, lazy, cached)."""
    with open(index, "rb") as handle:
        header = handle.read(HEADER_BYTES)
    if not header.startswith(MAGIC):
        return None
    if len(header) < HEADER_BYTES:
        raise DataDamaged(f"{index}: truncated index; binarize the data again")
    return header[len(MAGIC) + 8], struct.unpack("<Q", header[-8:])[0]


def sentence_count(prefix: Path) -> int | None:
    """Sentences in a binarized split, from its `.idx` header; None when there is no such mmap index."""
    try:
        header = _header(prefix.with_name(prefix.name + ".idx"))
    except (OSError, DataDamaged):
        return None
    return None if header is None else header[1]


def split_sizes(prefix: Path) -> np.ndarray | None:
    """Each line's tokens (end-of-sentence included) in a binarized split; None without a readable mmap index."""
    count = sentence_count(prefix)
    try:
        index = prefix.with_name(prefix.name + ".idx")
        return None if count is None else np.memmap(index, np.int32, mode="r", offset=HEADER_BYTES, shape=(count,))
    except ValueError:  # an index shorter than its header says
        return None


def split_tokens(prefix: Path) -> np.ndarray | None:
    """Every token id of a binarized split (its `.bin`, in the index's token type); None without an mmap index."""
    try:
        header = _header(prefix.with_name(prefix.name + ".idx"))
        if header is None or header[0] not in DTYPES:
            return None
        return np.fromfile(prefix.with_name(prefix.name + ".bin"), dtype=DTYPES[header[0]])
    except (OSError, DataDamaged, ValueError):
        return None


def longest_sentence(prefix: Path) -> int | None:
    """The most tokens (end-of-sentence included) of a line in a binarized split; None without an mmap index."""
    sizes = split_sizes(prefix)
    return None if sizes is None else int(sizes.max(initial=0))


def check_split(prefix: Path, vocabulary: int) -> None:
    """`prefix` is e.g. data-bin/x/train.de-en.de (without .idx/.bin)."""
    index, data = prefix.with_name(prefix.name + ".idx"), prefix.with_name(prefix.name + ".bin")
    if not data.is_file():
        raise DataDamaged(f"{data}: missing (its index {index.name} is there); binarize the data again")
    header = _header(index)
    if header is None:
        return  # fairseq checks its other formats itself
    code, count = header
    if code not in DTYPES:
        raise DataDamaged(f"{index}: unknown token type code {code}; binarize the data again")
    dtype = np.dtype(DTYPES[code])
    needed = HEADER_BYTES + count * (4 + 8)
    if index.stat().st_size < needed:
        raise DataDamaged(f"{index}: truncated index ({index.stat().st_size} bytes, {needed} needed for {count} "
                          f"sentences); binarize the data again")  # fmt: skip
    if count == 0:
        return
    sizes = np.memmap(index, dtype=np.int32, mode="r", offset=HEADER_BYTES, shape=(count,))
    pointers = np.memmap(index, dtype=np.int64, mode="r", offset=HEADER_BYTES + count * 4, shape=(count,))
    expected = int(pointers[-1]) + int(sizes[-1]) * dtype.itemsize
    actual = data.stat().st_size
    if actual != expected:
        raise DataDamaged(f"{data}: {actual} bytes, but its index {index.name} describes {expected}: the file is "
                          f"{'truncated' if actual < expected else 'longer than its index'}; binarize the data again")
    if actual == 0:
        return
    largest = int(np.memmap(data, dtype=dtype, mode="r").max())
    if largest >= vocabulary:
        raise DataDamaged(f"{data}: holds token id {largest}, but the dictionary has only {vocabulary} entries "
                          f"(ids 0-{vocabulary - 1}): the data and the dictionary do not belong together")


def check_binarized(folder: Path, source: str, target: str) -> None:
    """Check every split of the pair `source`-`target` found in `folder`. Raises DataDamaged."""
    sizes = {lang: dictionary_size(folder / f"dict.{lang}.txt") for lang in (source, target)}
    for index in sorted(folder.glob(f"*.{source}-{target}.*.idx")) + sorted(folder.glob(f"*.{target}-{source}.*.idx")):
        lang = index.with_suffix("").suffix[1:]
        if lang in sizes:
            check_split(index.with_suffix(""), sizes[lang])


def check_monolingual(folder: Path) -> None:
    """Check the splits of monolingual data (`prelnx data prepare text`: dict.txt, train/valid.bin/.idx)."""
    size = dictionary_size(folder / "dict.txt")
    for index in sorted(folder.glob("*.idx")):
        check_split(index.with_suffix(""), size)
