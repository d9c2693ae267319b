"""Binarized data checked before training: a damaged split is one error naming the file, not a fairseq traceback.

fairseq reads `<split>.<src>-<tgt>.<lang>.{idx,bin}` in its mmap format and fails deep inside training on a
truncated `.bin` ("offset must be non-negative") or a token id past the dictionary ("index out of range").
We read the `.idx` header (fairseq's `MMapIndexedDataset` layout: magic, version, dtype code, item count,
sizes, pointers) with NumPy rather than importing fairseq, which would add 4 s to every start, and check
that the `.bin` holds exactly what the index says and that its largest token id fits the dictionary.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

MAGIC = b"MMIDIDX\x00\x00"
# fairseq.data.indexed_dataset._code_to_dtype
DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float64, 8: np.uint16,
          9: np.uint32, 10: np.uint64}
SPECIAL_SYMBOLS = 4  # fairseq's Dictionary: <s>, <pad>, </s>, <unk> come before the file's entries


class DataDamaged(ValueError):
    """A binarized split that fairseq would fail on; the message names the file."""


def dictionary_size(path: Path) -> int:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return SPECIAL_SYMBOLS + sum(1 for line in handle if line.strip())


def sentence_count(prefix: Path) -> int | None:
    """Sentences in a binarized split, from its `.idx` header; None when there is no such mmap index."""
    index = prefix.with_name(prefix.name + ".idx")
    try:
        with open(index, "rb") as handle:
            header = handle.read(len(MAGIC) + 8 + 1 + 8)
    except OSError:
        return None
    if not header.startswith(MAGIC) or len(header) < len(MAGIC) + 17:
        return None
    return struct.unpack("<Q", header[len(MAGIC) + 9 : len(MAGIC) + 17])[0]


def longest_sentence(prefix: Path) -> int | None:
    """The most tokens (end-of-sentence included) of a line in a binarized split; None without an mmap index."""
    count = sentence_count(prefix)
    if not count:
        return count
    index = prefix.with_name(prefix.name + ".idx")
    return int(np.memmap(index, dtype=np.int32, mode="r", offset=len(MAGIC) + 17, shape=(count,)).max())


def check_split(prefix: Path, vocabulary: int) -> None:
    """`prefix` is e.g. data-bin/x/train.de-en.de (without .idx/.bin)."""
    index, data = prefix.with_name(prefix.name + ".idx"), prefix.with_name(prefix.name + ".bin")
    if not data.is_file():
        raise DataDamaged(f"{data}: missing (its index {index.name} is there); binarize the data again")
    with open(index, "rb") as handle:
        header = handle.read(len(MAGIC) + 8 + 1 + 8)  # magic, version, dtype code, sentence count
    if not header.startswith(MAGIC):
        return  # another fairseq format (raw, lazy, cached): fairseq checks it itself
    if len(header) < len(MAGIC) + 17:
        raise DataDamaged(f"{index}: truncated index; binarize the data again")
    offset = len(MAGIC) + 8
    code = header[offset]
    count = struct.unpack("<Q", header[offset + 1 : offset + 9])[0]
    if code not in DTYPES:
        raise DataDamaged(f"{index}: unknown token type code {code}; binarize the data again")
    dtype = np.dtype(DTYPES[code])
    start = offset + 1 + 8
    needed = start + count * (4 + 8)
    if index.stat().st_size < needed:
        raise DataDamaged(f"{index}: truncated index ({index.stat().st_size} bytes, {needed} needed for {count} "
                          f"sentences); binarize the data again")  # fmt: skip
    if count == 0:
        return
    sizes = np.memmap(index, dtype=np.int32, mode="r", offset=start, shape=(count,))
    pointers = np.memmap(index, dtype=np.int64, mode="r", offset=start + count * 4, shape=(count,))
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
    sizes = {}
    for lang in (source, target):
        dictionary = folder / f"dict.{lang}.txt"
        try:
            sizes[lang] = dictionary_size(dictionary)
        except OSError as error:
            raise DataDamaged(f"{dictionary}: cannot read ({error.strerror})") from None
    for index in sorted(folder.glob(f"*.{source}-{target}.*.idx")) + sorted(folder.glob(f"*.{target}-{source}.*.idx")):
        lang = index.name[: -len(".idx")].rsplit(".", 1)[-1]
        if lang in sizes:
            check_split(index.with_name(index.name[: -len(".idx")]), sizes[lang])


def check_monolingual(folder: Path) -> None:
    """Check the splits of monolingual data (`prelnx data prepare text`: dict.txt, train/valid.bin/.idx)."""
    dictionary = folder / "dict.txt"
    try:
        size = dictionary_size(dictionary)
    except OSError as error:
        raise DataDamaged(f"{dictionary}: cannot read ({error.strerror})") from None
    for index in sorted(folder.glob("*.idx")):
        check_split(index.with_name(index.name[: -len(".idx")]), size)

