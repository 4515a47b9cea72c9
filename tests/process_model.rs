//! The process model's rules on small hand-built traces; golden values derived by hand from
//! jemalloc's source (cited per test) and, where noted, seen in live replays.

use fragsim::process::{Process, ProcessError, ProcessOptions};
use fragsim::sizeclass::Preset;
use fragsim::trace::{Call, Event, Record};

fn call(thread: u32, event: Event) -> Record {
    Record::Call(Call {
        event,
        thread,
        time_ns: None,
        site: None,
        reentrant: false,
        mallocx_flags: 0,
    })
}

fn process(conf: &str) -> Process {
    let options = ProcessOptions::parse(conf).unwrap();
    Process::new(Preset::V5_3_1.config(), options, 2).unwrap()
}

#[test]
fn first_small_malloc_allocates_the_cache_block_and_fills_half_a_bin() {
    // Block: 16 + 8 x (sum of ncached_max = 2 x nregs clamped to [20, 200] over the 36
    // small bins = 2,996, plus 5 large bins x 20) = 24,784 bytes, page-aligned ->
    // 28,672 (tcache_boot, cache_bin_info_compute_alloc, sz_sa2u). The 8-byte bin holds
    // 200 and fills 200 >> 1 = 100 from one 512-region slab (tcache_alloc_small_hard).
    // Live 5.3.1 and 5.3.0 showed stats.allocated 29,472 and stats.active 36,864 here.
    let mut p = process("experimental_tcache_gc:false");
    assert_eq!(p.cache_block_bytes(), 28_672);
    p.apply(&call(
        0,
        Event::Alloc {
            id: 0,
            size: 8,
            align: 0,
        },
    ))
    .unwrap();
    let s = p.snapshot();
    assert_eq!(s.allocated_bytes, 28_672 + 100 * 8);
    assert_eq!(s.active_bytes, 28_672 + 4096 + 4096);
    let a0 = &s.arenas[0];
    assert_eq!((a0.index, a0.tcache_bytes), (0, 99 * 8));
    assert_eq!((a0.bins[0].curregs, a0.bins[0].curslabs), (100, 1));
}

#[test]
fn ten_threads_on_eight_arenas_take_them_in_first_call_order() {
    // arena_choose_hard: main -> 0, threads 1..7 -> new arenas 1..7, then the first arena
    // with the fewest threads: 8 -> 0, 9 -> 1 (the design note measured this live).
    let mut p = process("experimental_tcache_gc:false");
    for t in 0..10 {
        p.apply(&call(
            t,
            Event::Alloc {
                id: t,
                size: 8,
                align: 0,
            },
        ))
        .unwrap();
    }
    let s = p.snapshot();
    let caches: Vec<(u32, u64)> = s
        .arenas
        .iter()
        .map(|a| (a.index, a.tcache_bytes / 792))
        .collect();
    assert_eq!(
        caches,
        vec![
            (0, 2),
            (1, 2),
            (2, 1),
            (3, 1),
            (4, 1),
            (5, 1),
            (6, 1),
            (7, 1)
        ]
    );
    // Ten cache blocks, all in arena 0 (tsd_tcache_data_init: arena_get(0)).
    assert_eq!(s.arenas[0].allocated_bytes, 10 * 28_672 + 2 * 800);
}

#[test]
fn a_thread_that_only_frees_gets_no_cache_and_no_arena() {
    // free/dallocx use tsd_fetch_min: the thread stays minimal, the object goes straight
    // back to its arena (seen live: a cached free would add 8 bytes of tcache_bytes).
    let mut p = process("experimental_tcache_gc:false");
    p.apply(&call(
        0,
        Event::Alloc {
            id: 0,
            size: 8,
            align: 0,
        },
    ))
    .unwrap();
    p.apply(&call(1, Event::Free { id: 0 })).unwrap();
    let s = p.snapshot();
    assert_eq!(s.arenas.len(), 1);
    assert_eq!(s.arenas[0].bins[0].curregs, 99);
    assert_eq!(s.arenas[0].tcache_bytes, 99 * 8);
    assert_eq!(s.allocated_bytes, 28_672 + 99 * 8);
}

