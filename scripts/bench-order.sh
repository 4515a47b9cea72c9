#!/usr/bin/env bash
# `--order seq` (one shared counter; the default, `auto`, uses it until a second thread records)
# against `--order tsc` (the TSC, no shared cache line), side by side in one run: the bare program, the program under the recorder alone
# ("preload", no conversion), and all of `fragsim record`, without and with --stacks, on the
# workloads of bench-record.sh (python: CPython 3.11, PYTHONMALLOC=malloc, a dict of 1M strings;
# cpp: tests/native_programs/threads_map.cpp, 4 threads, 3.2 M calls).
# Prints a markdown table of median wall and CPU times (RUNS=5 runs each, the columns taking
# turns run by run), ratios to bare. PYTHON=... picks the interpreter (default python3.11);
# WORKLOADS="cpp" runs one of them. Needs g++, bc, and a machine where --order tsc is allowed.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
PYTHON=${PYTHON:-python3.11}

for tool in bc g++; do
  command -v "$tool" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$tool"; }
done
[ -e /usr/lib/x86_64-linux-gnu/libunwind.so.8 ] || apt-get install -y -qq libunwind8
cargo build --release -q
fragsim=$PWD/target/release/fragsim
lib=$PWD/target/release/libfragsim_preload.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
: >"$work/notes"
g++ -O2 -pthread -o "$work/threads_map" tests/native_programs/threads_map.cpp
# The interpreter itself, not a wrapper script (pyenv's shims run several processes).
python=$("$PYTHON" -c 'import sys; print(sys.executable)')

source scripts/bench-common.sh

# One run into column $1 of the program under the recorder library with flags $2 alone (no
# conversion); its raw files are removed after.
preload_run() {
  local col=$1 flags=$2
  run "$col" env LD_PRELOAD="$lib" FRAGSIM_PRELOAD_DIR="$work/raw" FRAGSIM_PRELOAD_FLAGS="$flags" "${cmd[@]}"
  rm -f "$work"/raw/*
}

echo "Medians of $RUNS runs, the columns in turn run by run, seconds wall / CPU (ratio to bare). 'preload' is the"
echo "program under the recorder alone, 'record' all of \`fragsim record\` (run + conversion while it runs + trace)."
echo
echo "| workload | bare | preload | preload, tsc | preload, auto | record --order seq | record --order tsc | record (auto) | record --stacks --order seq | record --stacks --order tsc | record --stacks (auto) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for workload in ${WORKLOADS:-cpp python}; do
  workload_cmd "$workload"
  mkdir -p "$work/raw"
  rm -f "$work"/*.times
  for i in $(seq "$RUNS"); do
    run bare "${cmd[@]}"
    preload_run preload follow
    preload_run preload_t follow,tscorder
    preload_run preload_a "follow$(auto_order_flag)"
    run seq "$fragsim" record --order seq -o "$work/t.trace" -- "${cmd[@]}"
    run tsc "$fragsim" record --order tsc -o "$work/t.trace" -- "${cmd[@]}"
    # The converter's repairs (an order the allocator cannot have seen), if any.
    grep '^note:' "$work/stderr" | sed "s/^/$workload --order tsc: /" >>"$work/notes" || true
    run auto "$fragsim" record -o "$work/t.trace" -- "${cmd[@]}"
    grep '^note:' "$work/stderr" | sed "s/^/$workload --order auto: /" >>"$work/notes" || true
    run seq_s "$fragsim" record --stacks --order seq -o "$work/t.trace" -- "${cmd[@]}"
    run tsc_s "$fragsim" record --stacks --order tsc -o "$work/t.trace" -- "${cmd[@]}"
    grep '^note:' "$work/stderr" | sed "s/^/$workload --stacks --order tsc: /" >>"$work/notes" || true
    run auto_s "$fragsim" record --stacks -o "$work/t.trace" -- "${cmd[@]}"
    grep '^note:' "$work/stderr" | sed "s/^/$workload --stacks --order auto: /" >>"$work/notes" || true
  done
  read -r bare_w bare_c <<<"$(med bare)"
  echo "| $workload | $bare_w / $bare_c | $(cell "$(med preload)") | $(cell "$(med preload_t)") | $(cell "$(med preload_a)") | $(cell "$(med seq)") | $(cell "$(med tsc)") | $(cell "$(med auto)") | $(cell "$(med seq_s)") | $(cell "$(med tsc_s)") | $(cell "$(med auto_s)") |"
done
echo
if [ -s "$work/notes" ]; then cat "$work/notes"; else echo "No --order tsc or auto run needed a repair."; fi
