//! The one layer over jemalloc's control interface (`mallctl`) and the `*allocx` calls: the
//! linked jemalloc's or, through [`Api::system`], a preloaded one's. Every read of the running
//! allocator in fragsim goes through here, and [`Api::config`] is the one place a running
//! jemalloc becomes an [`AllocatorConfig`].

use crate::sizeclass::{AllocatorConfig, JemallocVersion};
use anyhow::{bail, ensure, Context, Result};
use std::ffi::{c_void, CStr, CString};
use std::os::raw::{c_char, c_int};
use tikv_jemalloc_sys as sys;

pub(crate) type MallocxFn = unsafe extern "C" fn(usize, c_int) -> *mut c_void;
pub(crate) type RallocxFn = unsafe extern "C" fn(*mut c_void, usize, c_int) -> *mut c_void;
pub(crate) type DallocxFn = unsafe extern "C" fn(*mut c_void, c_int);
pub(crate) type MallctlFn =
    unsafe extern "C" fn(*const c_char, *mut c_void, *mut usize, *mut c_void, usize) -> c_int;
/// `malloc_stats_print`'s write callback.
type WriteCb = unsafe extern "C" fn(*mut c_void, *const c_char);
pub(crate) type StatsPrintFn = unsafe extern "C" fn(Option<WriteCb>, *mut c_void, *const c_char);
type NameToMibFn = unsafe extern "C" fn(*const c_char, *mut usize, *mut usize) -> c_int;
type ByMibFn =
    unsafe extern "C" fn(*const usize, usize, *mut c_void, *mut usize, *mut c_void, usize) -> c_int;

/// The jemalloc entry points fragsim calls: the linked jemalloc's, or those of a system
/// jemalloc preloaded into a child process (`LD_PRELOAD`), found with `dlsym`.
#[derive(Clone, Copy)]
pub struct Api {
    pub(crate) mallocx: MallocxFn,
    pub(crate) rallocx: RallocxFn,
    pub(crate) dallocx: DallocxFn,
    pub(crate) mallctl: MallctlFn,
    pub(crate) nametomib: NameToMibFn,
    pub(crate) bymib: ByMibFn,
    pub(crate) stats_print: StatsPrintFn,
}

impl Api {
    /// The jemalloc fragsim is linked with (tikv-jemalloc-sys).
    pub fn linked() -> Api {
        Api {
            mallocx: sys::mallocx,
            rallocx: sys::rallocx,
            dallocx: sys::dallocx,
            mallctl: sys::mallctl,
            nametomib: sys::mallctlnametomib,
            bymib: sys::mallctlbymib,
            stats_print: sys::malloc_stats_print,
        }
    }

    /// The unprefixed `mallocx` & co. of a jemalloc loaded into this process (preloaded).
    pub fn system() -> Result<Api> {
        fn sym(name: &str) -> Result<*mut c_void> {
            let c = CString::new(name)?;
            // SAFETY: dlsym with RTLD_DEFAULT only looks a name up.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c.as_ptr()) };
            ensure!(
                !p.is_null(),
                "no '{name}' in this process: is a system jemalloc preloaded?"
            );
            Ok(p)
        }
        // SAFETY: the symbols are jemalloc's documented functions with these signatures.
        unsafe {
            Ok(Api {
                mallocx: std::mem::transmute::<*mut c_void, MallocxFn>(sym("mallocx")?),
                rallocx: std::mem::transmute::<*mut c_void, RallocxFn>(sym("rallocx")?),
                dallocx: std::mem::transmute::<*mut c_void, DallocxFn>(sym("dallocx")?),
                mallctl: std::mem::transmute::<*mut c_void, MallctlFn>(sym("mallctl")?),
                nametomib: std::mem::transmute::<*mut c_void, NameToMibFn>(sym(
                    "mallctlnametomib",
                )?),
                bymib: std::mem::transmute::<*mut c_void, ByMibFn>(sym("mallctlbymib")?),
                stats_print: std::mem::transmute::<*mut c_void, StatsPrintFn>(sym(
                    "malloc_stats_print",
                )?),
            })
        }
    }

    /// Reads a value of type `T` by name.
    ///
    /// # Safety
    /// `T` must be the C type jemalloc documents for `name` (man jemalloc, MALLCTL
    /// NAMESPACE); jemalloc refuses a read whose size differs (EINVAL).
    pub(crate) unsafe fn read<T: Copy>(&self, name: &str) -> Result<T> {
        let c = CString::new(name)?;
        let mut value = std::mem::MaybeUninit::<T>::zeroed();
        let mut len = std::mem::size_of::<T>();
        let err = unsafe {
            (self.mallctl)(
                c.as_ptr(),
                value.as_mut_ptr().cast(),
                &mut len,
                std::ptr::null_mut(),
                0,
            )
        };
        ensure!(err == 0, "mallctl {name}: error {err}");
        ensure!(
            len == std::mem::size_of::<T>(),
            "mallctl {name}: {len} bytes"
        );
        // SAFETY: jemalloc wrote a whole `T` (checked above), or it stayed zeroed.
        Ok(unsafe { value.assume_init() })
    }

