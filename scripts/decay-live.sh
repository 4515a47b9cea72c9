#!/bin/sh
# The decay model against live jemalloc on the trace's clock (issue 25): 5 live runs and 5
# model seeds per trace; tables, checkpoint CSVs and charts go to reports/timing/ (measured,
# not committed). About 1 minute: the live runs sleep to each event's time.
#   scripts/decay-live.sh [path/to/fragsim]
set -eu
F=${1:-target/release/fragsim}
OUT=reports/timing
mkdir -p "$OUT"
run() { # name trace conf scale
    "$F" replay "data/traces/$2.trace" --process --malloc-conf "$3" --time-scale "$4" \
        --live --honour-clock --runs 5 \
        --timeline "$OUT/decay-$1.csv" --chart "$OUT/decay-$1.png" --out "$OUT/decay-$1.md"
    echo "$OUT/decay-$1.md"
}
run cpp-threads-map cpp-threads-map 'dirty_decay_ms:200,muzzy_decay_ms:0' 10
run python-threads python-threads 'dirty_decay_ms:200,muzzy_decay_ms:0' 5
run c-thread-pool c-thread-pool 'dirty_decay_ms:200,muzzy_decay_ms:0' 10
run bursty decay/bursty 'dirty_decay_ms:500,muzzy_decay_ms:0' 1
run bursty-muzzy decay/bursty 'dirty_decay_ms:300,muzzy_decay_ms:300' 1
run idle decay/idle 'dirty_decay_ms:500,muzzy_decay_ms:0' 1
"$F" replay data/traces/decay/idle.trace --process --malloc-conf 'dirty_decay_ms:500,muzzy_decay_ms:0' \
    --live --honour-clock --runs 10 --timeline "$OUT/decay-idle-10.csv" \
    --chart "$OUT/decay-idle-10.png" --out "$OUT/decay-idle-10.md"
