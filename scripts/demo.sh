#!/usr/bin/env bash
# The demo: set up .venv if needed, then train the three arms of the warm-up study on the offline synthetic
# task (CPU, a few minutes each) and print their final numbers. Curves: tensorboard --logdir runs/demo
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
for arm in postln_nowarmup postln_warmup preln_nowarmup; do
  # exit code 3 (diverged) is a result, not a failure of the demo
  .venv/bin/prelnx train --config "configs/demo/$arm.yaml" || [ $? -eq 3 ]
done
.venv/bin/python - <<'PY'
import json, pathlib
print(f"\n{'run':<22}{'status':<10}{'valid loss':>12}{'valid BLEU':>12}{'wall s':>8}")
for arm in ("postln_nowarmup", "postln_warmup", "preln_nowarmup"):
    run = pathlib.Path("runs/demo") / arm
    rows = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines()] if (run / "metrics.jsonl").exists() else []
    status = json.loads((run / "status.json").read_text())["status"] if (run / "status.json").exists() else "-"
    last = rows[-1] if rows else {}
    print(f"{arm:<22}{status:<10}{last.get('valid_loss', float('nan')):>12.3f}{last.get('valid_bleu', float('nan')):>12.2f}{last.get('wall_seconds', 0):>8.0f}")
PY
