#!/usr/bin/env bash
# Two builds of the recorder side by side in one run: BASELINE=DIR (another build's
# target/release: fragsim, libfragsim_preload.so, examples/convert_raw) against this tree's,
# on bench-record.sh's two workloads, the columns taking turns run by run. Prints a markdown
# table of median wall / CPU seconds (ratio to bare) of `fragsim record` and `record --stacks`
# per build, and the CPU seconds of the conversion alone (`examples/convert_raw` on a raw file
# of the program that the build's own library wrote: a reader refuses another raw version).
# RUNS=5 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
PYTHON=${PYTHON:-python3.11}
B=${BASELINE:?BASELINE=DIR: another build of target/release}
cargo build --release -q
cargo build --release -q --example convert_raw
A=$PWD/target/release
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -pthread -o "$work/threads_map" tests/native_programs/threads_map.cpp
python=$("$PYTHON" -c 'import sys; print(sys.executable)')

source scripts/bench-common.sh

echo "| workload | bare | record (baseline) | record | record --stacks (baseline) | record --stacks | conversion CPU s (baseline) | conversion CPU s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for workload in ${WORKLOADS:-python cpp}; do
  workload_cmd "$workload"
  rm -rf "$work"/*.times "$work"/raw*
  for build in a b; do
    lib=$A
    [ $build = b ] && lib=$B
    mkdir -p "$work/raw$build"
    env LD_PRELOAD="$lib/libfragsim_preload.so" FRAGSIM_PRELOAD_DIR="$work/raw$build" FRAGSIM_PRELOAD_FLAGS=follow "${cmd[@]}" >/dev/null
  done
  raw_a=$(ls -S "$work"/rawa/raw.* | head -1)
  raw_b=$(ls -S "$work"/rawb/raw.* | head -1)
  for i in $(seq "$RUNS"); do
    run bare "${cmd[@]}"
    run rb "$B/fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    run ra "$A/fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    run sb "$B/fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    run sa "$A/fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    run cb "$B/examples/convert_raw" "$raw_b" "$work/c.trace"
    run ca "$A/examples/convert_raw" "$raw_a" "$work/c.trace"
  done
  read -r bare_w bare_c <<<"$(med bare)"
  echo "| $workload | $bare_w / $bare_c | $(cell "$(med rb)") | $(cell "$(med ra)") | $(cell "$(med sb)") | $(cell "$(med sa)") | $(med cb | cut -d' ' -f2) | $(med ca | cut -d' ' -f2) |"
done
