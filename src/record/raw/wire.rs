// The raw format's numbers (documented in `preload/src/lib.rs`), the one copy: the preload
// library `include!`s this file, the reader declares it as the module `record::raw::wire`.
// Plain items only (no attributes, no `use`): it is compiled in both crates.

/// Every chunk header starts with it.
pub const MAGIC: u32 = 0x4B43_5346;
/// Bytes of a chunk header: magic, kind, slot, tid (u32 each), then length, TSC, ns and the
/// progress mark (u64 each).
pub const CHUNK_HEADER: usize = 48;

/// Chunk kinds.
pub const K_HEADER: u32 = 1;
pub const K_EVENTS: u32 = 2;
pub const K_MAPS: u32 = 3;
pub const K_EXEC: u32 = 4;
pub const K_END: u32 = 5;
pub const K_SIGNAL: u32 = 6;
/// The program's jemalloc as it ran (read through its `mallctl` at the end, where it has
/// one): UTF-8 `key value` lines, `version` first, then `arenas.quantum`, `arenas.page` and
/// `opt.*` values (`background_thread`: the current setting).
pub const K_ALLOCATOR: u32 = 7;

/// Event kinds (the head word's low 5 bits).
pub const E_ALLOC: u64 = 1;
pub const E_FREE: u64 = 2;
pub const E_REALLOC: u64 = 3;
pub const E_EXIT: u64 = 4;
pub const E_STACK: u64 = 5;
pub const E_ALIGNED: u64 = 6;
/// A mapping the program's allocator made (`mmap` called inside an allocator call): addr,
/// len; and one it removed (`munmap`), the same words. Not calls, and without an order key
/// (the head's key bits are 0): they belong to the thread's call in progress, whose event
/// follows them; the converter writes them as `Record::Mapping`s.
pub const E_MAP: u64 = 7;
pub const E_UNMAP: u64 = 8;
/// The thread's next call came through jemalloc's own API with these `MALLOCX_` flags (its
/// arena and thread-cache bits; the alignment is the call's own, the zero bit dropped): one
/// word, no order key (as `MAP`).
pub const E_FLAGS: u64 = 9;
/// A `mallctl` write that changes the allocator's state (`thread.tcache.flush`,
/// `arena.<i>.purge`, `arena.<i>.decay`, `thread.arena`, `thread.tcache.enabled`): its code
/// and argument
/// (`fragsim::trace::Control::code`), with the order key taken before the real call (as a
/// free's: what it releases can be reused from then on); written only when the call succeeds.
pub const E_CTL: u64 = 10;
/// `MALLOCX_` flags kept in a trace: `MALLOCX_TCACHE` (bits 8-19) and `MALLOCX_ARENA` (20-31).
pub const MALLOCX_KEPT: u64 = 0xffff_ff00;
/// Head bits: the event has no stamp word (its stamp is its chunk's event before), a site.
pub const SAME_STAMP: u64 = 0x40;
/// Head bit: the call was made while another allocator call of its thread was in progress
/// (a reentrant call, `Call::reentrant`).
pub const REENTRANT: u64 = 0x20;
pub const HAS_SITE: u64 = 0x80;

/// The image header's version (its first word): 3 since flag 16 (TSC order keys), which a
/// reader that does not know it would take for sequence numbers.
pub const RAW_VERSION: u64 = 3;

/// Image header flags.
pub const FLAG_STACKS: u64 = 1;
pub const FLAG_FOLLOW: u64 = 2;
pub const FLAG_NO_UNWINDER: u64 = 4;
/// Event stamps are TSC ticks (scaled with the chunk headers' clock pairs).
pub const FLAG_TSC: u64 = 8;
/// Events are ordered by TSC keys (`--order tsc`), not by a global sequence number: each
/// thread's keys strictly increase, different threads' may tie (merged by thread then).
pub const FLAG_TSC_ORDER: u64 = 16;
/// Events are ordered by sequence numbers until the image's second thread records, then by
/// TSC keys above [`AUTO_TSC_KEYS`] (`--order auto`): every sequence number is below every
/// TSC key; TSC keys tie and are merged as with [`FLAG_TSC_ORDER`].
pub const FLAG_AUTO_ORDER: u64 = 32;
/// Added to the TSC keys of an image with [`FLAG_AUTO_ORDER`] (2^55: sequence numbers stay
/// below it, and the ticks since the image started below 2^55, about 100 days at 4 GHz).
pub const AUTO_TSC_KEYS: u64 = 1 << 55;

/// Every flag a reader of this version knows (a header with any other is refused).
pub const FLAGS_KNOWN: u64 =
    FLAG_STACKS | FLAG_FOLLOW | FLAG_NO_UNWINDER | FLAG_TSC | FLAG_TSC_ORDER | FLAG_AUTO_ORDER;
