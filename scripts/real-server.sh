#!/usr/bin/env bash
# A real server against the process model: Debian's redis-server (linked with Debian's jemalloc
# 5.3.0, which it names in INFO) recorded by `fragsim record` under a fragmenting workload
# (scripts/real_server_workload.py), its own jemalloc statistics read at 8 moments
# (`INFO memory`), then the trace replayed with `fragsim replay --process --preset
# default` and the model's statistics compared with each reading at the event next to it.
#
#   scripts/real-server.sh [OUTDIR]        (default: a temporary folder, removed at the end)
#
# Environment: BG=yes turns the server's jemalloc background thread on (default no);
# DECAY=off runs the server and the model with decay off (MALLOC_CONF dirty/muzzy -1), DECAY=on
# (default) with jemalloc's defaults (dirty 10 s, muzzy 0) on the trace's clock;
# NO_ASLR=1 runs the server with address randomisation off (setarch -R; not needed for the
# comparison: the trace carries where jemalloc mapped its memory, and with it the radix tree's
# leaves, 2 MiB of metadata each on a 48-bit build);
# BENCH=no skips the 20-client redis-benchmark phase; N sets the workload's size (200000 SETs
# at first; the other phases in proportion). The comparison is also written to
# OUTDIR/comparison.csv (exact: 1 where allocated and active equal the server's).
# Needs redis-server and redis-tools (Debian), python3, and a release build of fragsim.
set -euo pipefail
cd "$(dirname "$0")/.."
BG=${BG:-no}
DECAY=${DECAY:-on}
BENCH=${BENCH:-yes}
N=${N:-200000}
fragsim=${FRAGSIM:-target/release/fragsim}
command -v redis-server >/dev/null || { echo "real-server: needs redis-server (apt-get install redis-server)" >&2; exit 2; }
[ -x "$fragsim" ] || { echo "real-server: build first: cargo build --release" >&2; exit 2; }

if [ $# -ge 1 ]; then out=$1; mkdir -p "$out"; keep=1; else out=$(mktemp -d); keep=0; fi
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  [ "$keep" = 1 ] || rm -rf "$out"
}
trap cleanup EXIT INT TERM

sock=$out/redis.sock
case $DECAY in
  off) conf=dirty_decay_ms:-1,muzzy_decay_ms:-1 ;;
  on) conf=dirty_decay_ms:10000,muzzy_decay_ms:0 ;;
  *) echo "real-server: DECAY must be on or off, not '$DECAY'" >&2; exit 2 ;;
esac
case $BG in yes|no) ;; *) echo "real-server: BG must be yes or no, not '$BG'" >&2; exit 2 ;; esac
# The server turns its background thread on by mallctl: the recording holds that write
# (`c background on`), and the model starts the threads there.
model_conf=$conf

norand=()
[ "${NO_ASLR:-0}" = 1 ] && setarch "$(uname -m)" -R true 2>/dev/null && norand=(setarch "$(uname -m)" -R)
MALLOC_CONF=$conf "${norand[@]}" "$fragsim" record -o "$out/redis.trace" -- \
  redis-server --port 0 --unixsocket "$sock" --save '' --appendonly no \
  --jemalloc-bg-thread "$BG" --dir "$out" --logfile "$out/redis.log" &
server_pid=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "real-server: the server did not start (see $out/redis.log)" >&2; exit 1; }
bench=bench; [ "$BENCH" = no ] && bench=nobench
python3 scripts/real_server_workload.py "$sock" "$bench" "$N" "$out/malloc-stats.txt" > "$out/readings.csv"
redis-cli -s "$sock" shutdown nosave >/dev/null 2>&1 || true
wait "$server_pid" || true
server_pid=

