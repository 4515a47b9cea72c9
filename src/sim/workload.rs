//! Seeded random traces: small and large allocations up to tens of MiB, frees in random
//! order, reallocs that grow and shrink, some aligned requests. Ids are recycled lowest
//! first, as in recorded traces.

use crate::trace::{Event, IdPool, ObjectId};
use serde::Serialize;

/// What a random trace looks like.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WorkloadSpec {
    pub seed: u64,
    pub events: u64,
    /// Live objects hover around this many (allocations and frees balance there).
    pub target_live: u64,
    /// Share of allocations that are large (above the small classes), 0..=1.
    pub large_share: f64,
    /// The largest request, bytes.
    pub max_size: u64,
    /// Share of events that are reallocs.
    pub realloc_share: f64,
    /// Share of allocations with an alignment (16 bytes to one 4 KiB page).
    pub aligned_share: f64,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        WorkloadSpec {
            seed: 1,
            events: 20_000,
            target_live: 2_000,
            large_share: 0.05,
            max_size: 24 << 20,
            realloc_share: 0.1,
            aligned_share: 0.05,
        }
    }
}

use crate::random::SplitMix as Rng;

/// The trace `spec` describes (deterministic in `spec.seed`). Sizes above 14 KiB are large
/// in every default build.
pub fn random_trace(spec: &WorkloadSpec) -> Vec<Event> {
    let mut rng = Rng(spec.seed);
    let mut events = Vec::with_capacity(spec.events as usize);
    let mut live: Vec<ObjectId> = Vec::new();
    let mut ids = IdPool::new();
    let small_max = 14 << 10;
    let size_of = |rng: &mut Rng| {
        if rng.chance(spec.large_share) {
            rng.log_uniform(small_max + 1, spec.max_size.max(small_max + 2))
        } else {
            rng.log_uniform(1, small_max.min(spec.max_size))
        }
    };
    while (events.len() as u64) < spec.events {
        let fill = live.len() as f64 / spec.target_live.max(1) as f64;
        let roll = rng.unit();
        if !live.is_empty() && rng.chance(spec.realloc_share) {
            let id = live[rng.below(live.len() as u64) as usize];
            events.push(Event::Realloc {
                id,
                size: size_of(&mut rng),
            });
        } else if live.is_empty() || roll > fill * 0.5 {
            let id = ids.take().expect("fewer than 2^32 live objects");
            let align = if rng.chance(spec.aligned_share) {
                16 << rng.below(9)
            } else {
                0
            };
            events.push(Event::Alloc {
                id,
                size: size_of(&mut rng),
                align,
            });
            live.push(id);
        } else {
            let i = rng.below(live.len() as u64) as usize;
            let id = live.swap_remove(i);
            ids.give_back(id);
            events.push(Event::Free { id });
        }
    }
    events
}
