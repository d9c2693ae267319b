#!/usr/bin/env bash
# Create .venv with torch and prelnx (editable). One line per step; about 80 s on a fresh machine.
# torch: an installed torch is kept (GPU users: install the build for your CUDA into .venv first). Otherwise,
# without a GPU the CPU build is taken (PyTorch's CPU wheel index, falling back to the default index), and with
# one the default build. PRELNX_TORCH_INDEX=<url> chooses the index yourself.
set -euo pipefail
cd "$(dirname "$0")/.."
TORCH_VERSION=2.13.0
CPU_INDEX="${PRELNX_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
step() { echo "[setup $1/3, ${SECONDS} s] $2"; }
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "prelnx needs Python >= 3.11; python3 is $(python3 --version 2>&1)" >&2
  exit 2
fi

if [ ! -x .venv/bin/python ]; then
  step 1 "creating the virtual environment .venv"
  python3 -m venv .venv
else
  step 1 "virtual environment .venv: already there"
fi
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)

if .venv/bin/python -c "import torch" 2>/dev/null; then
  step 2 "torch: keeping the installed $(.venv/bin/python -c 'import torch; print(torch.__version__)')"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1 && [ -z "${PRELNX_TORCH_INDEX:-}" ]; then
  step 2 "torch ${TORCH_VERSION}: a GPU is present, installing the default (CUDA) build (several GB)"
  "${pip[@]}" "torch==${TORCH_VERSION}"
else
  step 2 "torch ${TORCH_VERSION}: no GPU, installing the CPU build"
  # The CPU index first (a bare torch requirement would pull a multi-GB CUDA build); where that index cannot be
  # reached, the default index (where a local CPU wheel may be configured, as on our CI machines).
  if ! "${pip[@]}" --retries 0 --timeout 15 --index-url "$CPU_INDEX" "torch==${TORCH_VERSION}" 2>/dev/null; then
    echo "  (the CPU index could not be reached: installing from the default index; where that is public PyPI, this" \
         "is the multi-GB CUDA build - set PRELNX_TORCH_INDEX to a CPU index you can reach to avoid it)"
    "${pip[@]}" "torch==${TORCH_VERSION}"
  fi
fi

step 3 "prelnx and its dependencies (fairseq, sacrebleu, tensorboard, ...), at the versions of constraints.txt"
"${pip[@]}" -e '.[test]' -c constraints.txt
echo "[setup done, ${SECONDS} s] activate with: source .venv/bin/activate"
