#!/usr/bin/env bash
# Recording overhead, side by side in one run: the bare program, `fragsim record` (native, its
# default order; the recorder-alone and "after" columns use the same),
# `fragsim record --stacks`, `heaptrack -r` and `fragsim record --with valgrind`, on
#   python: CPython 3.11 with PYTHONMALLOC=malloc building a dict of 1M strings;
#   cpp:    tests/native_programs/threads_map.cpp, 4 std::thread workers building
#           std::map<std::string, std::string> of 100k entries each.
# Prints a markdown table of median wall and CPU times (RUNS=5 runs each; VALGRIND_RUNS, default
# RUNS, for the slow valgrind column), ratios to bare, events and trace bytes per event.
# PYTHON=... picks the interpreter (default python3.11); WORKLOADS="cpp" runs one of them. Needs g++, heaptrack, valgrind.
# STACKS_ONLY=1 runs only bare, preload --stacks and record --stacks; with BEFORE_LIB=path/to/an
# older libfragsim_preload.so, the same two with it beside them (a before/after of the recorder).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
VALGRIND_RUNS=${VALGRIND_RUNS:-$RUNS}
PYTHON=${PYTHON:-python3.11}

for tool in heaptrack valgrind bc g++; do
  command -v "$tool" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$tool"; }
done
[ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ] || apt-get install -y -qq libunwind8
cargo build --release -q
cargo build --release -q --example convert_raw
fragsim=$PWD/target/release/fragsim
convert_raw=$PWD/target/release/examples/convert_raw
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -pthread -o "$work/threads_map" tests/native_programs/threads_map.cpp
# The interpreter itself, not a wrapper script (pyenv's shims run several processes).
python=$("$PYTHON" -c 'import sys; print(sys.executable)')

source scripts/bench-common.sh

lib=$PWD/target/release/libfragsim_preload.so

# The program under the recorder, then its raw file converted: how `fragsim record` went before
# it converted while the program ran (the same conversion code, run after the program).
record_after() {
  local stacks=$1
  shift
  env LD_PRELOAD="$lib" FRAGSIM_PRELOAD_DIR="$work/raw" FRAGSIM_PRELOAD_FLAGS="follow$auto${stacks:+,stacks}" "$@" &&
    "$convert_raw" "$work"/raw/raw.* "$work/after.trace" ${stacks:+--stacks} &&
    rm -f "$work"/raw/* "$work/after.trace"
}
# One run into column $1 of the program under recorder library $2 with flags $3 alone (no
# conversion); its raw files are removed after.
preload_run() {
  local col=$1 library=$2 flags=$3
  run "$col" env LD_PRELOAD="$library" FRAGSIM_PRELOAD_DIR="$work/raw" FRAGSIM_PRELOAD_FLAGS="$flags" "${cmd[@]}"
  rm -f "$work"/raw/*
}
# The order `fragsim record` takes by default, for the recorder-alone columns.
auto=$(auto_order_flag)
# Only the --stacks columns, with an older recorder library's beside them if given.
stacks_only() {
  local before=${BEFORE_LIB:-}
  echo "Medians of $RUNS runs, the columns in turn run by run, seconds wall / CPU (ratio to bare)."
  echo
  echo "| workload | bare | preload --stacks | record --stacks |${before:+ preload --stacks (before) | record --stacks (before) |}"
  echo "|---|---:|---:|---:|${before:+---:|---:|}"
  for workload in ${WORKLOADS:-python cpp}; do
    workload_cmd "$workload"
    mkdir -p "$work/raw"
    rm -f "$work"/*.times
    for i in $(seq "$RUNS"); do
      run bare "${cmd[@]}"
      preload_run preload_s "$lib" "follow$auto,stacks"
      run stacks "$fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
      if [ -n "$before" ]; then
        preload_run preload_b "$before" "follow$auto,stacks"
        run stacks_b env FRAGSIM_PRELOAD="$before" "$fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
      fi
    done
    read -r bare_w bare_c <<<"$(med bare)"
    local extra=""
    [ -n "$before" ] && extra=" $(cell "$(med preload_b)") | $(cell "$(med stacks_b)") |"
    echo "| $workload | $bare_w / $bare_c | $(cell "$(med preload_s)") | $(cell "$(med stacks)") |$extra"
  done
}
if [ -n "${STACKS_ONLY:-}" ]; then
  stacks_only
  exit 0
fi

echo "Medians of $RUNS runs (valgrind: $VALGRIND_RUNS), the columns in turn run by run, seconds wall / CPU (ratio to bare). 'preload'"
echo "is the program under the recorder alone; 'record' is all of \`fragsim record\` (run + conversion + trace, converting while"
echo "the program runs); 'after' is the program under the recorder, then the same conversion once it has exited (as before)."
echo
echo "| workload | bare | preload | record | after | preload --stacks | record --stacks | after --stacks | heaptrack -r | valgrind (record --with valgrind) | events | bytes/event | bytes/event --stacks |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for workload in ${WORKLOADS:-python cpp}; do
  workload_cmd "$workload"
  mkdir -p "$work/raw"
  rm -f "$work"/*.times
  # The columns take turns, run by run (bare, preload, ..., bare, preload, ...), so a change
  # in the machine's load between runs touches every column alike.
  for i in $(seq "$RUNS"); do
    run bare "${cmd[@]}"
    preload_run preload "$lib" "follow$auto"
    preload_run preload_s "$lib" "follow$auto,stacks"
    run native "$fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    summary=$(grep '^recorded' "$work/stderr")
    run after record_after "" "${cmd[@]}"
    run stacks "$fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    summary_stacks=$(grep '^recorded' "$work/stderr")
    run after_s record_after stacks "${cmd[@]}"
    (cd "$work" && run heaptrack heaptrack -r -o "$work/ht" "${cmd[@]}")
    rm -f "$work"/ht*
    if [ "$i" -le "$VALGRIND_RUNS" ]; then
      run valgrind "$fragsim" record --with valgrind -o "$work/v.trace" -- "${cmd[@]}"
    fi
  done
  read -r bare_w bare_c <<<"$(med bare)"
  events=$(sed -E 's/^recorded ([0-9]+) events.*/\1/' <<<"$summary")
  bpe=$(grep -oE '[0-9.]+ bytes/event' <<<"$summary" | cut -d' ' -f1)
  bpe_stacks=$(grep -oE '[0-9.]+ bytes/event' <<<"$summary_stacks" | cut -d' ' -f1)
  preload=$(med preload)
  preload_s=$(med preload_s)
  native=$(med native)
  stacks=$(med stacks)
  after=$(med after)
  after_s=$(med after_s)
  heaptrack=$(med heaptrack)
  # VALGRIND_RUNS=0 leaves the slow column out.
  valgrind_cell="not run"
  [ -s "$work/valgrind.times" ] && valgrind_cell=$(cell "$(med valgrind)")
  echo "| $workload | $bare_w / $bare_c | $(cell "$preload") | $(cell "$native") | $(cell "$after") | $(cell "$preload_s") | $(cell "$stacks") | $(cell "$after_s") | $(cell "$heaptrack") | $valgrind_cell | $events | $bpe | $bpe_stacks |"
done
