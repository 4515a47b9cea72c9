//! Raw chunk output to the recording's file (lost bytes are counted, never retried past an
//! error other than `EINTR`).
//!
//! The program owns the descriptor table: a daemon closes every descriptor it did not open,
//! a child closes those it does not pass on, and the next file the program opens takes the
//! lowest free number. So the raw file's descriptor sits high, out of the way of the
//! program's own numbers, and is checked to still be the raw file (device and inode) before
//! every write; where it is not, the file is opened again by its path. Before that check
//! the recording went into the program's own file.

use super::{HDR, MAGIC};
use crate::state::{self, FD, LOST_BYTES};
use libc::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

/// The raw file's device and inode (0, 0: no raw file yet).
static RAW_DEV: AtomicU64 = AtomicU64::new(0);
static RAW_INO: AtomicU64 = AtomicU64::new(0);

/// Takes `fd`, just opened on this image's raw file, as the recording's descriptor (false:
/// closed, it cannot be checked).
pub unsafe fn adopt_raw_fd(fd: c_int) -> bool {
    let fd = out_of_the_way(fd);
    let mut st: libc::stat = std::mem::zeroed();
    if libc::fstat(fd, &mut st) != 0 {
        libc::close(fd);
        return false;
    }
    RAW_DEV.store(st.st_dev, Ordering::Relaxed);
    RAW_INO.store(st.st_ino, Ordering::Relaxed);
    FD.store(fd, Ordering::Release);
    true
}

/// Closes the raw file's descriptor (a fork child's copy of its parent's), unless the number
/// is no longer the raw file: then it is the program's, and stays open.
pub unsafe fn close_raw_fd() {
    let fd = FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 && is_raw(fd) {
        libc::close(fd);
    }
}

/// `fd` moved up, 32 below the lower of the descriptor limit and 1,024 (a higher number
/// would make the kernel grow the table, and `select` cannot see past 1,024 anyway); as it
/// is where the limit is too low or the move fails.
unsafe fn out_of_the_way(fd: c_int) -> c_int {
    let mut limit: libc::rlimit = std::mem::zeroed();
    if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
        return fd;
    }
    let top = limit.rlim_cur.min(1024) as c_int;
    if top < 64 || fd >= top - 32 {
        return fd;
    }
    let high = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, top - 32);
    if high < 0 {
        return fd;
    }
    libc::close(fd);
    high
}

/// Whether `fd` is open on the raw file.
unsafe fn is_raw(fd: c_int) -> bool {
    let mut st: libc::stat = std::mem::zeroed();
    libc::fstat(fd, &mut st) == 0
        && st.st_ino == RAW_INO.load(Ordering::Relaxed)
        && st.st_dev == RAW_DEV.load(Ordering::Relaxed)
}

/// The raw file's descriptor, checked (one `fstat` a chunk); -1 if it cannot be had.
unsafe fn raw_fd() -> c_int {
    let fd = FD.load(Ordering::Acquire);
    if fd >= 0 && is_raw(fd) {
        return fd;
    }
    reopen(fd)
}

/// The program closed the raw file's descriptor, or put a file of its own at its number
/// (never closed here: it is the program's now): the raw file opened again, by its path (not
/// created: a file that is gone stays gone). Threads that find it at once race; one
/// descriptor wins, the others are closed.
#[cold]
unsafe fn reopen(stale: c_int) -> c_int {
    if RAW_INO.load(Ordering::Relaxed) == 0 {
        return -1;
    }
    let mut path = [0u8; 4096 + 32];
    state::raw_path(&mut path);
    let fd = libc::open(
        path.as_ptr() as *const libc::c_char,
        libc::O_WRONLY | libc::O_APPEND | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return -1;
    }
    let fd = out_of_the_way(fd);
    if !is_raw(fd) {
        libc::close(fd);
        return -1;
    }
    match FD.compare_exchange(stale, fd, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => fd,
        Err(current) => {
            libc::close(fd);
            current
        }
    }
}

/// Writes a chunk of `kind` with `payload` (copied through a small stack buffer for the
/// header, so two writes; chunks other than events are rare).
pub unsafe fn chunk(kind: u32, slot: u32, tid: u32, payload: &[u8]) {
    let mut hdr = [0u8; HDR];
    hdr[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    hdr[4..8].copy_from_slice(&kind.to_le_bytes());
    hdr[8..12].copy_from_slice(&slot.to_le_bytes());
    hdr[12..16].copy_from_slice(&tid.to_le_bytes());
    hdr[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    hdr[24..32].copy_from_slice(&state::tsc().to_le_bytes());
    hdr[32..40].copy_from_slice(&state::now_ns().to_le_bytes());
    let iov = [
        libc::iovec {
            iov_base: hdr.as_mut_ptr() as *mut c_void,
            iov_len: HDR,
        },
        libc::iovec {
            iov_base: payload.as_ptr() as *mut c_void,
            iov_len: payload.len(),
        },
    ];
    let n = libc::writev(raw_fd(), iov.as_ptr(), 2);
    if n < 0 || n as usize != HDR + payload.len() {
        LOST_BYTES.fetch_add((HDR + payload.len()) as u64, Ordering::Relaxed);
    }
}

pub(super) unsafe fn write_all(mut p: *const u8, mut n: usize) {
    let fd = raw_fd();
    while n > 0 {
        let w = libc::write(fd, p as *const c_void, n);
        if w < 0 {
            if *libc::__errno_location() == libc::EINTR {
                continue;
            }
            LOST_BYTES.fetch_add(n as u64, Ordering::Relaxed);
            return;
        }
        p = p.add(w as usize);
        n -= w as usize;
    }
}
