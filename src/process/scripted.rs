//! Scripted threaded traces for the process model's live checks, each aimed at one rule:
//!
//! - [`super::TraceKind::FirstFrees`]: threads whose first calls are frees of another thread's
//!   objects (a pool worker freeing what it was handed). Such a thread stays minimal (no
//!   cache, no arena) in 5.3.0 until it allocates; 5.3.1 turns it nominal at its 128th free
//!   (`tsd.c:tsd_fetch_slow`). Runs of 1 to 300 first frees, small and large objects, threads
//!   that then only free, that then allocate, and that exit.
//! - [`super::TraceKind::LargeReallocs`]: blocks grown and shrunk through realloc page by page over
//!   every large class from 16 KiB to 64 KiB (the default `tcache_max` is 32 KiB), across
//!   small and large, and by half again each time (8,192 -> 41,472 bytes), beside other
//!   blocks that come and go, so that in-place growth and moves (the old block into the
//!   cache, or not) both happen.

use super::generate::ThreadedSpec;
use crate::random::SplitMix as Rng;
use crate::trace::{Call, Event, IdPool, ObjectId, Record};

/// Lengths of the first-free runs, thread by thread: around 5.3.1's 128.
const FIRST_FREE_RUNS: [u64; 8] = [1, 60, 127, 128, 129, 200, 300, 128];

/// Appends calls to `out`, tracking ids.
struct Script {
    out: Vec<Record>,
    ids: IdPool,
    rng: Rng,
}

impl Script {
    fn new(seed: u64) -> Script {
        Script {
            out: Vec::new(),
            ids: IdPool::new(),
            rng: Rng(seed),
        }
    }

    fn call(&mut self, thread: u32, event: Event) {
        self.out.push(Record::Call(Call {
            event,
            thread,
            time_ns: None,
            site: None,
            reentrant: false,
            mallocx_flags: 0,
        }));
    }

    fn alloc(&mut self, thread: u32, size: u64) -> ObjectId {
        let id = self.ids.take().expect("fewer than 2^32 live objects");
        self.call(thread, Event::Alloc { id, size, align: 0 });
        id
    }

    fn free(&mut self, thread: u32, id: ObjectId) {
        self.call(thread, Event::Free { id });
        self.ids.give_back(id);
    }

    fn exit(&mut self, thread: u32) {
        self.out.push(Record::ThreadExit {
            thread,
            time_ns: None,
        });
    }

    /// Small (1 B - 14 KiB), or with `large_share` a large size up to 64 KiB (cached and
    /// uncached large classes).
    fn size(&mut self, large_share: f64) -> u64 {
        if self.rng.chance(large_share) {
            self.rng.log_uniform((14 << 10) + 1, 64 << 10)
        } else {
            self.rng.log_uniform(1, 14 << 10)
        }
    }
}

/// [`super::TraceKind::FirstFrees`]: thread 0 allocates; thread k (k >= 1) begins with a run of
/// `FIRST_FREE_RUNS[(k - 1) % 8]` frees of thread 0's objects, a chunk of up to 50 at a time
/// with thread 0 allocating in between. Odd threads then only free (what is left of their
/// run); even ones go on with allocations and frees of their own. With `exits`, every thread
/// but 0 exits after its part.
pub(crate) fn first_frees_trace(spec: &ThreadedSpec) -> Vec<Record> {
    let mut s = Script::new(spec.seed);
    let mut pool: Vec<ObjectId> = Vec::new();
    for _ in 0..spec.target_live {
        let size = s.size(spec.large_share);
        pool.push(s.alloc(0, size));
    }
    for k in 1..spec.threads.max(1) {
        let run = FIRST_FREE_RUNS[(k as usize - 1) % FIRST_FREE_RUNS.len()];
        let mut freed = 0;
        while freed < run {
            let chunk = (run - freed).min(50);
            // Thread 0 keeps the pool large enough, then thread k frees a chunk of it.
            while (pool.len() as u64) < chunk + 20 {
                let size = s.size(spec.large_share);
                pool.push(s.alloc(0, size));
            }
            for _ in 0..chunk {
                let i = s.rng.below(pool.len() as u64) as usize;
                let id = pool.swap_remove(i);
                s.free(k, id);
            }
            freed += chunk;
            for _ in 0..s.rng.below(6) {
                let size = s.size(spec.large_share);
                pool.push(s.alloc(0, size));
            }
        }
        if k % 2 == 0 {
            own_calls(&mut s, k, spec, &mut pool);
        }
        if spec.exits {
            s.exit(k);
        }
    }
    s.out
}

