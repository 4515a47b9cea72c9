#!/usr/bin/env bash
# The second seed's C++ benchmark (scripts/seed-pmr.cpp), built with the installed g++ and run
# under glibc's malloc and under Debian's jemalloc (libjemalloc2, via LD_PRELOAD).
# Prints one JSON object per line: a run, or {"skip": reason} for a part it could not run.
# Each strategy runs in its own process, so its first run is cold.
# Usage: scripts/seed-pmr.sh [VECTORS] [ELEMENTS] [RUNS]   (defaults 1000000 100 6)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
vectors="${1:-1000000}"
elements="${2:-100}"
runs="${3:-6}"
jemalloc="${SEED_PMR_JEMALLOC:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}"
out_dir="${SEED_PMR_BUILD_DIR:-$here/../target/seed-pmr}"

if ! command -v g++ >/dev/null 2>&1; then
  echo "seed-pmr: g++ not found, skipping the C++ benchmark" >&2
  echo '{"skip":"g++ not found"}'
  exit 0
fi
mkdir -p "$out_dir"
exe="$out_dir/seed-pmr"
if [ ! -x "$exe" ] || [ "$here/seed-pmr.cpp" -nt "$exe" ]; then
  # A private temporary per run: several reports (the tests run them in parallel) may build
  # at once, and a rename never touches an executable another run is executing.
  tmp="$exe.tmp.$$"
  trap 'rm -f "$tmp"' EXIT
  g++ -O3 -std=c++17 -o "$tmp" "$here/seed-pmr.cpp"
  mv -f "$tmp" "$exe"
fi

for strategy in std monotonic nofree monotonic-fresh nofree-fresh; do
  "$exe" "$strategy" "$vectors" "$elements" "$runs"
done
if [ -r "$jemalloc" ]; then
  for strategy in std monotonic nofree monotonic-fresh nofree-fresh; do
    # MALLOC_CONF unset: Debian's jemalloc with its defaults.
    env -u MALLOC_CONF LD_PRELOAD="$jemalloc" "$exe" "$strategy" "$vectors" "$elements" "$runs"
  done
  # Decay off, std only: are the freed slabs kept, and are they reused? Under 5.3.0 they are
  # kept but not reused, so each build adds its pages (about 112k): 2 builds (one cold, one
  # warm) show it and keep this run near 0.86 GB at the seed's size, inside the report's 1 GiB
  # budget (3 builds took 1.34 GB, 6 would take 2.7 GB).
  decay_off_runs=$(( runs < 2 ? runs : 2 ))
  MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1 LD_PRELOAD="$jemalloc" \
    "$exe" std "$vectors" "$elements" "$decay_off_runs"
else
  echo "seed-pmr: $jemalloc not found (apt-get install libjemalloc2), skipping the jemalloc runs" >&2
  echo "{\"skip\":\"$jemalloc not found\"}"
fi
