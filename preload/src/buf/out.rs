//! Raw chunk output to the recording's file (lost bytes are counted, never retried past an
//! error other than `EINTR`).

use super::{HDR, MAGIC};
use crate::state::{self, FD, LOST_BYTES};
use libc::c_void;
use std::sync::atomic::Ordering;

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
    let fd = FD.load(Ordering::Acquire);
    let n = libc::writev(fd, iov.as_ptr(), 2);
    if n < 0 || n as usize != HDR + payload.len() {
        LOST_BYTES.fetch_add((HDR + payload.len()) as u64, Ordering::Relaxed);
    }
}

pub(super) unsafe fn write_all(mut p: *const u8, mut n: usize) {
    let fd = FD.load(Ordering::Acquire);
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