/// About 150 calls of thread `k` after its first frees: its own allocations and frees, and
/// some frees of thread 0's objects.
fn own_calls(s: &mut Script, k: u32, spec: &ThreadedSpec, pool: &mut Vec<ObjectId>) {
    let mut own: Vec<ObjectId> = Vec::new();
    for _ in 0..150 {
        let r = s.rng.unit();
        if r < 0.5 || own.is_empty() {
            let size = s.size(spec.large_share);
            own.push(s.alloc(k, size));
        } else if r < 0.85 || pool.is_empty() {
            let i = s.rng.below(own.len() as u64) as usize;
            let id = own.swap_remove(i);
            s.free(k, id);
        } else {
            let i = s.rng.below(pool.len() as u64) as usize;
            let id = pool.swap_remove(i);
            s.free(k, id);
        }
    }
    pool.extend(own);
}

/// One block's walk through realloc: 8 KiB (small), up page by page from 16 KiB to 64 KiB,
/// down again to 16 KiB, to 12 KiB (small), then by half again each step from 8,192 to
/// 41,472 bytes and back to 20 KiB. Each large step asks for up to 2 KiB less than the page
/// multiple, which is the same large class in 5.3.0 and the same pages in 5.3.1.
fn walk(rng: &mut Rng) -> Vec<u64> {
    let page = 4096u64;
    let mut sizes = vec![8192];
    let up = (4..=16).map(|p| p * page);
    let down = (4..16).rev().map(|p| p * page);
    for s in up.chain(down) {
        sizes.push(s - rng.below(2048));
    }
    sizes.extend([12288, 8192, 12288, 18432, 27648, 41472, 27648, 20480]);
    sizes
}

/// [`super::TraceKind::LargeReallocs`]: each of `threads` threads owns 3 blocks walking through
/// [`walk`]. A share `realloc_share` of the calls moves a random block a step on (one step
/// in ten on another thread than its owner: the old block goes into that thread's cache);
/// the others are unrelated allocations and frees (sizes by `large_share`, about
/// `target_live` live) that change the blocks' neighbours.
pub(crate) fn large_reallocs_trace(spec: &ThreadedSpec) -> Vec<Record> {
    let mut s = Script::new(spec.seed);
    let threads = spec.threads.max(1);
    // Per block: its owner, id and remaining sizes (the first is its allocation).
    let mut blocks: Vec<(u32, Option<ObjectId>, std::vec::IntoIter<u64>)> = (0..threads * 3)
        .map(|b| (b % threads, None, walk(&mut s.rng).into_iter()))
        .collect();
    // Threads appear in order: each block's first size is allocated up front.
    for block in &mut blocks {
        let size = block.2.next().expect("a walk has sizes");
        block.1 = Some(s.alloc(block.0, size));
    }
    let mut others: Vec<(u32, ObjectId)> = Vec::new();
    while !blocks.is_empty() {
        let other = s.rng.chance(1.0 - spec.realloc_share);
        if other {
            let t = s.rng.below(u64::from(threads)) as u32;
            let fill = others.len() as f64 / spec.target_live.max(1) as f64;
            if others.is_empty() || s.rng.unit() > fill * 0.5 {
                let size = s.size(spec.large_share);
                others.push((t, s.alloc(t, size)));
            } else {
                let i = s.rng.below(others.len() as u64) as usize;
                let (_, id) = others.swap_remove(i);
                s.free(t, id);
            }
            continue;
        }
        let b = s.rng.below(blocks.len() as u64) as usize;
        let stranger = s.rng.chance(0.1);
        let other_thread = s.rng.below(u64::from(threads)) as u32;
        let (owner, id, sizes) = &mut blocks[b];
        let t = if stranger { other_thread } else { *owner };
        let id = id.expect("allocated up front");
        match sizes.next() {
            Some(size) => s.call(t, Event::Realloc { id, size }),
            None => {
                s.free(t, id);
                blocks.swap_remove(b);
            }
        }
    }
    s.out
}
