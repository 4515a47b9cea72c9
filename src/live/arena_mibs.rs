//! MIBs of one arena's statistics, shared by the baton child's snapshot reader
//! (`check/baton.rs`) and its decay line (`check/clocked_child.rs`): a statistic is named as for arena 0
//! (`arena.0.initialized`, `stats.arenas.0.pactive`) and resolved for arena `i`.

use super::ctl::{mib, Api};
use anyhow::Result;

/// The MIB of the per-arena statistic `name`, written with arena 0, for arena `i`: the
/// first `0` component of the name is the arena's index (`arena.<i>.…`,
/// `stats.arenas.<i>.…`; a later `0`, as the bin's in `stats.arenas.0.bins.0.…`, stays).
pub(crate) fn arena_mib(api: &Api, name: &str, i: usize) -> Result<Vec<usize>> {
    let mut m = mib(api, name)?;
    if let Some(pos) = name.split('.').position(|c| c == "0") {
        m[pos] = i;
    }
    Ok(m)
}

/// The MIBs of `names` (as [`arena_mib`] takes them) for arena `i`, in order. The array is
/// filled in place: the only allocations are the MIBs themselves, as when each is looked up
/// alone (the child calls this before its first event, where allocations are measured).
pub(crate) fn arena_mibs_of<const N: usize>(
    api: &Api,
    i: usize,
    names: [&str; N],
) -> Result<[Vec<usize>; N]> {
    let mut first_error = None;
    let mibs = std::array::from_fn(|k| {
        if first_error.is_some() {
            return Vec::new();
        }
        arena_mib(api, names[k], i).unwrap_or_else(|e| {
            first_error = Some(e);
            Vec::new()
        })
    });
    match first_error {
        Some(e) => Err(e),
        None => Ok(mibs),
    }
}

/// Reads the `bool` at `m` (`arena.<i>.initialized`); an arena whose read fails is not
/// initialised.
pub(crate) fn read_bool_mib(api: &Api, m: &[usize]) -> bool {
    let mut v = false;
    let mut len = 1usize;
    // SAFETY: arena.<i>.initialized is a bool.
    let err = unsafe {
        (api.bymib)(
            m.as_ptr(),
            m.len(),
            (&mut v as *mut bool).cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    err == 0 && v
}
