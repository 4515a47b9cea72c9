//! Charging one event's active memory: every live object, cached object and cache block is
//! looked up in its arena's extent (slab or large block), each slab's free bytes are split
//! among the holders of its used regions, and the result is checked against the model's
//! active bytes.
//!
//! Remainders: a slab's free bytes `E` split among holders holding `n_k` of its `U` used
//! regions give each `floor(E * n_k / U)`; the `r < number of holders` bytes left over go one
//! each to the holders with the largest remainders `E * n_k mod U` (ties: more regions held,
//! then the smaller [`Charge`]). So every slab's bytes are charged exactly, no holder gets
//! more than one byte above its exact share, and the result does not depend on order.

use super::{BlameError, Charge, Line};
use crate::process::{HeldBlock, Process};
use crate::sim::ExtentView;
use std::collections::{BTreeMap, HashMap};

/// One slab's holders, by charge: regions held.
struct SlabHolders {
    size: u64,
    nregs: u32,
    nfree: u32,
    slab_size: u64,
    held: BTreeMap<Charge, u32>,
}

struct Ledger<'a> {
    process: &'a Process,
    event: u64,
    lines: BTreeMap<Charge, Line>,
    slabs: HashMap<(u32, u32), SlabHolders>,
}

impl Ledger<'_> {
    fn inconsistent(&self, what: String) -> BlameError {
        BlameError::Inconsistent {
            event: self.event,
            what,
        }
    }

    fn view(&self, arena: u32, extent: u32) -> Result<ExtentView, BlameError> {
        self.process
            .arena_at(arena)
            .and_then(|a| a.extent_view(extent))
            .ok_or_else(|| {
                self.inconsistent(format!("arena {arena} extent {extent} is not active"))
            })
    }

    /// One holder of one region or block; returns its usable size.
    fn hold(&mut self, key: Charge, arena: u32, extent: u32) -> Result<u64, BlameError> {
        let view = self.view(arena, extent)?;
        self.lines.entry(key).or_default().objects += 1;
        match view {
            ExtentView::Slab {
                size,
                nregs,
                nfree,
                slab_size,
                ..
            } => {
                let slab = self.slabs.entry((arena, extent)).or_insert(SlabHolders {
                    size,
                    nregs,
                    nfree,
                    slab_size,
                    held: BTreeMap::new(),
                });
                *slab.held.entry(key).or_default() += 1;
                Ok(size)
            }
            ExtentView::Large { bytes, pad } => {
                let p = self.lines.entry(Charge::LargePadding).or_default();
                p.objects += 1;
                p.held_bytes += pad;
                Ok(bytes - pad)
            }
        }
    }

    fn hold_blocks(&mut self, key: Charge, blocks: &[HeldBlock]) -> Result<(), BlameError> {
        for b in blocks {
            let usable = self.hold(key, b.arena, b.extent)?;
            self.lines.entry(key).or_default().held_bytes += usable;
        }
        Ok(())
    }

    /// Splits every slab's free bytes among its holders; charges regions no holder
    /// accounts for to [`Charge::Unattributed`].
    fn split_slabs(&mut self) -> Result<(), BlameError> {
        let slabs = std::mem::take(&mut self.slabs);
        for ((arena, extent), mut slab) in slabs {
            let used = slab.nregs - slab.nfree;
            let holders: u32 = slab.held.values().sum();
            if holders > used {
                return Err(self.inconsistent(format!(
                    "arena {arena} slab {extent}: {holders} holders of {used} used regions"
                )));
            }
            if holders < used {
                let missing = used - holders;
                *slab.held.entry(Charge::Unattributed).or_default() += missing;
                let u = self.lines.entry(Charge::Unattributed).or_default();
                u.held_bytes += u64::from(missing) * slab.size;
            }
            let empty = slab.slab_size - u64::from(used) * slab.size;
            for (key, share) in split(empty, &slab.held) {
                self.lines.entry(key).or_default().empty_region_bytes += share;
            }
            if slab.held.len() == 1 {
                let key = *slab.held.keys().next().expect("one holder");
                self.lines.entry(key).or_default().pinned_bytes += slab.slab_size;
            }
        }
        Ok(())
    }
}

