//! One merged event -> the trace's calls, thread exits and sites.

use super::ids::{translate, CallPoint, Staged};
use super::merge::{ImageState, Lane};
use super::{ConvertSummary, Converter};
use crate::record::raw::{FastMap, RawEvent, RawImage, RawOp};
use crate::record::symbols::Modules;
use crate::trace::{Call, Control, Event, EventOut, Frame, Record, SiteId, ThreadId, TraceError};

impl Converter<'_, '_> {
    /// One merged event of `lane`.
    pub(super) fn event(
        &mut self,
        image: &RawImage,
        lane: &mut Lane,
        ev: RawEvent,
        st: &mut ImageState,
    ) -> Result<(), TraceError> {
        // The allocator's mappings: the one a call made is written before the call's record,
        // once the call's trimming (jemalloc maps more than it needs for an alignment, then
        // unmaps the ends) is known.
        match ev.op {
            RawOp::Map { addr, len } => {
                self.mapping_done(lane)?;
                lane.mapping = Some((addr, len));
                return Ok(());
            }
            RawOp::Unmap { addr, len } => {
                lane.mapping = lane.mapping.and_then(|m| trimmed(m, (addr, len)));
                return Ok(());
            }
            RawOp::Flags { flags } => {
                lane.mallocx_flags = flags;
                return Ok(());
            }
            _ => self.mapping_done(lane)?,
        }
        let thread = match lane.thread {
            Some(t) => t,
            None => {
                let t = st.first_thread.take().unwrap_or_else(|| {
                    let t = self.next_thread;
                    self.next_thread += 1;
                    t
                });
                lane.thread = Some(t);
                t
            }
        };
        let at = self.time(ev.time_ns);
        let site = if st.stacks_on && ev.stack != 0 {
            let key = (lane.slot, ev.stack);
            match st.site_of.get(&key) {
                Some(&s) => s,
                None => {
                    let s = match st.stacks.remove(&key) {
                        Some((maps, ips)) => {
                            if st.modules.len() <= maps {
                                st.modules.resize(maps + 1, None);
                            }
                            let modules = st.modules[maps].get_or_insert_with(|| {
                                image
                                    .maps
                                    .get(maps)
                                    .map_or_else(Modules::default, |m| Modules::parse(m))
                            });
                            self.site(modules, maps, &mut st.frame_of, &ips)?
                        }
                        None => None,
                    };
                    st.site_of.insert(key, s);
                    s
                }
            }
        } else {
            None
        };
        if let RawOp::Exit = ev.op {
            lane.exited = true;
            return self.exit(thread, at);
        }
        if let RawOp::Control { code, arg } = ev.op {
            let control = Control::from_code(code, arg).ok_or_else(|| TraceError::Input {
                file: self.file.clone(),
                what: format!("a mallctl control of unknown code {code} (argument {arg})"),
            })?;
            self.summary.controls += 1;
            self.push(Record::Control {
                thread,
                time_ns: Some(at),
                control,
            })?;
            return self.hand_over_if_full();
        }
        // A realloc's flags come before its second point.
        let mallocx_flags = match ev.op {
            RawOp::ReallocBegin { .. } => 0,
            _ => std::mem::take(&mut lane.mallocx_flags),
        };
        if let Some(ids) = &mut self.ids {
            let point = CallPoint {
                thread,
                at,
                site,
                reentrant: ev.reentrant,
                mallocx_flags,
            };
            return ids.stage(Staged::Call(ev.op, point), self.sink);
        }
        let mut out = Emit::new(&mut self.records, &mut self.summary, thread, at, site);
        out.reentrant = ev.reentrant;
        out.mallocx_flags = mallocx_flags;
        translate(
            &mut self.importer,
            ev.op,
            &mut lane.pending,
            &mut out,
            &self.file,
        )?;
        self.hand_over_if_full()
    }

    /// Writes the lane's last mapping, if any (its call has ended). Inlined for the common
    /// case of none: called out of line every event, its prologue and epilogue were a tenth
    /// of the merge's instructions (callgrind, 20 an event).
    #[inline(always)]
    fn mapping_done(&mut self, lane: &mut Lane) -> Result<(), TraceError> {
        match lane.mapping.take() {
            Some(mapping) => self.write_mapping(mapping),
            None => Ok(()),
        }
    }

    #[cold]
    #[inline(never)]
    fn write_mapping(&mut self, (addr, len): (u64, u64)) -> Result<(), TraceError> {
        self.summary.mappings += 1;
        self.push(Record::Mapping { addr, len })
    }

    /// Nanoseconds since the start, never going back (threads read the clock a moment
    /// after taking their sequence number).
    pub(super) fn time(&mut self, raw_ns: u64) -> u64 {
        let t = raw_ns.saturating_sub(self.base_ns).max(self.last_ns);
        self.last_ns = t;
        t
    }

    pub(super) fn exit(&mut self, thread: ThreadId, at: u64) -> Result<(), TraceError> {
        self.summary.thread_exits += 1;
        self.push(Record::ThreadExit {
            thread,
            time_ns: Some(at),
        })
    }

    /// Hands the records over once a batch is full.
    #[inline(always)]
    pub(super) fn hand_over_if_full(&mut self) -> Result<(), TraceError> {
        if self.records.len() >= super::SINK_BATCH {
            self.hand_over()?;
        }
        Ok(())
    }

