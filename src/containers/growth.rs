//! Growing a container model to N elements and pricing every step under a jemalloc build.

use super::core::{round_up, Container, Tracer, TwoArrays};
use super::spec::ContainerSpec;
use crate::sizeclass::SizeClasses;
use crate::trace::Event;
use serde::Serialize;

/// Most elements a model is grown to (its bookkeeping is a few bytes per element; the
/// B-tree's about 30, see [`super::ContainerKind::max_count`]).
pub const MAX_COUNT: u64 = 100_000_000;

/// The user address space of an x86-64 process (47 bits): no request can be larger.
const ADDRESS_SPACE: u64 = 1 << 47;

#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum GrowthError {
    #[error("count {0} must be between 1 and {1} for {2}")]
    Count(u64, u64, &'static str),
    #[error("a request of {0} bytes is larger than the build's largest size class")]
    TooLarge(u64),
    #[error("a request of {0} bytes does not fit the 128 TiB an x86-64 process can address")]
    BeyondAddressSpace(u64),
}

/// Bytes under one build: what was asked, what the classes hand out, pages kept active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Bytes {
    pub requested: u64,
    pub usable: u64,
    pub active: u64,
}

impl Bytes {
    /// One request of `size` bytes aligned to `align` (0: default) under `classes`: an
    /// aligned small request is served from the class of the size rounded up to the
    /// alignment (jemalloc's `sz_sa2u`).
    pub(crate) fn of_request(
        classes: &SizeClasses,
        size: u64,
        align: u64,
    ) -> Result<Bytes, GrowthError> {
        if size >= ADDRESS_SPACE {
            return Err(GrowthError::BeyondAddressSpace(size));
        }
        let rounded = round_up(size.max(1), align.max(1));
        Ok(Bytes {
            requested: size,
            usable: classes
                .usable_size(rounded)
                .ok_or(GrowthError::TooLarge(size))?,
            active: classes
                .active_bytes(rounded)
                .ok_or(GrowthError::TooLarge(size))?,
        })
    }

    fn add(&mut self, other: Bytes) {
        self.requested += other.requested;
        self.usable += other.usable;
        self.active += other.active;
    }

    fn sub(&mut self, other: Bytes) {
        self.requested -= other.requested;
        self.usable -= other.usable;
        self.active -= other.active;
    }

    fn max(self, other: Bytes) -> Bytes {
        Bytes {
            requested: self.requested.max(other.requested),
            usable: self.usable.max(other.usable),
            active: self.active.max(other.active),
        }
    }
}

/// A table's two arrays as two allocations and as one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SplitCost {
    pub split: Bytes,
    pub unified: Bytes,
}

impl SplitCost {
    pub fn of(classes: &SizeClasses, arrays: &TwoArrays) -> Result<SplitCost, GrowthError> {
        let mut split = Bytes::of_request(classes, arrays.first.bytes, arrays.first.align)?;
        split.add(Bytes::of_request(
            classes,
            arrays.second.bytes,
            arrays.second.align,
        )?);
        Ok(SplitCost {
            split,
            unified: Bytes::of_request(classes, arrays.unified_bytes, arrays.unified_align)?,
        })
    }

    /// Usable bytes of one allocation over two.
    pub(crate) fn usable_ratio(&self) -> f64 {
        self.unified.usable as f64 / self.split.usable as f64
    }
}

/// The container after one growth step (or at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GrowthStep {
    pub elements: u64,
    pub capacity: u64,
    /// Live bytes once the step is over.
    pub live: Bytes,
    /// Allocator calls (allocations, reallocations, frees) so far.
    pub calls: u64,
    pub split: Option<SplitCost>,
}

impl GrowthStep {
    pub fn per_element(&self, bytes: u64) -> f64 {
        bytes as f64 / self.elements.max(1) as f64
    }
}

/// Live bytes at a chosen element count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Sample {
    pub elements: u64,
    pub live: Bytes,
}

/// A container grown to N and destroyed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Growth {
    /// Steps where the capacity grew (thinned to one per 1/8 growth for node containers),
    /// and the state at N last.
    pub steps: Vec<GrowthStep>,
    /// The largest live bytes at any moment, transient allocations included.
    pub peak: Bytes,
    /// All allocator calls, destruction included.
    pub calls: u64,
    /// Live bytes at the requested element counts and, when any were requested, just
    /// before each recorded growth step (the corners of the sawtooth).
    pub samples: Vec<Sample>,
}

