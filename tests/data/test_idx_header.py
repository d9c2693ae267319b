"""fairseq's mmap `.idx` read by prelnx (data/check.py's header, the one reader: reproduce/estimate.py's token count,
report/plateau.py's tokens) as fairseq's own reader reads it: fairseq 0.12's index has no document count, so the sizes follow the sentence count."""

from __future__ import annotations

import numpy as np
import torch
from fairseq.data.indexed_dataset import MMapIndexedDataset, MMapIndexedDatasetBuilder

from prelnx.data.check import check_split, longest_sentence, sentence_count, split_tokens
from prelnx.report.plateau import binarized_entropy, entropy_bits
from prelnx.reproduce.estimate import _tokens

LINES = [[5, 6, 2], [7, 8, 9, 2], [5] * 8 + [2]]  # the longest line last: an off-by-one offset misses it


def test_the_index_reads_as_fairseqs_reader_reads_it(tmp_path):
    prefix = tmp_path / "train.de-en.de"
    builder = MMapIndexedDatasetBuilder(f"{prefix}.bin", dtype=np.int32)
    for line in LINES:
        builder.add_item(torch.tensor(line, dtype=torch.int32))
    builder.finalize(f"{prefix}.idx")
    dataset = MMapIndexedDataset(str(prefix))  # its sizes are a view of its mmap: kept alive while read
    sizes = np.array(dataset.sizes)
    assert list(sizes) == [3, 4, 9]
    assert sentence_count(prefix) == 3 and longest_sentence(prefix) == 9
    assert _tokens(prefix) == int(sizes.sum()) == 16
    check_split(prefix, vocabulary=10)  # consistent with its .bin: no refusal
    tokens = split_tokens(prefix)
    assert tokens.dtype == np.int32 and list(tokens) == [t for line in LINES for t in line]
    assert binarized_entropy(prefix) == entropy_bits(np.bincount(tokens)) and binarized_entropy(tmp_path / "no") is None
