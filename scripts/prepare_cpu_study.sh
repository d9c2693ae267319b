#!/usr/bin/env bash
# Data of the CPU-scale study (configs/sweeps/cpu_multi30k.yaml): Multi30k De-En prepared as usual, then its
# first 8,000 training pairs (with the full validation and test sets and the same BPE code) as a custom dataset,
# so that 15 trainings of several epochs each fit in well under an hour on 2 CPU cores.
#   bash scripts/prepare_cpu_study.sh [MULTI30K_SOURCE]        (default: ../shared/data/multi30k)
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir="${1:-../shared/data/multi30k}"
prelnx=${PRELNX:-prelnx}
$prelnx data prepare multi30k --source "$source_dir"
full=data-bin/multi30k.de-en
subset_text=data-bin/multi30k-8k.text
mkdir -p "$subset_text"
for lang in de en; do
  head -n 8000 "$full/text/tok/train.$lang" > "$subset_text/train.$lang"
done
$prelnx data prepare custom --out data-bin/multi30k-8k.de-en --source-lang de --target-lang en \
  --train-src "$subset_text/train.de" --train-tgt "$subset_text/train.en" \
  --valid-src "$full/text/tok/valid.de" --valid-tgt "$full/text/tok/valid.en" \
  --test-src "$full/text/tok/test.de" --test-tgt "$full/text/tok/test.en" \
  --bpe-code "$full/code"
