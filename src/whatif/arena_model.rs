//! The exact arena model as a what-if model (the analysis `crate::analysis::BuildModel` runs
//! the builds over a trace).

use super::replay::{SlabTurnover, Totals, WhatifModel};
use crate::sim::{ArenaModel, SimError};
use crate::trace::Event;

impl WhatifModel for ArenaModel {
    type Error = SimError;

    fn apply(&mut self, event: Event) -> Result<(), SimError> {
        ArenaModel::apply(self, event)
    }

    fn totals(&self) -> Totals {
        let s = self.stats();
        Totals {
            requested: s.requested_bytes,
            allocated: s.allocated_bytes,
            active: s.active_bytes,
            mapped: s.mapped_bytes,
        }
    }

    fn slabs(&self, bin: usize) -> u64 {
        self.bins().get(bin).map_or(0, |b| b.curslabs)
    }

    fn slab_turnover(&self) -> SlabTurnover {
        let s = self.stats();
        SlabTurnover {
            created: s.slabs_created,
            released: s.slabs_released,
        }
    }
}
