//! fragsim's native recorder: loaded with `LD_PRELOAD`, it logs every malloc-family call of a
//! program into a raw file that `fragsim record` converts into a trace.
//!
//! # Rules it keeps
//! - It never allocates through malloc: per-thread buffers come from `mmap`, files are written
//!   with raw `write`, paths are built on the stack. Allocations made while the library
//!   itself is at work on a thread (in a hook but outside the real function, at start-up: the
//!   dynamic loader loading libunwind, libunwind) are served unrecorded from its own heap
//!   (`own.rs`), never from the program's allocator, so nothing recurses and the program's
//!   heap holds only what its trace has; calls made inside the real function (jemalloc
//!   starting a thread) are recorded, marked reentrant; calls made while `dlsym` resolves the
//!   real functions are served from a static bootstrap buffer.
//! - One global order: every event takes a sequence number with one atomic `fetch_add` inside
//!   the interposed call (an allocation after the real call returns, a free before it, a
//!   realloc both before and after, so an address is never handed out before its release in
//!   the order). With `tscorder`, the key is the TSC instead, with `autoorder` from the second
//!   thread on (`buf/order.rs`). There is no global lock: each thread appends to its own
//!   buffer; the final
//!   flush keeps owners out of theirs with a flag and `membarrier` (`buf::begin`), so the
//!   fast path has no locked instruction besides the sequence number.
//!
//! # Environment (set by `fragsim record`)
//! - `FRAGSIM_PRELOAD_DIR`: the directory raw files go to (`raw.<pid>`). Unset: no recording.
//! - `FRAGSIM_PRELOAD_PARENT`: the pid of `fragsim record`. A process whose parent it is (the
//!   program, also after `exec`) records; others only with `follow` in the flags.
//! - `FRAGSIM_PRELOAD_FLAGS`: comma-separated `stacks`, `follow`, `tsc` (event stamps from
//!   the TSC; else `CLOCK_MONOTONIC_COARSE`), `tscorder` (order keys from the TSC, x86-64),
//!   `autoorder` (sequence numbers, TSC keys from the second thread on).
//! - `FRAGSIM_STACKS_CHECK=1` (tests): every stack taken both by the unwind rules and by
//!   libunwind; the first that differs aborts the program.
//!
//! # Raw file format (little endian; all one process, several images if it exec'd)
//! A sequence of chunks, each a 48-byte header `magic u32 = 0x4B435346 ("FSCK"), kind u32,
//! slot u32, tid u32, payload_len u64, tsc u64, mono_ns u64, reserved u64`, then
//! `payload_len` bytes. `tsc` and `mono_ns` are read together when the chunk is written: the
//! pairs of an image scale its event stamps to nanoseconds. `slot` is the
//! thread buffer (stack ids are per slot), `tid` the thread's raw id (unique in the image).
//! Kinds:
//! - 1 `HEADER`: an image starts: u64 words `version (3), pid, ppid, start_ns, flags
//!   (1 = stacks on, 2 = follow forks, 4 = no unwinder found, 8 = event stamps are TSC
//!   ticks, else `CLOCK_MONOTONIC_COARSE` ns; `start_ns` is on the same clock; 16 = order
//!   keys are TSC ticks since the image started, each thread's strictly increasing, threads'
//!   possibly equal, else global sequence numbers; 32 = sequence numbers until the image's
//!   second thread records, then TSC keys as with 16 plus 2^55), fork_seq (the key at the fork that made
//!   this process, 0 for exec/start)`. A reader refuses another version or a flag it does
//!   not know.
//! - 2 `EVENTS`: u64 words. Each event starts with `kind | seq << 8` (`seq`: its order key,
//!   see flag 16), then its stamp (see flag 8; left out when the head has bit `0x40`: the
//!   stamp is that of the chunk's event before), then: `ALLOC (1)`: size, addr; `ALIGNED (6)`: size, align, addr;
//!   `FREE (2)`: addr; `REALLOC (3)`: old, new, size, seq_after (`seq` is taken before the real
//!   call, `seq_after` after it; the stamp is at `seq_after`); `EXIT (4)`: nothing; `MAP (7)`, `UNMAP (8)`: addr, len of an `mmap`/`munmap` the
//!   allocator made inside a call of the thread (marked reentrant), and `FLAGS (9)`: the
//!   `MALLOCX_` arena and cache bits of the thread's next call (one of jemalloc's `mallocx`,
//!   `rallocx`, `xallocx`, `dallocx`, `sdallocx`), all three without an order key; `CTL (10)`:
//!   code, argument of a `mallctl` write that succeeded (`thread.tcache.flush` 0,
//!   `arena.<i>.purge` 1 i, `arena.<i>.decay` 2 i, `thread.arena` 3 arena,
//!   `thread.tcache.enabled` 4 0|1), its key taken
//!   before the real call. Kind bit
//!   `0x80` means one more word follows: the call's stack id (per slot); bit `0x20`: the call
//!   was made while another allocator call of the thread was in progress (inside a recorded
//!   call's real function, or inside `mallctl`/`mallctlbymib`, which the library interposes
//!   for this: jemalloc serves such a reentrant call from arena 0 without its cache). `STACK (5)`:
//!   `5 | n << 8`, stack id, then `n` return addresses, innermost first (no time word).
//! - 3 `MAPS`: the bytes of `/proc/self/maps` (for symbolizing stacks: those of a chunk with
//!   the last one before it), written before a chunk when objects were (un)loaded since.
//! - 4 `EXEC`: the thread `tid` is about to `exec` (the next `HEADER` is the new image).
//! - 5 `END`: the image ended normally: u64 words `dropped_threads` (threads beyond the
//!   buffer table, not recorded), `late_calls` (calls after a thread's exit was written, not
//!   recorded), `lost_bytes` (writes that failed).
//! - 6 `SIGNAL`: the process is dying of the signal in the first u64 word.
//! - 7 `ALLOCATOR`: the program's jemalloc as it ran, read through its `mallctl` when the
//!   recording ends normally (none without one): UTF-8 `key value` lines (`version`,
//!   `arenas.quantum`, `arenas.page`, `opt.*`, the current `background_thread`).
//!
//! Beside the raw files, `proc.<pid>` says what started each process other than the program
//! (recorded with `follow` or not): see `notes.rs`.
//!
//! The `reserved` word of an `EVENTS` chunk's header is its progress mark (0: none): every
//! event of the image with a lower key is in the file before the chunk's end
//! (`fragsim record` converts that far while the program runs).
//!
//! The last image of a file without `END` is truncated (killed, or a signal ended it).

#![allow(clippy::missing_safety_doc)]

mod allocator;
mod buf;
mod cfi;
mod ctl;
mod daemon;
mod exec;
mod hooks;
mod notes;
mod own;
mod real;
mod signals;
mod stack;
mod state;
mod unwind;
/// The raw format's numbers, one copy shared with the reader (`src/record/raw/wire.rs`).
#[allow(dead_code)]
mod wire {
    include!("../../src/record/raw/wire.rs");
}

pub use hooks::*;
