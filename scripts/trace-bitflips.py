#!/usr/bin/env python3
# Issue 39 §6: `scripts/trace-bitflips.py FRAGSIM TRACE SEED`.
# The experiment: 20 single-bit flips at seeded random offsets of a committed trace,
# each read by `fragsim trace stats`; classify: caught (exit 2), changed summary (exit 0, other
# stdout), invisible (exit 0, same stdout).
import os, random, subprocess, sys, tempfile
binary, trace, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
good = open(trace, 'rb').read()
ref = subprocess.run([binary, 'trace', 'stats', trace], capture_output=True).stdout
rng = random.Random(seed)
flip_path = os.path.join(tempfile.mkdtemp(), 'flip.trace')
caught = changed = same = 0
for _ in range(20):
    off, bit = rng.randrange(len(good)), rng.randrange(8)
    b = bytearray(good); b[off] ^= 1 << bit
    open(flip_path, 'wb').write(b)
    r = subprocess.run([binary, 'trace', 'stats', flip_path], capture_output=True)
    if r.returncode != 0:
        caught += 1
        lines = r.stderr.decode().strip().splitlines()
        print(f'  byte {off} bit {bit}: exit {r.returncode}: {lines[0][:150]}' + (f' (+{len(lines)-1} lines)' if len(lines) > 1 else ''))
    elif r.stdout == ref: same += 1; print(f'  byte {off} bit {bit}: exit 0, same summary')
    else: changed += 1; print(f'  byte {off} bit {bit}: exit 0, DIFFERENT summary')
os.remove(flip_path); os.rmdir(os.path.dirname(flip_path))
print(f'{trace}: caught {caught}, different summary {changed}, nothing visible {same}')
