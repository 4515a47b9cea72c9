//! How late jemalloc's background threads wake (issue 40, section 4): the figure behind the
//! process model's note that their wake-up times are approximate.
//!
//! In a fresh arena with `dirty_decay_ms:1000` and background threads on, one 1 MiB block
//! freed makes 257 dirty pages; by jemalloc's rules (`background_thread.c`, `decay.c`) the
//! free wakes the arena's thread, which plans a whole period (1 s), decays at 1 s without
//! purging (the pages entered the backlog at weight 1) and purges them all at 2 s. The model
//! purges at exactly 2 s; this measures when the real allocator does (polling
//! `stats.arenas.<i>.pdirty` every 50 us) and prints the lateness per trial.
//!   cargo run --release --example background_wake [TRIALS]

use std::ffi::CString;
use std::time::{Duration, Instant};
use tikv_jemalloc_sys::{dallocx, mallctl, mallocx};

unsafe fn write<T>(name: &str, mut v: T) {
    let n = CString::new(name).unwrap();
    let rc = mallctl(
        n.as_ptr(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        (&mut v as *mut T).cast(),
        std::mem::size_of::<T>(),
    );
    assert_eq!(rc, 0, "mallctl {name}");
}

unsafe fn read<T: Default>(name: &str) -> T {
    let n = CString::new(name).unwrap();
    let mut v = T::default();
    let mut len = std::mem::size_of::<T>();
    let rc = mallctl(
        n.as_ptr(),
        (&mut v as *mut T).cast(),
        &mut len,
        std::ptr::null_mut(),
        0,
    );
    assert_eq!(rc, 0, "mallctl {name}");
    v
}

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .map_or(5, |s| s.parse().expect("TRIALS is a number"));
    let mut late = Vec::new();
    // SAFETY: jemalloc's documented controls with their documented types; the block is
    // allocated and freed in the arena made for it.
    unsafe {
        write("background_thread", true);
        for _ in 0..trials {
            let arena: u32 = read("arenas.create");
            write(&format!("arena.{arena}.dirty_decay_ms"), 1000isize);
            write(&format!("arena.{arena}.muzzy_decay_ms"), 0isize);
            // MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE
            let flags = (((arena + 1) << 20) | (1 << 8)) as i32;
            let p = mallocx(1 << 20, flags);
            assert!(!p.is_null());
            dallocx(p, flags);
            let t0 = Instant::now();
            let pdirty = format!("stats.arenas.{arena}.pdirty");
            loop {
                write("epoch", 1u64);
                if read::<usize>(&pdirty) == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_micros(50));
            }
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            println!("arena {arena}: purged {ms:.3} ms after the free (model: 2000 ms)");
            late.push(ms - 2000.0);
        }
    }
    late.sort_by(f64::total_cmp);
    let mean = late.iter().sum::<f64>() / late.len() as f64;
    println!(
        "lateness over {} trials: min {:.3} ms, mean {mean:.3} ms, max {:.3} ms",
        late.len(),
        late[0],
        late[late.len() - 1]
    );
}
