#!/usr/bin/env bash
# Re-records the committed traces (see README.md here). Needs valgrind, g++, python3.11, git,
# libunwind8 (for --stacks).
# Usage: data/traces/record.sh [FRAGSIM]   (default: target/release/fragsim), from the repo root.
set -euo pipefail
cd "$(dirname "$0")/../.."
fragsim=${1:-target/release/fragsim}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

PYTHONHASHSEED=0 PYTHONMALLOC=malloc "$fragsim" record --with valgrind -o data/traces/python-dict.trace -- \
  /usr/bin/python3.11 -c "d = {str(i): 'v' * (i % 50) for i in range(20000)}"

g++ -O2 -std=c++17 -o "$work/maps" data/traces/src/maps.cpp
"$fragsim" record --with valgrind -o data/traces/cpp-maps.trace -- "$work/maps" >/dev/null

"$fragsim" record --with valgrind -o data/traces/git-log.trace -- \
  git --no-pager log -p -n 40 69a8926 >/dev/null

seq 1 200000 | shuf --random-source=<(yes) >"$work/numbers.txt"
"$fragsim" record --with valgrind -o data/traces/sort.trace -- sort -n -S 1M "$work/numbers.txt" >/dev/null

# Native recordings (fragsim's LD_PRELOAD recorder: threads, times, thread exits, sites).
g++ -O2 -pthread -o "$work/threads_map" tests/native_programs/threads_map.cpp
"$fragsim" record --order seq --stacks -o data/traces/cpp-threads-map.trace -- "$work/threads_map" 2000 >/dev/null
gcc -O2 -pthread -o "$work/thread_pool" tests/native_programs/thread_pool.c
"$fragsim" record --order seq --stacks -o data/traces/c-thread-pool.trace -- "$work/thread_pool" 1500 >/dev/null
PYTHONHASHSEED=0 PYTHONMALLOC=malloc "$fragsim" record --order seq -o data/traces/python-threads.trace -- \
  /usr/bin/python3.11 -c "
import threading
def work(n):
    d = {}
    for i in range(1500):
        d[str(i * n)] = [n] * (i % 7)
ts = [threading.Thread(target=work, args=(n,)) for n in range(1, 5)]
for t in ts: t.start()
for t in ts: t.join()
"

# Benchmark trace (data/traces/bench/: not read by the report or the every-event tests).
PYTHONHASHSEED=0 "$fragsim" record -o data/traces/bench/python-buffers.trace -- \
  /usr/bin/python3.11 data/traces/src/python_buffers.py