impl Growth {
    pub fn last(&self) -> &GrowthStep {
        self.steps.last().expect("a growth has at least one step")
    }
}

/// Live allocations and their cost under a build.
struct Meter<'c> {
    classes: &'c SizeClasses,
    live: Vec<Bytes>,
    total: Bytes,
    peak: Bytes,
    calls: u64,
    error: Option<GrowthError>,
}

impl<'c> Meter<'c> {
    fn new(classes: &'c SizeClasses) -> Self {
        Meter {
            classes,
            live: Vec::new(),
            total: Bytes::default(),
            peak: Bytes::default(),
            calls: 0,
            error: None,
        }
    }

    /// The step at `elements` (capacity `capacity`): the live bytes and calls so far, and
    /// what splitting the container's arrays would cost.
    fn step(
        &self,
        container: &dyn Container,
        elements: u64,
        capacity: u64,
    ) -> Result<GrowthStep, GrowthError> {
        let split = match container.arrays() {
            Some(a) => Some(SplitCost::of(self.classes, &a)?),
            None => None,
        };
        Ok(GrowthStep {
            elements,
            capacity,
            live: self.total,
            calls: self.calls,
            split,
        })
    }

    fn apply(&mut self, event: &Event) {
        self.calls += 1;
        let (id, new) = match *event {
            Event::Alloc { id, size, align } => (id, Some((size, align))),
            Event::Realloc { id, size } => (id, Some((size, 0))),
            Event::Free { id } => (id, None),
        };
        let slot = id as usize;
        if self.live.len() <= slot {
            self.live.resize(slot + 1, Bytes::default());
        }
        let old = std::mem::take(&mut self.live[slot]);
        self.total.sub(old);
        if let Some((size, align)) = new {
            match Bytes::of_request(self.classes, size, align) {
                Ok(bytes) => {
                    self.live[slot] = bytes;
                    self.total.add(bytes);
                }
                Err(e) => {
                    self.error.get_or_insert(e);
                }
            }
        }
        self.peak = self.peak.max(self.total);
    }
}

/// Grows `spec` to `count` elements and destroys it, passing every allocator call to `sink`
/// and pricing the steps under `classes`; `samples` (ascending) are element counts at which
/// to record the live bytes.
pub fn grow(
    spec: &ContainerSpec,
    count: u64,
    classes: &SizeClasses,
    samples: &[u64],
    sink: &mut dyn FnMut(Event),
) -> Result<Growth, GrowthError> {
    let limit = spec.kind.max_count();
    if count == 0 || count > limit {
        return Err(GrowthError::Count(count, limit, spec.kind.name()));
    }
    let mut container = spec.build(count);
    let meter = std::cell::RefCell::new(Meter::new(classes));
    let mut forward = |e: Event| {
        meter.borrow_mut().apply(&e);
        sink(e);
    };
    let mut tracer = Tracer::new(&mut forward);
    let mut steps: Vec<GrowthStep> = Vec::new();
    let mut sampled = Vec::new();
    let mut next_sample = samples.iter().copied().peekable();
    let mut capacity = 0;
    for _ in 0..count {
        let before = meter.borrow().total;
        container.insert(&mut tracer);
        let grew = container.capacity() != capacity;
        capacity = container.capacity();
        let elements = container.len();
        let shown = steps.last().map_or(0, |s| s.capacity);
        let step = (grew && capacity >= shown + shown / 8) || elements == count;
        while next_sample.peek().is_some_and(|&s| s < elements) {
            next_sample.next();
        }
        let sample = next_sample.peek() == Some(&elements);
        if !(step || sample) {
            continue;
        }
        let m = meter.borrow();
        if let Some(e) = &m.error {
            return Err(e.clone());
        }
        if sample {
            sampled.push(Sample {
                elements,
                live: m.total,
            });
        }
        if step && grew && !samples.is_empty() && elements > 1 {
            // The corner of the sawtooth: the last state before this growth.
            sampled.push(Sample {
                elements: elements - 1,
                live: before,
            });
        }
        if step {
            steps.push(m.step(container.as_ref(), elements, capacity)?);
        }
    }
    container.destroy(&mut tracer);
    drop(tracer);
    sampled.sort_by_key(|s| s.elements);
    sampled.dedup_by_key(|s| s.elements);
    let m = meter.into_inner();
    if let Some(e) = m.error {
        return Err(e);
    }
    Ok(Growth {
        steps,
        peak: m.peak,
        calls: m.calls,
        samples: sampled,
    })
}
