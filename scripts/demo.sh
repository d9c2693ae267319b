#!/usr/bin/env bash
# The demo: set up .venv if needed, then train the warm-up study's three arms side by side on the offline
# synthetic task (CPU), with progress over the whole sweep, and end with the report and the TensorBoard command.
# Measured on 2 idle cores: see README, "The demo and what it shows".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# exit code 1 means a run failed or was interrupted; a diverged arm is a result, not a failure of the demo
exec .venv/bin/prelnx sweep --config configs/sweeps/demo.yaml --jobs 3 "$@"
