//! Thin, safe wrappers over jemalloc's control interface (`mallctl`) and the `*allocx` calls.

use anyhow::{Context, Result};
use std::ffi::c_void;
use tikv_jemalloc_ctl::raw;
use tikv_jemalloc_sys as sys;

fn name(key: &str) -> Vec<u8> {
    let mut bytes = key.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

/// Reads `key` as a `T`.
///
/// # Safety
/// `T` must be the C type jemalloc documents for `key` (man jemalloc, MALLCTL NAMESPACE).
/// jemalloc also refuses a read whose size differs from the value's (EINVAL).
unsafe fn read<T: Copy>(key: &str) -> Result<T> {
    unsafe { raw::read(&name(key)) }.with_context(|| format!("mallctl {key}"))
}

/// Reads a `size_t` statistic or setting.
pub fn read_usize(key: &str) -> Result<u64> {
    // SAFETY: the keys passed here are documented as size_t.
    Ok(unsafe { read::<usize>(key) }? as u64)
}

/// Reads an `unsigned` setting.
pub fn read_u32(key: &str) -> Result<u32> {
    // SAFETY: the keys passed here are documented as unsigned.
    unsafe { read(key) }
}

/// Reads a `uint64_t` statistic (call counts).
pub fn read_u64(key: &str) -> Result<u64> {
    // SAFETY: the keys passed here are documented as uint64_t.
    unsafe { read(key) }
}

/// Reads an `ssize_t` setting (decay times).
pub fn read_isize(key: &str) -> Result<i64> {
    // SAFETY: the keys passed here are documented as ssize_t.
    Ok(unsafe { read::<isize>(key) }? as i64)
}

/// Reads a `bool` setting.
pub fn read_bool(key: &str) -> Result<bool> {
    // SAFETY: the keys passed here are documented as bool.
    unsafe { read(key) }
}

/// Refreshes the statistics snapshot (`epoch`).
pub fn refresh_stats() -> Result<()> {
    tikv_jemalloc_ctl::epoch::advance().context("mallctl epoch")?;
    Ok(())
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
        let index: u32 =
            unsafe { raw::read(&name("arenas.create")) }.context("mallctl arenas.create")?;
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
        let key = name(&format!("arena.{}.destroy", self.index));
        // SAFETY: arena.<i>.destroy neither reads nor writes a value; our allocations in it
        // are all freed by the time the arena is dropped.
        unsafe {
            sys::mallctl(
                key.as_ptr().cast(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            );
        }
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
        let previous_arena: u32 =
            unsafe { raw::read(b"thread.arena\0") }.context("mallctl thread.arena")?;
        let previous_tcache: bool = unsafe { raw::read(b"thread.tcache.enabled\0") }
            .context("mallctl thread.tcache.enabled")?;
        let binding = ThreadBinding {
            arena,
            previous_arena,
            previous_tcache,
            bound: true,
        };
        // SAFETY: as above; writing values of the documented types.
        unsafe {
            raw::write(b"thread.tcache.enabled\0", false)
                .context("mallctl thread.tcache.enabled")?;
            raw::write(b"thread.arena\0", binding.arena.index()).context("mallctl thread.arena")?;
        }
        Ok(binding)
    }

    fn unbind(&mut self) {
        if self.bound {
            self.bound = false;
            // SAFETY: restoring the value read in bind.
            let _ = unsafe { raw::write(b"thread.arena\0", self.previous_arena) };
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
        let _ = unsafe { raw::write(b"thread.tcache.enabled\0", self.previous_tcache) };
    }
}
