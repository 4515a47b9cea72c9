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

/// Reads a `size_t` statistic or setting.
pub fn read_usize(key: &str) -> Result<u64> {
    // SAFETY: every key we read is documented as size_t (man jemalloc, MALLCTL NAMESPACE).
    let value: usize =
        unsafe { raw::read(&name(key)) }.with_context(|| format!("mallctl {key}"))?;
    Ok(value as u64)
}

/// Reads an `unsigned` setting.
pub fn read_u32(key: &str) -> Result<u32> {
    // SAFETY: the keys passed here are documented as unsigned.
    unsafe { raw::read(&name(key)) }.with_context(|| format!("mallctl {key}"))
}

/// Reads an `ssize_t` setting (decay times).
pub fn read_isize(key: &str) -> Result<i64> {
    // SAFETY: the keys passed here are documented as ssize_t.
    let value: isize =
        unsafe { raw::read(&name(key)) }.with_context(|| format!("mallctl {key}"))?;
    Ok(value as i64)
}

/// Reads a `bool` setting.
pub fn read_bool(key: &str) -> Result<bool> {
    // SAFETY: the keys passed here are documented as bool.
    unsafe { raw::read(&name(key)) }.with_context(|| format!("mallctl {key}"))
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

/// What an arena holds right now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaUsage {
    /// Usable bytes of live allocations (small + large).
    pub allocated: u64,
    /// Bytes of active pages.
    pub active: u64,
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
        let small = read_usize(&format!("{prefix}.small.allocated"))?;
        let large = read_usize(&format!("{prefix}.large.allocated"))?;
        let pactive = read_usize(&format!("{prefix}.pactive"))?;
        Ok(ArenaUsage {
            allocated: small + large,
            active: pactive * read_usize("arenas.page")?,
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

/// While alive, this thread allocates from a fresh private arena with its thread cache off,
/// so the arena's statistics count exactly what the thread allocates.
///
/// [`ThreadBinding::finish`] moves the thread back to its own arena and reads the statistics;
/// the thread cache stays off until the binding is dropped, so what was allocated in the
/// private arena must be freed before then (a cached pointer into a destroyed arena would
/// be fatal). Dropping the binding restores the cache and destroys the arena.
pub struct ThreadBinding {
    arena: PrivateArena,
    previous_arena: u32,
    previous_tcache: bool,
    bound: bool,
}

impl ThreadBinding {
    pub fn bind() -> Result<Self> {
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
    pub fn finish(&mut self) -> Result<ArenaUsage> {
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
