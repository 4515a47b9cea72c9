//! The one-arena model's event loop alone, for profiling (`valgrind --tool=callgrind
//! --toggle-collect='*apply_all*' target/release/examples/model_loop TRACE [ROUNDS]`): the
//! trace is read into memory first, as `cargo bench --bench replay` does, so the counts are
//! the model's only. `model_loop TRACE ROUNDS live` runs the same events through a live
//! private jemalloc arena instead (the bench's `live`), for the instruction ratio of the two.

use fragsim::check::LiveArena;
use fragsim::sim::ArenaModel;
use fragsim::sizeclass::AllocatorConfig;
use fragsim::trace::Event;

#[inline(never)]
fn apply_all(config: AllocatorConfig, events: &[Event]) -> u64 {
    let mut arena = ArenaModel::new(config).expect("the linked build");
    for &e in events {
        arena.apply(e).expect("a consistent trace");
    }
    arena.stats().active_bytes
}

#[inline(never)]
fn apply_all_live(events: &[Event]) {
    let mut arena = LiveArena::new().expect("a private arena");
    for &e in events {
        arena.apply(e).expect("a consistent trace");
    }
}

fragsim::use_jemalloc!();

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: model_loop TRACE [ROUNDS]");
    let rounds: u32 = args.next().map_or(Ok(1), |r| r.parse())?;
    let events = fragsim::trace::open(path.as_ref())?
        .events()
        .collect::<Result<Vec<_>, _>>()?;
    let config = fragsim::live::Api::linked().config()?;
    let live = args.next().is_some_and(|a| a == "live");
    let mut sum = 0;
    for _ in 0..rounds {
        if live {
            apply_all_live(&events);
        } else {
            sum += apply_all(config, &events);
        }
    }
    println!("{} events x {rounds}: {sum}", events.len());
    Ok(())
}
