//! What the measuring child reads at each sample without touching its own heap: anonymous
//! resident bytes from `/proc/self/smaps_rollup`, and the allocator's own figures through
//! whatever C API the loaded library exports (looked up with `dlsym`).

use std::ffi::{c_void, CStr};
use std::os::raw::{c_char, c_int};

/// Reads `/proc/self/smaps_rollup` into a stack buffer. `Anonymous:` is used rather than
/// `Rss:` so that code pages of the allocator's library, faulted in as new paths run, do not
/// count as heap; private pages written by the allocator (its `.bss`, its mappings) do.
/// smaps_rollup walks the page tables, so the figure is exact (statm's counters are per-CPU
/// approximations on current kernels).
pub struct Resident {
    fd: c_int,
}

impl Resident {
    pub fn open() -> std::io::Result<Self> {
        // SAFETY: a NUL-terminated path; the descriptor is closed on drop.
        let fd = unsafe {
            libc::open(
                c"/proc/self/smaps_rollup".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Resident { fd })
    }

    /// Anonymous resident bytes of this process now.
    pub fn read(&self) -> std::io::Result<u64> {
        let mut buf = [0u8; 4096];
        let mut len = 0;
        // SAFETY: reads into the stack buffer, within its length.
        unsafe {
            if libc::lseek(self.fd, 0, libc::SEEK_SET) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            while len < buf.len() {
                let n = libc::read(self.fd, buf[len..].as_mut_ptr().cast(), buf.len() - len);
                if n < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if n == 0 {
                    break;
                }
                len += n as usize;
            }
        }
        field_kib(&buf[..len], b"Anonymous:")
            .map(|kib| kib * 1024)
            .ok_or_else(|| std::io::Error::other("no Anonymous: line in /proc/self/smaps_rollup"))
    }
}

impl Drop for Resident {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// The number of `key kB` at the start of a line of `text` (no allocation).
pub fn field_kib(text: &[u8], key: &[u8]) -> Option<u64> {
    text.split(|&b| b == b'\n')
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| {
            let digits = rest.iter().skip_while(|b| b.is_ascii_whitespace());
            let mut value: Option<u64> = None;
            for &b in digits.take_while(|b| b.is_ascii_digit()) {
                value = Some(value.unwrap_or(0) * 10 + u64::from(b - b'0'));
            }
            value
        })
}

type MallctlFn =
    unsafe extern "C" fn(*const c_char, *mut c_void, *mut usize, *mut c_void, usize) -> c_int;
type NumericPropertyFn = unsafe extern "C" fn(*const c_char, *mut usize) -> c_int;

/// The address of `name` in this process, or null.
pub fn symbol(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_DEFAULT only looks a name up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

/// The file of the shared object that defines the address `p` (via `dladdr`).
pub(crate) fn object_of(p: *const c_void) -> Option<String> {
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: dladdr fills `info`; dli_fname points into the loader's tables.
    let found = unsafe { libc::dladdr(p, &mut info) };
    (found != 0 && !info.dli_fname.is_null()).then(|| {
        unsafe { CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned()
    })
}

/// The allocator's own statistics, where its library exports a way to read them.
#[derive(Clone, Copy)]
pub(crate) enum Figures {
    /// glibc's `mallinfo2`.
    Glibc,
    /// jemalloc's `mallctl` (the preloaded one's, or the linked `_rjem_mallctl`).
    Jemalloc(MallctlFn),
    /// gperftools' `MallocExtension_GetNumericProperty`.
    Tcmalloc(NumericPropertyFn),
    /// mimalloc (found by `mi_process_info`): no figure of its own is reported.
    Mimalloc,
}

/// What the two figures are, per allocator (`None`: not available).
pub(crate) struct FigureSources {
    pub in_use: Option<&'static str>,
    pub held: Option<&'static str>,
}

impl Figures {
    /// jemalloc's `mallctl` as found with `dlsym` (a preloaded jemalloc).
    pub(crate) fn jemalloc_preloaded() -> Option<Figures> {
        let p = symbol(c"mallctl");
        // SAFETY: jemalloc's documented mallctl signature.
        (!p.is_null())
            .then(|| Figures::Jemalloc(unsafe { std::mem::transmute::<*mut c_void, MallctlFn>(p) }))
    }

    pub(crate) fn jemalloc_linked() -> Figures {
        Figures::Jemalloc(tikv_jemalloc_sys::mallctl)
    }

    pub fn tcmalloc() -> Option<Figures> {
        let p = symbol(c"MallocExtension_GetNumericProperty");
        // SAFETY: gperftools' malloc_extension_c.h signature.
        (!p.is_null()).then(|| {
            Figures::Tcmalloc(unsafe { std::mem::transmute::<*mut c_void, NumericPropertyFn>(p) })
        })
    }

    pub fn mimalloc() -> Option<Figures> {
        (!symbol(c"mi_process_info").is_null()).then_some(Figures::Mimalloc)
    }

    pub fn sources(&self) -> FigureSources {
        let (in_use, held) = match self {
            Figures::Glibc => (
                Some("mallinfo2 uordblks + hblkhd"),
                Some("mallinfo2 arena + hblkhd"),
            ),
            Figures::Jemalloc(_) => (Some("stats.allocated"), Some("stats.resident")),
            Figures::Tcmalloc(_) => (
                Some("generic.current_allocated_bytes"),
                Some("generic.heap_size - tcmalloc.pageheap_unmapped_bytes"),
            ),
            // Its one figure, mi_process_info's current_commit, moves in whole segments (the
            // first committed at start): 0 over the baseline for any heap within a segment
            // (4 of the 7 committed traces), which reads as "holds nothing".
            Figures::Mimalloc => (
                None,
                Some("not available (mi_process_info's current_commit moves in whole segments, the first committed at start: 0 for a heap within one)"),
            ),
        };
        FigureSources { in_use, held }
    }

    /// (in use, held) now; `None` where not available. Reads no heap of ours.
    pub fn read(&self) -> (Option<u64>, Option<u64>) {
        match *self {
            Figures::Glibc => {
                // SAFETY: mallinfo2 only reads glibc's counters.
                let m = unsafe { libc::mallinfo2() };
                let mmapped = m.hblkhd as u64;
                (
                    Some(m.uordblks as u64 + mmapped),
                    Some(m.arena as u64 + mmapped),
                )
            }
            Figures::Jemalloc(mallctl) => {
                let mut epoch: u64 = 1;
                let read = |name: &CStr| -> Option<u64> {
                    let mut v: usize = 0;
                    let mut len = std::mem::size_of::<usize>();
                    // SAFETY: stats.allocated and stats.resident are size_t.
                    let err = unsafe {
                        mallctl(
                            name.as_ptr(),
                            (&mut v as *mut usize).cast(),
                            &mut len,
                            std::ptr::null_mut(),
                            0,
                        )
                    };
                    (err == 0).then_some(v as u64)
                };
                // SAFETY: writing epoch (uint64_t) refreshes the statistics.
                unsafe {
                    mallctl(
                        c"epoch".as_ptr(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        (&mut epoch as *mut u64).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                (read(c"stats.allocated"), read(c"stats.resident"))
            }
            Figures::Tcmalloc(get) => {
                let read = |name: &CStr| -> Option<u64> {
                    let mut v: usize = 0;
                    // SAFETY: the property is written into `v`; returns 1 when known.
                    (unsafe { get(name.as_ptr(), &mut v) } != 0).then_some(v as u64)
                };
                let held = match (
                    read(c"generic.heap_size"),
                    read(c"tcmalloc.pageheap_unmapped_bytes"),
                ) {
                    (Some(heap), Some(unmapped)) => Some(heap.saturating_sub(unmapped)),
                    _ => None,
                };
                (read(c"generic.current_allocated_bytes"), held)
            }
            Figures::Mimalloc => (None, None),
        }
    }
}

impl Figures {
    /// jemalloc's `stats.active` as of the last [`Figures::read`] (which refreshed the
    /// epoch); `None` for the other allocators.
    pub fn active(&self) -> Option<u64> {
        let Figures::Jemalloc(mallctl) = *self else {
            return None;
        };
        let mut v: usize = 0;
        let mut len = std::mem::size_of::<usize>();
        // SAFETY: stats.active is a size_t.
        let err = unsafe {
            mallctl(
                c"stats.active".as_ptr(),
                (&mut v as *mut usize).cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        (err == 0).then_some(v as u64)
    }
}

/// The allocator library's own version string, where it has one to ask for.
pub fn version(figures: &Figures) -> Option<String> {
    match figures {
        Figures::Glibc => {
            // SAFETY: gnu_get_libc_version returns a static string.
            let v = unsafe { CStr::from_ptr(libc::gnu_get_libc_version()) };
            Some(v.to_string_lossy().into_owned())
        }
        Figures::Jemalloc(mallctl) => {
            let mut p: *const c_char = std::ptr::null();
            let mut len = std::mem::size_of::<*const c_char>();
            // SAFETY: `version` is a const char *.
            let err = unsafe {
                mallctl(
                    c"version".as_ptr(),
                    (&mut p as *mut *const c_char).cast(),
                    &mut len,
                    std::ptr::null_mut(),
                    0,
                )
            };
            (err == 0 && !p.is_null()).then(|| {
                let v = unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
                v.split('-').next().unwrap_or(&v).to_string()
            })
        }
        Figures::Tcmalloc(_) => {
            let p = symbol(c"tc_version");
            (!p.is_null()).then(|| {
                type VersionFn = unsafe extern "C" fn(
                    *mut c_int,
                    *mut c_int,
                    *mut *const c_char,
                ) -> *const c_char;
                // SAFETY: gperftools' tc_version signature; returns a static string.
                let f = unsafe { std::mem::transmute::<*mut c_void, VersionFn>(p) };
                let s = unsafe {
                    f(
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                    )
                };
                if s.is_null() {
                    "unknown".into()
                } else {
                    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
                }
            })
        }
        Figures::Mimalloc => {
            let p = symbol(c"mi_version");
            (!p.is_null()).then(|| {
                // SAFETY: `int mi_version(void)`: e.g. 209 for 2.0.9.
                let f = unsafe {
                    std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> c_int>(p)
                };
                let v = unsafe { f() };
                format!("{}.{}.{}", v / 100, v / 10 % 10, v % 10)
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kib_of_a_field() {
        let text = b"Rss:                1234 kB\nAnonymous:           56 kB\n";
        assert_eq!(field_kib(text, b"Anonymous:"), Some(56));
        assert_eq!(field_kib(text, b"Rss:"), Some(1234));
        assert_eq!(field_kib(text, b"Swap:"), None);
    }
}
