//! The program's jemalloc as it ran, read through its own `mallctl` when the recording ends
//! (the `ALLOCATOR` chunk): `key value` lines, read without allocating (a stack buffer), so
//! that a replay can model the build and the options the program had rather than fragsim's.

use crate::buf::chunk;
use crate::real;
use crate::wire::K_ALLOCATOR;
use libc::{c_char, c_int, c_void, size_t};
use std::fmt::Write;

type MallctlFn =
    unsafe extern "C" fn(*const c_char, *mut c_void, *mut size_t, *mut c_void, size_t) -> c_int;

/// A value's C type, as `man jemalloc` gives it.
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Unsigned,
    Size,
    Ssize,
}

/// What is read: the build (`arenas.*`, 5.3.1's large rounding) and the options a replay
/// models; `opt.background_thread` the setting at start, `background_thread` the current one
/// (a server turns it on at run time: the write is recorded as a control).
const READ: [(&str, Kind); 15] = [
    ("arenas.quantum\0", Kind::Size),
    ("arenas.page\0", Kind::Size),
    ("opt.cache_oblivious\0", Kind::Bool),
    ("opt.disable_large_size_classes\0", Kind::Bool),
    ("opt.narenas\0", Kind::Unsigned),
    ("opt.tcache\0", Kind::Bool),
    ("opt.tcache_max\0", Kind::Size),
    ("opt.dirty_decay_ms\0", Kind::Ssize),
    ("opt.muzzy_decay_ms\0", Kind::Ssize),
    ("opt.background_thread\0", Kind::Bool),
    ("background_thread\0", Kind::Bool),
    ("opt.max_background_threads\0", Kind::Size),
    ("opt.oversize_threshold\0", Kind::Size),
    ("opt.experimental_tcache_gc\0", Kind::Bool),
    ("opt.lg_tcache_nslots_mul\0", Kind::Ssize),
];

/// A fixed buffer `fmt::Write` fills without allocating (what does not fit is dropped).
struct StackText {
    buf: [u8; 1024],
    len: usize,
}

impl Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Writes the `ALLOCATOR` chunk if the program's allocator has a `mallctl` (jemalloc).
///
/// # Safety
/// Called once, at the end of recording, with the allocator alive.
pub unsafe fn write() {
    let Some(f) = real::get(&real::MALLCTL) else {
        return;
    };
    let mallctl: MallctlFn = std::mem::transmute(f);
    let mut text = StackText {
        buf: [0; 1024],
        len: 0,
    };
    let mut version: *const c_char = std::ptr::null();
    let mut len = std::mem::size_of::<*const c_char>();
    let read = mallctl(
        c"version".as_ptr(),
        (&mut version as *mut *const c_char).cast(),
        &mut len,
        std::ptr::null_mut(),
        0,
    );
    if read != 0 || version.is_null() {
        return;
    }
    let Ok(v) = std::ffi::CStr::from_ptr(version).to_str() else {
        return;
    };
    let _ = writeln!(text, "version {v}");
    for (name, kind) in READ {
        let mut value = [0u8; 8];
        let mut len = match kind {
            Kind::Bool => 1,
            Kind::Unsigned => 4,
            Kind::Size | Kind::Ssize => 8,
        };
        let ok = mallctl(
            name.as_ptr().cast(),
            value.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        ) == 0;
        if !ok {
            continue;
        }
        let key = &name[..name.len() - 1];
        let _ = match kind {
            Kind::Bool => writeln!(text, "{key} {}", value[0] != 0),
            Kind::Unsigned => writeln!(
                text,
                "{key} {}",
                u32::from_ne_bytes(value[..4].try_into().unwrap_or_default())
            ),
            Kind::Size => writeln!(text, "{key} {}", u64::from_ne_bytes(value)),
            Kind::Ssize => writeln!(text, "{key} {}", i64::from_ne_bytes(value)),
        };
    }
    chunk(K_ALLOCATOR, 0, 0, &text.buf[..text.len]);
}