/// Thread 0 allocates 300 objects of 64 bytes, thread 1 frees 129 of them, one at a time.
/// Returns `(arenas, arena 0's large bytes, tcache bytes)` after each of thread 1's frees.
fn first_frees(preset: Preset) -> Vec<(usize, u64, u64)> {
    let options = ProcessOptions::parse("experimental_tcache_gc:false").unwrap();
    let mut p = Process::new(preset.config(), options, 2).unwrap();
    for id in 0..300 {
        p.apply(&call(
            0,
            Event::Alloc {
                id,
                size: 64,
                align: 0,
            },
        ))
        .unwrap();
    }
    let small = |p: &Process| p.snapshot().arenas[0].bins[4].curregs * 64;
    let a0_small = small(&p);
    (0..129)
        .map(|id| {
            p.apply(&call(1, Event::Free { id })).unwrap();
            let s = p.snapshot();
            let tcache: u64 = s.arenas.iter().map(|a| a.tcache_bytes).sum();
            let large = s.arenas[0].allocated_bytes - small(&p);
            // Every free to the arena lowers arena 0's small bytes by 64.
            assert!(small(&p) <= a0_small);
            (s.arenas.len(), large, tcache)
        })
        .collect()
}

#[test]
fn a_thread_whose_first_calls_are_frees_starts_at_its_128th_in_5_3_1_only() {
    // tsd.c:tsd_fetch_slow (5.3.1): nfetched is 1 at the first free of a minimal thread and
    // the free that brings it to TSD_MIN_INIT_STATE_MAX_FETCHED = 128 runs tsd_data_init:
    // the cache block (28,672 bytes) from arena 0, a new arena bound, and that free cached
    // (64 bytes of tcache_bytes). Measured live (shared/design/jemalloc-internals-2.md §2.4):
    // 127 frees to the arena, then arena 0 large.allocated +28,672 and the 128th object
    // cached; 5.3.0 stays minimal. Thread 0's cache counts 64-byte objects of its own fill.
    let v531 = first_frees(Preset::V5_3_1);
    let (arenas, large, tcache) = v531[0];
    assert_eq!(arenas, 1);
    for (i, &(n, l, t)) in v531.iter().enumerate().take(127) {
        assert_eq!((n, l, t), (arenas, large, tcache), "free {}", i + 1);
    }
    assert_eq!(v531[127], (2, large + 28_672, tcache + 64));
    assert_eq!(v531[128], (2, large + 28_672, tcache + 128));
    let v530 = first_frees(Preset::V5_3_0);
    assert!(v530.iter().all(|&x| x == v530[0]), "{:?}", v530[128]);
    assert_eq!(v530[0].0, 1);
}

#[test]
fn thread_exit_flushes_the_cache_and_frees_its_block() {
    let mut p = process("experimental_tcache_gc:false");
    p.apply(&call(
        0,
        Event::Alloc {
            id: 0,
            size: 8,
            align: 0,
        },
    ))
    .unwrap();
    p.apply(&call(
        1,
        Event::Alloc {
            id: 1,
            size: 8,
            align: 0,
        },
    ))
    .unwrap();
    p.apply(&Record::ThreadExit {
        thread: 1,
        time_ns: None,
    })
    .unwrap();
    let s = p.snapshot();
    // Thread 1's arena 1 keeps its one live object; its 99 cached ones went back.
    let a1 = s.arenas.iter().find(|a| a.index == 1).unwrap();
    assert_eq!((a1.tcache_bytes, a1.bins[0].curregs), (0, 1));
    assert_eq!(s.arenas[0].allocated_bytes, 28_672 + 800);
    let err = p
        .apply(&call(
            1,
            Event::Alloc {
                id: 2,
                size: 8,
                align: 0,
            },
        ))
        .unwrap_err();
    assert!(
        matches!(err, ProcessError::AfterExit { thread: 1, .. }),
        "{err}"
    );
}

#[test]
fn the_clock_driven_gc_of_5_3_1_needs_the_trace_times() {
    // 5.3.1's default cache GC reads a 10 ms clock: without times the model refuses it rather
    // than guess; 5.3.0 and the deterministic GC need none.
    let mut p = Process::new(Preset::V5_3_1.config(), ProcessOptions::default(), 2).unwrap();
    let alloc = call(
        0,
        Event::Alloc {
            id: 0,
            size: 8,
            align: 0,
        },
    );
    assert_eq!(p.apply(&alloc), Err(ProcessError::ClockGc { event: 1 }));
    let mut p = Process::new(Preset::V5_3_0.config(), ProcessOptions::default(), 2).unwrap();
    assert!(p.apply(&alloc).is_ok());
}