# The marker events: the first allocation (or realloc) of at least each marker's size
# (events count calls, exits and mallctl writes, `c` lines, as the model does).
"$fragsim" trace dump "$out/redis.trace" > "$out/redis.txt"
python3 - "$out" <<'EOF'
import csv, sys
out = sys.argv[1]
readings = list(csv.DictReader(open(f"{out}/readings.csv")))
marks = [int(r["marker_bytes"]) for r in readings]
found, event, k = {}, 0, 0
with open(f"{out}/redis.txt") as f:
    for line in f:
        op = line[:1]
        if op in "afrxc":
            event += 1
        if op in "ar" and k < len(marks):
            size = int(line.split()[2])
            if marks[k] <= size < marks[k] + 4096:
                found[k] = event
                k += 1
with open(f"{out}/markers.csv", "w") as w:
    w.write("reading,event\n")
    for i in range(len(marks)):
        w.write(f"{i},{found.get(i, '')}\n")
EOF

# The model, every event, through a FIFO: only the rows near a marker are kept. Debian's
# jemalloc is a 48-bit build on any machine (LG_VADDR is fixed where it is built), so the
# model takes that width, not this machine's.
mkfifo "$out/timeline.fifo"
"$fragsim" replay "$out/redis.trace" --process --preset default --malloc-conf "$model_conf" \
  --vaddr-bits 48 --every 1 --timeline "$out/timeline.fifo" > "$out/model-summary.md" &
replay_pid=$!
python3 - "$out" <<'EOF'
import csv, sys
out = sys.argv[1]
marks = {int(r["event"]): int(r["reading"]) for r in csv.DictReader(open(f"{out}/markers.csv")) if r["event"]}
window = 4000
keep = open(f"{out}/windows.csv", "w")
with open(f"{out}/timeline.fifo") as f:
    header = f.readline()
    keep.write("reading," + header)
    starts = sorted(marks)
    for line in f:
        ev = int(line.split(",", 1)[0])
        # A row may lie in two windows when two markers are close.
        for s in starts:
            if s <= ev < s + window:
                keep.write(f"{marks[s]},{line}")
EOF
wait $replay_pid

python3 - "$out" "$BG" "$DECAY" <<'EOF'
import csv, sys
out, bg, decay = sys.argv[1:4]
readings = list(csv.DictReader(open(f"{out}/readings.csv")))
rows = {}
for r in csv.DictReader(open(f"{out}/windows.csv")):
    rows.setdefault(int(r["reading"]), []).append(r)
comparison = open(f"{out}/comparison.csv", "w")
comparison.write("reading,event,exact,allocated_real,allocated_model,active_real,active_model,resident_real,resident_model\n")
print(f"## redis-server (jemalloc 5.3.0) vs the process model: background thread {bg}, decay {decay}")
print()
print("| reading | event | allocated real | allocated model | active real | active model | resident real | resident model | resident error |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in readings:
    i = int(r["reading"])
    cand = rows.get(i, [])
    # The event next to the reading: the first in the window where allocated and active both
    # equal the server's; else the one closest in allocated.
    exact = [m for m in cand if int(m["allocated_bytes"]) == int(r["allocated"]) and int(m["active_bytes"]) == int(r["active"])]
    m = exact[0] if exact else (min(cand, key=lambda m: abs(int(m["allocated_bytes"]) - int(r["allocated"]))) if cand else None)
    if m is None:
        print(f"| {i} | - | {r['allocated']} | - | {r['active']} | - | {r['resident']} | - | - |")
        continue
    res_m, res_r = float(m["resident_bytes"]), int(r["resident"])
    err = 100.0 * (res_m - res_r) / res_r
    tag = "" if exact else " (nearest)"
    comparison.write(f"{i},{m['event']},{int(bool(exact))},{r['allocated']},{m['allocated_bytes']},{r['active']},{m['active_bytes']},{res_r},{res_m:.0f}\n")
    print(f"| {i} | {m['event']}{tag} | {r['allocated']} | {m['allocated_bytes']} | {r['active']} | {m['active_bytes']} | {res_r} | {res_m:.0f} | {err:+.2f}% |")
EOF
