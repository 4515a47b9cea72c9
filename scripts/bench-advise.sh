#!/usr/bin/env bash
# advise on a 10 M-event recorded trace, side by side with its peer: `fragsim advise T --cpus 2`
# (the built-in grid, 20 settings in one pass, and the live checks of the recommended ones,
# spaced by default) against `fragsim replay T --process --live --cpus 2` (one model and one
# live check of the same trace, the same spacing). The trace: scripts/advise_workload.py
# (CPython, four threads, PYTHONMALLOC=malloc) recorded with `fragsim record`.
# Prints median wall and CPU seconds of RUNS runs each (default 5, the two in turn), and the
# median of the ratios pair by pair. Issue 36's goal: advise in 60 s or less on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
PYTHON=${PYTHON:-python3}
command -v bc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bc; }
cargo build --release -q
fragsim=$PWD/target/release/fragsim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python=$("$PYTHON" -c 'import sys; print(sys.executable)')
source scripts/bench-common.sh

PYTHONMALLOC=malloc "$fragsim" record -o "$work/churn.trace" -- "$python" scripts/advise_workload.py 2>"$work/record.err" ||
  { cat "$work/record.err" >&2; exit 1; }
events=$("$fragsim" trace stats "$work/churn.trace" --format csv | awk -F, 'NR == 2 {print $2}')
advise=("$fragsim" advise "$work/churn.trace" --cpus 2 --format csv)
peer=("$fragsim" replay "$work/churn.trace" --process --live --cpus 2 --format csv)
for _ in $(seq "$RUNS"); do
  run advise "${advise[@]}"
  run peer "${peer[@]}"
done
ratios() { paste -d' ' "$work/advise.times" "$work/peer.times" | awk -v f="$1" '{printf "%.3f\n", $f / $(f + 2)}' | median; }
read -r aw ac <<<"$(med advise)"
read -r pw pc <<<"$(med peer)"
echo "Medians of $RUNS runs each, in turn; trace: $events events (scripts/advise_workload.py recorded)."
echo
echo "| command | wall s | CPU s |"
echo "|---|---:|---:|"
echo "| fragsim advise T --cpus 2 | $aw | $ac |"
echo "| fragsim replay T --process --live --cpus 2 | $pw | $pc |"
echo "| ratio advise / replay (median of pairs) | $(ratios 1) | $(ratios 2) |"