    /// The trace site of a stack, defined (written) the first time it is seen.
    fn site(
        &mut self,
        modules: &Modules,
        maps: usize,
        frame_of: &mut FastMap<(usize, u64), Option<u32>>,
        ips: &[u64],
    ) -> Result<Option<SiteId>, TraceError> {
        let mut ids = Vec::with_capacity(ips.len());
        for &ip in ips {
            let id = match frame_of.get(&(maps, ip)) {
                Some(&id) => id,
                None => {
                    let id = modules.frame(ip).map(|f| self.frame_id(f));
                    frame_of.insert((maps, ip), id);
                    id
                }
            };
            ids.extend(id);
        }
        if ids.is_empty() {
            return Ok(None);
        }
        if let Some(&id) = self.sites.get(&ids) {
            return Ok(Some(id));
        }
        let id = self.sites.len() as SiteId;
        let frames = ids
            .iter()
            .map(|&f| self.frames[f as usize].clone())
            .collect();
        self.sites.insert(ids, id);
        self.summary.sites += 1;
        self.push(Record::Site { id, frames })?;
        Ok(Some(id))
    }

    /// The id of a frame (symbolized here), the same for equal frames of any image.
    fn frame_id(&mut self, frame: Frame) -> u32 {
        let frame = self.symbolizer.name(frame);
        if let Some(&id) = self.frame_ids.get(&frame) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(frame.clone());
        self.frame_ids.insert(frame, id);
        id
    }
}

/// The calls the importer makes of one event, written as records of `thread` as they come
/// (the site goes to the call's own alloc or realloc, not to a repair's free), and counted.
/// Going through a vector of events per call first was a tenth of a conversion.
pub(super) struct Emit<'c> {
    records: &'c mut Vec<Record>,
    summary: &'c mut ConvertSummary,
    thread: ThreadId,
    at: u64,
    site: Option<SiteId>,
    /// The calls are reentrant (all of one raw event's).
    pub(super) reentrant: bool,
    /// Their `MALLOCX_` flags.
    pub(super) mallocx_flags: u32,
}

impl<'c> Emit<'c> {
    #[inline(always)]
    pub(super) fn new(
        records: &'c mut Vec<Record>,
        summary: &'c mut ConvertSummary,
        thread: ThreadId,
        at: u64,
        site: Option<SiteId>,
    ) -> Self {
        let t = thread as usize;
        if summary.events_per_thread.len() <= t {
            summary.events_per_thread.resize(t + 1, 0);
        }
        Emit {
            records,
            summary,
            thread,
            at,
            site,
            reentrant: false,
            mallocx_flags: 0,
        }
    }
}

impl EventOut for Emit<'_> {
    #[inline(always)]
    fn push(&mut self, event: Event) {
        let s = &mut *self.summary;
        s.events += 1;
        s.events_per_thread[self.thread as usize] += 1;
        let (thread, time_ns, reentrant) = (self.thread, Some(self.at), self.reentrant);
        let mallocx_flags = self.mallocx_flags;
        let slot = free_slot(self.records);
        let call = |event, site| {
            Record::Call(Call {
                event,
                thread,
                time_ns,
                site,
                reentrant,
                mallocx_flags,
            })
        };
        // SAFETY: `slot` is the vector's first unused slot ([`free_slot`]); written whole
        // here, then covered by the length.
        unsafe {
            match event {
                Event::Alloc { id, size, align } => {
                    s.allocs += 1;
                    slot.write(call(Event::Alloc { id, size, align }, self.site));
                }
                Event::Realloc { id, size } => {
                    s.reallocs += 1;
                    slot.write(call(Event::Realloc { id, size }, self.site));
                }
                Event::Free { id } => {
                    s.frees += 1;
                    slot.write(call(Event::Free { id }, None));
                }
            }
            self.records.set_len(self.records.len() + 1);
        }
    }
}

/// The first unused slot of `records`, room made for it first. A `push` built the record on
/// the stack, kept it there across its possible growth call and copied it over in 16-byte
/// loads of fields just stored 4 bytes at a time: a store-forwarding stall, the hottest
/// instruction of a conversion. Built in its slot instead.
#[inline(always)]
fn free_slot(records: &mut Vec<Record>) -> *mut Record {
    if records.len() == records.capacity() {
        records.reserve(1);
    }
    // SAFETY: within the capacity just made sure of.
    unsafe { records.as_mut_ptr().add(records.len()) }
}

/// The mapping `m` less the range `cut` (`None`: nothing left). A cut from the middle keeps
/// the larger side (jemalloc trims only the ends).
fn trimmed((addr, len): (u64, u64), (cut_at, cut_len): (u64, u64)) -> Option<(u64, u64)> {
    let (end, cut_end) = (addr + len, cut_at.saturating_add(cut_len));
    if cut_end <= addr || cut_at >= end {
        return Some((addr, len));
    }
    let below = cut_at.saturating_sub(addr);
    let above = end.saturating_sub(cut_end);
    match (below, above) {
        (0, 0) => None,
        (b, a) if b >= a => Some((addr, b)),
        (_, a) => Some((cut_end, a)),
    }
}

#[cfg(test)]
mod mapping_tests {
    use super::trimmed;

    /// jemalloc's `pages_map_slow` for a 2 MiB-aligned 2 MiB mapping: it maps 4 MiB - 4 KiB,
    /// then unmaps the lead and the trail (hand-derived shapes).
    #[test]
    fn trimming_keeps_what_the_allocator_kept() {
        let m = (0x1000, (4 << 20) - 4096);
        let lead = trimmed(m, (0x1000, 0x1ff000)).unwrap();
        assert_eq!(lead, (0x200000, (4 << 20) - 4096 - 0x1ff000));
        let kept = trimmed(lead, (0x400000, 0x1000)).unwrap();
        assert_eq!(kept, (0x200000, 2 << 20));
        assert_eq!(trimmed(kept, (0x200000, 2 << 20)), None);
        assert_eq!(trimmed(kept, (0x900000, 4096)), Some(kept));
    }
}
