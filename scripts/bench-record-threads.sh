#!/usr/bin/env bash
# Recording many threads (issue 39 §5): tests/native_programs/threads_map.cpp on THREADS
# workers (default "1 4 8 14"; each builds a std::map of N=100000 entries), and CPython
# building a dict of 1M strings (single thread), each bare, under `fragsim record` and
# `fragsim record --stacks`: medians of RUNS runs (default 5), columns taking turns run by
# run, wall and CPU seconds with their ratio to bare.
# Then the per-event CPU cost of each part: the recorder in the program (the program under
# the recorder alone, `LD_PRELOAD`, less bare, over the events) and the conversion of its raw
# file (`convert_raw` on CONVERT_THREADS threads, default "1 2 3 4 5 6 7": converting, id,
# busiest address shard's, decoding and writing threads' CPU per event, and events per
# second), so the conversion's sequential parts (the converting thread's and the id thread's
# CPU per event, with decoders and shards beside them: the larger bounds it, or the busiest
# shard's if larger) say what a many-core machine can record without waiting for it.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
THREADS=${THREADS:-1 4 8 14}
CONVERT_THREADS=${CONVERT_THREADS:-1 2 3 4 5 6 7}
N=${N:-100000}
PYTHON=${PYTHON:-python3}
command -v bc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq bc; }
cargo build --release -q
cargo build --release -q --example convert_raw
fragsim=$PWD/target/release/fragsim
convert_raw=$PWD/target/release/examples/convert_raw
lib=$PWD/target/release/libfragsim_preload.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -pthread -o "$work/threads_map" tests/native_programs/threads_map.cpp
python=$("$PYTHON" -c 'import sys; print(sys.executable)')
source scripts/bench-common.sh
auto=$(auto_order_flag)

echo "$(nproc) cores; medians of $RUNS runs, seconds wall / CPU (ratio to bare); 'record' converts while the program runs"
echo "($($fragsim --version 2>/dev/null || echo fragsim); decoding threads: ${FRAGSIM_DECODERS:-by cores}; id thread: ${FRAGSIM_ID_THREAD:-by cores}; address shards: ${FRAGSIM_ADDRESS_SHARDS:-by cores})."
echo
echo "| workload | threads | events | bare | record | record --stacks |"
echo "|---|---:|---:|---:|---:|---:|"
rows=()
for threads in $THREADS python; do
  if [ "$threads" = python ]; then
    cmd=("$python" -c 'd = {str(i): i for i in range(1_000_000)}')
    export PYTHONMALLOC=malloc
    name=python
    shown=1
  else
    cmd=("$work/threads_map" "$N" "$threads")
    unset PYTHONMALLOC
    name=cpp
    shown=$threads
  fi
  rm -f "$work"/*.times
  for _ in $(seq "$RUNS"); do
    run bare "${cmd[@]}"
    run native "$fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    events=$(sed -nE 's/^recorded ([0-9]+) events.*/\1/p' "$work/stderr")
    run stacks "$fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    mkdir -p "$work/raw"
    run preload env LD_PRELOAD="$lib" FRAGSIM_PRELOAD_DIR="$work/raw" FRAGSIM_PRELOAD_FLAGS="follow$auto" "${cmd[@]}"
    rm -rf "$work/raw"
  done
  read -r bare_w bare_c <<<"$(med bare)"
  echo "| $name | $shown | $events | $bare_w / $bare_c | $(cell "$(med native)") | $(cell "$(med stacks)") |"
  read -r _ pre_c <<<"$(med preload)"
  rows+=("$name $shown $events $bare_c $pre_c")
done

echo
echo "Per event, CPU: the recorder in the program ((preload - bare) CPU / events), and the conversion of"
echo "one raw file of the run on 1..7 threads (1: all on one; 2: a writer beside; 3: and the id thread; 4, 5: and 1 or 2 decoders;"
echo "6, 7: and the address table split over 1 or 2 shard threads)."
echo
echo "| workload | threads | recorder ns/event | conversion threads | events/s | converting ns/event | ids ns/event | busiest shard ns/event | decoding ns/event | writing ns/event |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for row in "${rows[@]}"; do
  read -r name shown events bare_c pre_c <<<"$row"
  if [ "$name" = python ]; then
    cmd=("$python" -c 'd = {str(i): i for i in range(1_000_000)}')
    export PYTHONMALLOC=malloc
  else
    cmd=("$work/threads_map" "$N" "$shown")
    unset PYTHONMALLOC
  fi
  rm -rf "$work/raw"
  mkdir -p "$work/raw"
  env LD_PRELOAD="$lib" FRAGSIM_PRELOAD_DIR="$work/raw" FRAGSIM_PRELOAD_FLAGS="follow$auto" "${cmd[@]}" >/dev/null
  raw=$(ls "$work"/raw/raw.*)
  rec=$(bc -l <<<"($pre_c - $bare_c) * 1000000000 / $events" | xargs printf '%.1f')
  for ct in $CONVERT_THREADS; do
    : >"$work/conv"
    for _ in $(seq "$RUNS"); do
      "$convert_raw" "$raw" "$work/c.trace" --threads "$ct" >>"$work/conv"
    done
    # "N events in S s on T thread(s): X M events/s, ... CPU A ns/event converting, I ns/event ids, H ns/event shard, B ns/event decoding, C ns/event writing"
    field() { grep -oE "[0-9.]+ $1" "$work/conv" | cut -d' ' -f1 | median; }
    echo "| $name | $shown | $rec | $ct | $(field 'M events/s') M | $(field 'ns/event converting') | $(field 'ns/event ids') | $(field 'ns/event shard') | $(field 'ns/event decoding') | $(field 'ns/event writing') |"
  done
done
