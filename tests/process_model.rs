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
fn the_clock_driven_gc_of_5_3_1_is_refused_not_guessed() {
    let err = Process::new(Preset::V5_3_1.config(), ProcessOptions::default(), 2).err();
    assert_eq!(err, Some(ProcessError::ClockGc));
    assert!(Process::new(Preset::Default.config(), ProcessOptions::default(), 2).is_ok());
}
