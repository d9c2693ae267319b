#!/usr/bin/env bash
# A screenshot of TensorBoard's first screen for a sweep (docs/tensorboard_demo.png was made with this):
#   bash scripts/tensorboard_screenshot.sh runs/demo docs/tensorboard_demo.png
# Needs Chromium (Debian: apt-get install chromium). Everything runs on 127.0.0.1 and stops at the end.
# The page is the one prelnx prints: custom scalars, smoothing 0 (URL), "Ignore outliers" off (a setting
# TensorBoard keeps in the browser's local storage: set here once in a fresh profile, as a user unticks it once).
set -euo pipefail
logdir=${1:?a sweep or run folder}; out=${2:?the PNG to write}; port=${PORT:-6123}
cd "$(dirname "$0")/.."
profile=$(mktemp -d); page=$(mktemp -d)
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking
        --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars)
echo "<script>localStorage.setItem('_ignoreYOutliers', 'false')</script>" > "$page/index.html"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$page" >/dev/null 2>&1 &
server=$!
sleep 1
"${chrome[@]}" --dump-dom "http://127.0.0.1:$port/" >/dev/null 2>&1
kill $server; wait $server 2>/dev/null || true
.venv/bin/tensorboard --logdir "$logdir" --host 127.0.0.1 --port "$port" >/dev/null 2>&1 &
tb=$!
trap 'kill $tb 2>/dev/null; rm -rf "$profile" "$page"' EXIT
for _ in $(seq 60); do curl -sf "http://127.0.0.1:$port/data/runs" >/dev/null && break; sleep 0.5; done
"${chrome[@]}" --window-size=1500,1100 --virtual-time-budget=20000 --screenshot="$out" \
  "http://127.0.0.1:$port/#custom_scalars&_smoothingWeight=0" 2>/dev/null
echo "wrote $out"