    /// Writes a value of type `T` by name (`T` must be the documented type).
    pub(crate) unsafe fn write<T: Copy>(&self, name: &str, mut value: T) -> Result<()> {
        let c = CString::new(name)?;
        let err = unsafe {
            (self.mallctl)(
                c.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&mut value as *mut T).cast(),
                std::mem::size_of::<T>(),
            )
        };
        ensure!(err == 0, "mallctl {name}: error {err}");
        Ok(())
    }

    /// Runs a control that takes and gives no value (`arena.<i>.destroy`); errors ignored, as
    /// in a destructor there is nothing to do with them.
    pub(crate) fn call(&self, name: &str) {
        let Ok(c) = CString::new(name) else { return };
        // SAFETY: a control without a value reads and writes nothing.
        unsafe {
            (self.mallctl)(
                c.as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            );
        }
    }

    /// Reads a `const char *` setting (`version`), without its terminating NUL.
    pub(crate) fn read_str(&self, name: &str) -> Result<String> {
        // SAFETY: the names passed here are documented as const char *; jemalloc's strings
        // are static.
        let ptr = unsafe { self.read::<*const c_char>(name) }?;
        ensure!(!ptr.is_null(), "mallctl {name}: no value");
        Ok(unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned())
    }

    /// jemalloc's own JSON dump of its statistics (`malloc_stats_print` with opts `J`), on
    /// one line. The dump allocates its 64 KiB buffer in arena 0 (see
    /// [`crate::process::STATS_PRINT_BUFFER`]); the text is collected in this thread's
    /// arena.
    pub(crate) fn stats_print_json(&self) -> String {
        unsafe extern "C" fn append(out: *mut c_void, text: *const c_char) {
            // SAFETY: `out` is the Vec below; jemalloc passes a NUL-terminated string.
            unsafe { (*out.cast::<Vec<u8>>()).extend_from_slice(CStr::from_ptr(text).to_bytes()) }
        }
        let mut out: Vec<u8> = Vec::with_capacity(1 << 20);
        // SAFETY: the callback only appends to `out`, which outlives the call.
        unsafe {
            (self.stats_print)(
                Some(append),
                (&mut out as *mut Vec<u8>).cast(),
                c"J".as_ptr(),
            )
        };
        // Its JSON has no newline inside a string: one line for the parent.
        String::from_utf8_lossy(&out).replace('\n', " ")
    }

    /// Refreshes the statistics snapshot (`epoch`).
    pub fn refresh_stats(&self) -> Result<()> {
        // SAFETY: writing epoch takes a uint64_t.
        unsafe { self.write("epoch", 1u64) }
    }

    /// The build this jemalloc was compiled as, for the model: the one place a running
    /// jemalloc becomes an [`AllocatorConfig`]. A release fragsim does not model is an error.
    pub fn config(&self) -> Result<AllocatorConfig> {
        // SAFETY: types as documented in man jemalloc (size_t, bool).
        let (page, quantum, cache_oblivious) = unsafe {
            (
                self.read::<usize>("arenas.page")? as u64,
                self.read::<usize>("arenas.quantum")? as u64,
                self.read::<bool>("opt.cache_oblivious")?,
            )
        };
        // 5.3.0 has no such option: large requests get large size classes there.
        let large_page_rounding =
            unsafe { self.read::<bool>("opt.disable_large_size_classes") }.unwrap_or(false);
        let version = self.read_str("version")?;
        if !page.is_power_of_two() || !quantum.is_power_of_two() {
            bail!("live jemalloc reports page {page} and quantum {quantum}, not powers of two");
        }
        let mut config = AllocatorConfig::new(quantum.trailing_zeros(), page.trailing_zeros(), 2)?;
        config.cache_oblivious = cache_oblivious;
        config.large_page_rounding = large_page_rounding;
        config.version = JemallocVersion::from_version_string(&version)
            .with_context(|| format!("jemalloc {version} is not a modelled release"))?;
        Ok(config)
    }

    /// Whether this jemalloc keeps statistics (`config.stats`).
    pub(crate) fn has_stats(&self) -> bool {
        // SAFETY: config.stats is a bool.
        unsafe { self.read::<bool>("config.stats") }.unwrap_or(false)
    }

    /// Writes a `uint64_t` by MIB (`epoch`).
    pub(crate) fn write_mib_u64(&self, mib: &[usize], mut value: u64) -> Result<()> {
        // SAFETY: the only MIB written is epoch's, a uint64_t.
        let err = unsafe {
            (self.bymib)(
                mib.as_ptr(),
                mib.len(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&mut value as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        ensure!(err == 0, "mallctlbymib: error {err}");
        Ok(())
    }
}

/// The MIB of `name` in `api` (resolved once, read many times with [`read_mib`]).
pub(crate) fn mib(api: &Api, name: &str) -> Result<Vec<usize>> {
    let c = CString::new(name)?;
    let mut mib = [0usize; 8];
    let mut len = mib.len();
    // SAFETY: the buffer holds `len` entries; jemalloc writes at most that many.
    let err = unsafe { (api.nametomib)(c.as_ptr(), mib.as_mut_ptr(), &mut len) };
    ensure!(err == 0, "mallctlnametomib {name}: error {err}");
    Ok(mib[..len].to_vec())
}

/// Reads a `size_t` statistic by MIB.
pub(crate) fn read_mib(api: &Api, mib: &[usize]) -> Result<u64> {
    let mut value: usize = 0;
    let mut len = std::mem::size_of::<usize>();
    // SAFETY: every statistic read here is documented as size_t.
    let err = unsafe {
        (api.bymib)(
            mib.as_ptr(),
            mib.len(),
            (&mut value as *mut usize).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    ensure!(err == 0, "mallctlbymib: error {err}");
    Ok(value as u64)
}

/// Reads `key` from the linked jemalloc as a `T`.
///
/// # Safety
/// As [`Api::read`].
unsafe fn read<T: Copy>(key: &str) -> Result<T> {
    unsafe { Api::linked().read(key) }
}

/// Reads a `size_t` statistic or setting.
pub(crate) fn read_usize(key: &str) -> Result<u64> {
    // SAFETY: the keys passed here are documented as size_t.
    Ok(unsafe { read::<usize>(key) }? as u64)
}

/// Reads an `unsigned` setting.
pub(crate) fn read_u32(key: &str) -> Result<u32> {
    // SAFETY: the keys passed here are documented as unsigned.
    unsafe { read(key) }
}

/// Reads a `uint64_t` statistic (call counts).
pub(crate) fn read_u64(key: &str) -> Result<u64> {
    // SAFETY: the keys passed here are documented as uint64_t.
    unsafe { read(key) }
}

/// Reads an `ssize_t` setting (decay times).
pub fn read_isize(key: &str) -> Result<i64> {
    // SAFETY: the keys passed here are documented as ssize_t.
    Ok(unsafe { read::<isize>(key) }? as i64)
}

/// Reads a `bool` setting.
pub(crate) fn read_bool(key: &str) -> Result<bool> {
    // SAFETY: the keys passed here are documented as bool.
    unsafe { read(key) }
}

/// Reads a `const char *` setting of the linked jemalloc (`version`).
pub(crate) fn read_string(key: &str) -> Result<String> {
    Api::linked().read_str(key)
}

/// Refreshes the linked jemalloc's statistics snapshot (`epoch`).
pub fn refresh_stats() -> Result<()> {
    Api::linked().refresh_stats()
}

/// `nallocx(request, 0)`: the usable size jemalloc would give, 0 if it cannot.
pub fn nallocx(request: u64) -> u64 {
    // SAFETY: nallocx only computes; flags 0 is always valid.
    unsafe { sys::nallocx(request as usize, 0) as u64 }
}

/// A private arena, so nothing else in the process disturbs its statistics. Allocations go
/// to it directly, bypassing the thread cache. Destroyed on drop.
pub struct PrivateArena {
    index: u32,
}

/// What an arena holds right now, and how many calls it has served.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ArenaUsage {
    /// Usable bytes of live allocations (small + large).
    pub allocated: u64,
    /// Bytes of active pages.
    pub active: u64,
    /// Allocations served so far (`small.nmalloc + large.nmalloc`).
    pub mallocs: u64,
    /// Allocations freed so far (`small.ndalloc + large.ndalloc`).
    pub frees: u64,
}

impl PrivateArena {
    pub fn create() -> Result<Self> {
        // SAFETY: arenas.create returns the new arena's unsigned index.
        let index: u32 = unsafe { read("arenas.create") }?;
        Ok(PrivateArena { index })
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    fn flags(&self) -> i32 {
        sys::MALLOCX_ARENA(self.index as usize) | sys::MALLOCX_TCACHE_NONE
    }

    /// Allocates `size` bytes in this arena.
    pub fn alloc(&self, size: u64) -> Result<*mut c_void> {
        // SAFETY: size > 0 is required by mallocx; checked here.
        anyhow::ensure!(size > 0, "cannot allocate 0 bytes with mallocx");
        let ptr = unsafe { sys::mallocx(size as usize, self.flags()) };
        anyhow::ensure!(!ptr.is_null(), "mallocx({size}) failed");
        Ok(ptr)
    }

    /// Frees what [`PrivateArena::alloc`] returned for `size` bytes.
    ///
    /// # Safety
    /// `ptr` must come from `alloc(size)` on this arena and not be freed yet.
    pub unsafe fn free(&self, ptr: *mut c_void, size: u64) {
        unsafe { sys::sdallocx(ptr, size as usize, self.flags()) }
    }

    /// The arena's statistics, freshly refreshed.
    pub fn usage(&self) -> Result<ArenaUsage> {
        refresh_stats()?;
        let prefix = format!("stats.arenas.{}", self.index);
        // small.* and large.* summed: what the arena's two kinds of allocation report.
        let both = |field: &str, read: fn(&str) -> Result<u64>| -> Result<u64> {
            Ok(read(&format!("{prefix}.small.{field}"))?
                + read(&format!("{prefix}.large.{field}"))?)
        };
        let pactive = read_usize(&format!("{prefix}.pactive"))?;
        Ok(ArenaUsage {
            allocated: both("allocated", read_usize)?,
            active: pactive * read_usize("arenas.page")?,
            mallocs: both("nmalloc", read_u64)?,
            frees: both("ndalloc", read_u64)?,
        })
    }
}

impl Drop for PrivateArena {
    fn drop(&mut self) {
        // Our allocations in it are all freed by the time the arena is dropped.
        Api::linked().call(&format!("arena.{}.destroy", self.index));
    }
}

/// Runs `build` with this thread allocating from a fresh private arena, thread cache off, so
/// the arena's statistics count exactly what `build` allocates; then moves the thread back to
/// its own arena, reads those statistics, lets `inspect` look at what was built, and drops it
/// while the thread cache is still off. The private arena is destroyed before returning.
///
/// # Safety
/// Everything `build` allocates must be freed before this returns: either owned by its
/// result (dropped here) or freed inside `build`. An allocation that escapes (leaked, or
/// stored through something `build` captured) points into a destroyed arena, and freeing it
/// later is undefined behaviour in jemalloc.
pub unsafe fn in_private_arena<T, X>(
    build: impl FnOnce() -> T,
    inspect: impl FnOnce(&T) -> X,
) -> Result<(ArenaUsage, X)> {
    let mut binding = ThreadBinding::bind()?;
    let built = build();
    let usage = binding.finish();
    let seen = inspect(&built);
    drop(built);
    drop(binding);
    Ok((usage?, seen))
}

/// The thread's arena and thread-cache setting, restored on drop.
struct ThreadBinding {
    arena: PrivateArena,
    previous_arena: u32,
    previous_tcache: bool,
    bound: bool,
}

impl ThreadBinding {
    fn bind() -> Result<Self> {
        let arena = PrivateArena::create()?;
        // SAFETY: thread.arena is unsigned, thread.tcache.enabled is bool (man jemalloc).
        let previous_arena: u32 = unsafe { read("thread.arena") }?;
        let previous_tcache: bool = unsafe { read("thread.tcache.enabled") }?;
        let binding = ThreadBinding {
            arena,
            previous_arena,
            previous_tcache,
            bound: true,
        };
        // SAFETY: as above; writing values of the documented types.
        unsafe {
            Api::linked().write("thread.tcache.enabled", false)?;
            Api::linked().write("thread.arena", binding.arena.index())?;
        }
        Ok(binding)
    }

    fn unbind(&mut self) {
        if self.bound {
            self.bound = false;
            // SAFETY: restoring the value read in bind.
            let _ = unsafe { Api::linked().write("thread.arena", self.previous_arena) };
        }
    }

    /// Moves the thread back to its own arena and returns what the private arena holds.
    fn finish(&mut self) -> Result<ArenaUsage> {
        self.unbind();
        self.arena.usage()
    }
}

impl Drop for ThreadBinding {
    fn drop(&mut self) {
        self.unbind();
        // SAFETY: restoring the value read in bind; the arena field is destroyed after this.
        let _ = unsafe { Api::linked().write("thread.tcache.enabled", self.previous_tcache) };
    }
}