/// `empty` bytes split by regions held, remainders by the largest remainder (module docs).
fn split(empty: u64, held: &BTreeMap<Charge, u32>) -> Vec<(Charge, u64)> {
    let used: u64 = held.values().map(|&n| u64::from(n)).sum();
    if used == 0 {
        return Vec::new();
    }
    let mut shares: Vec<(Charge, u64, u64, u32)> = held
        .iter()
        .map(|(&k, &n)| {
            let exact = u128::from(empty) * u128::from(n);
            let (q, r) = (exact / u128::from(used), exact % u128::from(used));
            (k, q as u64, r as u64, n)
        })
        .collect();
    let given: u64 = shares.iter().map(|s| s.1).sum();
    let mut left = empty - given;
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| {
        let (sa, sb) = (&shares[a], &shares[b]);
        sb.2.cmp(&sa.2).then(sb.3.cmp(&sa.3)).then(sa.0.cmp(&sb.0))
    });
    for i in order {
        if left == 0 {
            break;
        }
        shares[i].1 += 1;
        left -= 1;
    }
    shares.into_iter().map(|(k, q, _, _)| (k, q)).collect()
}

/// Charges the model's active memory now; `key_of(id, usable)` names a live object's line.
pub(super) fn charge(
    process: &Process,
    key_of: impl Fn(u32, u64) -> Charge,
) -> Result<Vec<(Charge, Line)>, BlameError> {
    let mut ledger = Ledger {
        process,
        event: process.stats().events,
        lines: BTreeMap::new(),
        slabs: HashMap::new(),
    };
    for o in process.live_objects() {
        let key = key_of(o.id, o.usize);
        let usable = ledger.hold(key, o.arena, o.extent)?;
        if usable < o.request {
            return Err(ledger.inconsistent(format!(
                "object {} asked {} bytes and holds {usable}",
                o.id, o.request
            )));
        }
        let line = ledger.lines.entry(key).or_default();
        line.requested_bytes += o.request;
        line.rounding_bytes += usable - o.request;
    }
    ledger.hold_blocks(Charge::ThreadCaches, &process.cached_blocks())?;
    ledger.hold_blocks(Charge::CacheBlocks, &process.cache_blocks())?;
    ledger.split_slabs()?;
    let charged: u64 = ledger.lines.values().map(Line::charged_bytes).sum();
    let active = process.stats().active_bytes;
    if charged > active {
        return Err(ledger.inconsistent(format!("{charged} bytes charged, {active} active")));
    }
    if charged < active {
        // Extents no live object, cache or block holds (none in the model's replays).
        ledger
            .lines
            .entry(Charge::Unattributed)
            .or_default()
            .held_bytes += active - charged;
    }
    let mut lines: Vec<(Charge, Line)> = ledger.lines.into_iter().collect();
    lines.sort_by(|(ka, a), (kb, b)| {
        b.waste_bytes()
            .cmp(&a.waste_bytes())
            .then(b.charged_bytes().cmp(&a.charged_bytes()))
            .then(ka.cmp(kb))
    });
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_exact_and_gives_remainders_to_the_largest() {
        // 7488 bytes over 1 and 99 regions: exact shares 74.88 and 7413.12, so the one byte
        // left goes to the 1-region holder (remainder 88 of 100 beats 12).
        let held: BTreeMap<Charge, u32> = [(Charge::Site(0), 1), (Charge::ThreadCaches, 99)]
            .into_iter()
            .collect();
        let s = split(7488, &held);
        assert_eq!(s, vec![(Charge::Site(0), 75), (Charge::ThreadCaches, 7413)]);
        // Three equal holders of 10 bytes: 3 each, the byte left to the smallest key.
        let held: BTreeMap<Charge, u32> = [
            (Charge::Site(2), 1),
            (Charge::Site(1), 1),
            (Charge::Site(3), 1),
        ]
        .into_iter()
        .collect();
        assert_eq!(
            split(10, &held),
            vec![
                (Charge::Site(1), 4),
                (Charge::Site(2), 3),
                (Charge::Site(3), 3)
            ]
        );
    }
}
