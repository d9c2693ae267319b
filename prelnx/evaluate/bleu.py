"""BLEU as the paper reports it (tokenized) and as SacreBLEU reports it (detokenized, with a signature)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import sacrebleu


@dataclass
class BleuScores:
    bleu_tokenized: float  # on BPE-removed, tokenized text, as multi-bleu.perl / fairseq-generate (the paper)
    sacrebleu: float  # on detokenized text, SacreBLEU's default 13a tokenization
    sacrebleu_signature: str


def split_compounds(line: str) -> str:
    """fairseq's WMT14 En-De convention for tokenized BLEU: 'a-b' -> 'a ##AT##-##AT## b'."""
    return re.sub(r"(\S)-(\S)", r"\1 ##AT##-##AT## \2", line)


def detokenize(lines: list[str], language: str | None) -> list[str]:
    if language is None:
        return lines
    from sacremoses import MosesDetokenizer

    detokenizer = MosesDetokenizer(lang=language)
    return [detokenizer.detokenize(line.split()) for line in lines]


def score(hypotheses: list[str], references: list[str], *, target_lang: str | None, compound_split: bool = False) -> BleuScores:
    """`hypotheses`/`references`: tokenized, BPE removed. `target_lang` None means the text needs no detokenizing."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    tokenized_h, tokenized_r = hypotheses, references
    if compound_split:
        tokenized_h = [split_compounds(h) for h in hypotheses]
        tokenized_r = [split_compounds(r) for r in references]
    # force: the text is tokenized on purpose here (sacrebleu would warn about it)
    tokenized = sacrebleu.corpus_bleu(tokenized_h, [tokenized_r], tokenize="none", force=True)
    metric = sacrebleu.BLEU()
    detok = metric.corpus_score(detokenize(hypotheses, target_lang), [detokenize(references, target_lang)])
    return BleuScores(round(tokenized.score, 2), round(detok.score, 2), str(metric.get_signature()))