fn at_ms(ms: u64, event: Event) -> Record {
    Record::Call(Call {
        event,
        thread: 0,
        time_ns: Some(ms * 1_000_000),
        site: None,
        reentrant: false,
        mallocx_flags: 0,
    })
}

fn alloc(id: u32, size: u64) -> Event {
    Event::Alloc { id, size, align: 0 }
}

/// The 8-byte bin's cached bytes and its regions in use (cached or live) in arena 0.
fn bin0(p: &Process) -> (u64, u64) {
    let a0 = &p.snapshot().arenas[0];
    (a0.tcache_bytes, a0.bins[0].curregs)
}

#[test]
fn the_clock_driven_gc_fills_in_bursts_and_flushes_only_after_10_ms() {
    // jemalloc 5.3.1 defaults (experimental_tcache_gc:true), one thread, the 8-byte bin
    // (512 regions a slab, ncached_max 200), worked by hand from tcache.c / arena.c of
    // tikv-jemalloc-sys 0.7.1+5.3.1:
    let run = |second_gc_ms: u64| {
        let mut p = Process::new(Preset::V5_3_1.config(), ProcessOptions::default(), 2).unwrap();
        // Fill (tcache_alloc_small_hard, tcache.c 594-602): nfill = 200 >> (base 1 -
        // offset 0) = 100, nfill_min = 100/2 + 1 = 51. arena_ptr_array_fill_small (arena.c
        // 922-925): the fresh slab's 512 free exceed nfill_max, so it takes nfill_min = 51.
        // One is returned: 50 cached. The burst offset stays 0 (offset + 1 < base fails,
        // tcache.c 152-157).
        p.apply(&at_ms(0, alloc(0, 8))).unwrap();
        assert_eq!(bin0(&p), (50 * 8, 51));
        // 64 KiB (uncached: tcache_max is 32 KiB) brings thread.allocated to 65,544: a GC
        // event, and the first passes the gate (last_gc_time starts at zero, tcache.c 814,
        // 534-543). Bin 0: low water 0 and refilled, base stays 1 (tcache.c 176-181);
        // nflush = 0, every object is in the current slab, so nremote = 0: nothing flushed
        // (tcache.c 394, 432-465). Low water becomes 50 (tcache_try_gc_bin, 508).
        p.apply(&at_ms(0, alloc(1, 65536))).unwrap();
        assert_eq!(bin0(&p), (50 * 8, 51));
        // Freeing it 1 ms later is a GC event of thread.deallocated: 1 ms < 10 ms, skipped
        // (tcache.c 538-541).
        p.apply(&at_ms(1, Event::Free { id: 1 })).unwrap();
        assert_eq!(bin0(&p), (50 * 8, 51));
        // Another 64 KiB: a GC event at `second_gc_ms`.
        p.apply(&at_ms(second_gc_ms, alloc(2, 65536))).unwrap();
        p
    };
    // At 9 ms the gate still holds: nothing changes.
    assert_eq!(bin0(&run(9)), (50 * 8, 51));
    // At 20 ms it passes. Bin 0's low water is 50: base 1 -> 2 (200 >> 1 > 1, tcache.c
    // 182-188), nflush = 50 - 50/4 = 38, none remote (one slab), so the bottom 38 go back
    // (tcache.c 394, 469): 12 cached, 13 regions in use.
    let mut p = run(20);
    assert_eq!(bin0(&p), (12 * 8, 13));
    // 12 cached allocations, then a fill: nfill = 200 >> (2 - 0) = 50, nfill_min = 26; the
    // slab's 499 free exceed 50, so 26 (arena.c 922-925); 25 cached. The offset grows to 1
    // (0 + 1 < 2).
    for id in 3..16 {
        p.apply(&at_ms(20, alloc(id, 8))).unwrap();
    }
    assert_eq!(bin0(&p), (25 * 8, 13 + 26));
    // 25 more, then the burst fill: nfill = 200 >> (2 - 1) = 100, nfill_min = 51.
    for id in 16..42 {
        p.apply(&at_ms(20, alloc(id, 8))).unwrap();
    }
    assert_eq!(bin0(&p), (50 * 8, 13 + 26 + 51));
}
