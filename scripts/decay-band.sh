#!/bin/sh
# The live bands the report's decay section compares the model with (issue 25), measured once
# and committed in data/decay/: 5 live runs per trace on the trace's clock (10 for idle-10),
# each file naming the command and the machine. About 2 minutes (the runs sleep to each
# event's time). Rerun only to re-measure; `fragsim report` then redraws the section.
#   scripts/decay-band.sh [path/to/fragsim]
set -eu
F=${1:-target/release/fragsim}
OUT=data/decay
mkdir -p "$OUT"
band() { # name trace conf scale runs
    "$F" replay "data/traces/$2.trace" --process --malloc-conf "$3" --time-scale "$4" \
        --live --honour-clock --runs "$5" --save-band "$OUT/$1.csv" --format csv >/dev/null
    echo "$OUT/$1.csv"
}
band cpp-threads-map cpp-threads-map 'dirty_decay_ms:200,muzzy_decay_ms:0' 10 5
band python-threads python-threads 'dirty_decay_ms:200,muzzy_decay_ms:0' 5 5
band c-thread-pool c-thread-pool 'dirty_decay_ms:200,muzzy_decay_ms:0' 10 5
band bursty decay/bursty 'dirty_decay_ms:500,muzzy_decay_ms:0' 1 5
band bursty-muzzy decay/bursty 'dirty_decay_ms:300,muzzy_decay_ms:300' 1 5
band idle decay/idle 'dirty_decay_ms:500,muzzy_decay_ms:0' 1 5
band idle-10 decay/idle 'dirty_decay_ms:500,muzzy_decay_ms:0' 1 10
