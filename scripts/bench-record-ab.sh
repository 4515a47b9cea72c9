#!/usr/bin/env bash
# Two builds of the recorder side by side in one run: BASELINE=DIR (another build's
# target/release: fragsim, libfragsim_preload.so, examples/convert_raw) against this tree's,
# on bench-record.sh's two workloads, the columns taking turns run by run. Prints a markdown
# table of median wall / CPU seconds (ratio to bare) of `fragsim record` and `record --stacks`
# per build, and the CPU seconds of the conversion alone (`examples/convert_raw` on one raw
# file the baseline's library wrote, the same file for both builds). RUNS=5 by default.
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

timed() {
  local t
  t=$( { TIMEFORMAT='%R %U %S'; time "$@" >/dev/null 2>"$work/stderr"; } 2>&1 ) || {
    cat "$work/stderr" >&2
    return 1
  }
  awk '{printf "%.3f %.3f\n", $1, $2 + $3}' <<<"$t"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
run() {
  local col=$1
  shift
  timed "$@" >>"$work/$col.times"
}
med() { echo "$(cut -d' ' -f1 "$work/$1.times" | median) $(cut -d' ' -f2 "$work/$1.times" | median)"; }
cell() {
  read -r w c <<<"$1"
  printf '%s (%.2fx) / %s (%.2fx)' "$w" "$(bc -l <<<"$w / $bare_w")" "$c" "$(bc -l <<<"$c / $bare_c")"
}
echo "| workload | bare | record (baseline) | record | record --stacks (baseline) | record --stacks | conversion CPU s (baseline) | conversion CPU s |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for workload in ${WORKLOADS:-python cpp}; do
  case $workload in
    python) cmd=("$python" -c 'd = {str(i): i for i in range(1_000_000)}') ;;
    cpp) cmd=("$work/threads_map" 100000) ;;
  esac
  if [ "$workload" = python ]; then export PYTHONMALLOC=malloc; else unset PYTHONMALLOC; fi
  rm -rf "$work"/*.times "$work/raw"
  mkdir -p "$work/raw"
  env LD_PRELOAD="$B/libfragsim_preload.so" FRAGSIM_PRELOAD_DIR="$work/raw" FRAGSIM_PRELOAD_FLAGS=follow "${cmd[@]}" >/dev/null
  raw=$(ls -S "$work"/raw/raw.* | head -1)
  for i in $(seq "$RUNS"); do
    run bare "${cmd[@]}"
    run rb "$B/fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    run ra "$A/fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    run sb "$B/fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    run sa "$A/fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    run cb "$B/examples/convert_raw" "$raw" "$work/c.trace"
    run ca "$A/examples/convert_raw" "$raw" "$work/c.trace"
  done
  read -r bare_w bare_c <<<"$(med bare)"
  echo "| $workload | $bare_w / $bare_c | $(cell "$(med rb)") | $(cell "$(med ra)") | $(cell "$(med sb)") | $(cell "$(med sa)") | $(med cb | cut -d' ' -f2) | $(med ca | cut -d' ' -f2) |"
done
