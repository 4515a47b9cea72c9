//! Properties of the model on arbitrary (also nonsensical) traces.

use fragsim::sim::ArenaModel;
use fragsim::sizeclass::AllocatorConfig;
use fragsim::trace::Event;
use proptest::prelude::*;

fn event() -> impl Strategy<Value = Event> {
    let size = prop_oneof![1u64..20_000, 0u64..(64 << 20), any::<u64>()];
    let align = prop_oneof![Just(0u64), (0u32..20).prop_map(|s| 1u64 << s), any::<u64>()];
    prop_oneof![
        (0u32..40, size.clone(), align).prop_map(|(id, size, align)| Event::Alloc {
            id,
            size,
            align
        }),
        (0u32..40).prop_map(|id| Event::Free { id }),
        (0u32..40, size).prop_map(|(id, size)| Event::Realloc { id, size }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Never panics; errors leave the totals consistent; freeing everything live returns
    /// to zero allocated and active bytes.
    #[test]
    fn any_trace_is_applied_or_rejected(events in proptest::collection::vec(event(), 0..300), dev in any::<bool>()) {
        let config = if dev { AllocatorConfig::preset("dev").unwrap() } else { AllocatorConfig::default() };
        let mut arena = ArenaModel::new(config).unwrap();
        let mut live = std::collections::BTreeSet::new();
        for e in events {
            if arena.apply(e).is_ok() {
                match e {
                    Event::Alloc { id, .. } => { live.insert(id); }
                    Event::Free { id } => { live.remove(&id); }
                    Event::Realloc { .. } => {}
                }
            }
            prop_assert_eq!(arena.stats().live_objects, live.len() as u64);
            prop_assert!(arena.stats().active_bytes >= arena.stats().allocated_bytes);
        }
        for id in live {
            arena.apply(Event::Free { id }).unwrap();
        }
        prop_assert_eq!(arena.stats().allocated_bytes, 0);
        prop_assert_eq!(arena.stats().active_bytes, 0);
        prop_assert_eq!(arena.stats().requested_bytes, 0);
        prop_assert!(arena.bins().iter().all(|b| b.curregs == 0 && b.curslabs == 0 && b.nonfull_slabs == 0));
    }
}
