#!/usr/bin/env bash
# Re-records the committed traces (see README.md here). Needs valgrind, g++, python3.11, git.
# Usage: data/traces/record.sh [FRAGSIM]   (default: target/release/fragsim), from the repo root.
set -euo pipefail
cd "$(dirname "$0")/../.."
fragsim=${1:-target/release/fragsim}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

PYTHONHASHSEED=0 PYTHONMALLOC=malloc "$fragsim" record -o data/traces/python-dict.trace -- \
  /usr/bin/python3.11 -c "d = {str(i): 'v' * (i % 50) for i in range(20000)}"

g++ -O2 -std=c++17 -o "$work/maps" data/traces/src/maps.cpp
"$fragsim" record -o data/traces/cpp-maps.trace -- "$work/maps" >/dev/null

"$fragsim" record -o data/traces/git-log.trace -- \
  git --no-pager log -p -n 40 69a8926 >/dev/null

seq 1 200000 | shuf --random-source=<(yes) >"$work/numbers.txt"
"$fragsim" record -o data/traces/sort.trace -- sort -n -S 1M "$work/numbers.txt" >/dev/null
