# The advise benchmark's workload (scripts/bench-advise.sh): four Python threads churning
# dicts of strings, a table of 4,000 slots each, about 10 M allocator calls under
# PYTHONMALLOC=malloc (every object through malloc). ROUNDS (argv[1]) scales it.
import random
import sys
import threading

def work(seed, rounds):
    rng = random.Random(seed)
    keep = {}
    for i in range(rounds):
        d = {f"k{j}": "v" * rng.randint(1, 300) for j in range(rng.randint(1, 12))}
        keep[rng.randrange(4000)] = d
        if i % 7 == 0:
            keep.pop(rng.randrange(4000), None)
rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 20700
threads = [threading.Thread(target=work, args=(s, rounds)) for s in range(4)]
for t in threads: t.start()
for t in threads: t.join()
