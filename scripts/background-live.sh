#!/bin/sh
# Background purging threads (issue 40, section 4): the process model with
# background_thread:true against live jemalloc with its threads on, on the trace's clock:
# 5 live runs and 5 model seeds per trace; tables and checkpoint CSVs go to
# reports/timing/ (measured, not committed). About 1 minute: the live runs sleep to each
# event's time.
#   scripts/background-live.sh [path/to/fragsim]
set -eu
F=${1:-target/release/fragsim}
OUT=reports/timing
mkdir -p "$OUT"
run() { # name trace conf scale
    "$F" replay "data/traces/$2.trace" --process --malloc-conf "$3,background_thread:true" \
        --time-scale "$4" --live --honour-clock --runs 5 \
        --timeline "$OUT/background-$1.csv" --out "$OUT/background-$1.md"
    echo "$OUT/background-$1.md"
}
run idle decay/idle 'dirty_decay_ms:500,muzzy_decay_ms:0' 1
run bursty decay/bursty 'dirty_decay_ms:500,muzzy_decay_ms:0' 1
run bursty-muzzy decay/bursty 'dirty_decay_ms:300,muzzy_decay_ms:300' 1
run cpp-threads-map cpp-threads-map 'dirty_decay_ms:200,muzzy_decay_ms:0' 10
run python-threads python-threads 'dirty_decay_ms:200,muzzy_decay_ms:0' 5
run c-thread-pool c-thread-pool 'dirty_decay_ms:200,muzzy_decay_ms:0' 10
