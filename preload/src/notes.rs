//! `DIR/proc.<pid>`: what started a process other than the recorded program, so that
//! `fragsim record` can say which children ran (unrecorded without `follow`) and name each
//! child's trace after its program. One record per image, appended with a single `write`:
//! `kind u8` (`f` a fork of a recording image, `x` an exec'd image), `ppid u64`, `len u32`,
//! then `len` bytes of `/proc/self/cmdline` (the arguments, each NUL-terminated; at most 4 KiB).

use libc::{c_char, c_void};

/// The most command-line bytes kept.
const MAX_CMDLINE: usize = 4096;
/// kind + ppid + len.
const HEAD: usize = 1 + 8 + 4;

/// Appends this image's record to `DIR/proc.<pid>`; `dir` without its NUL. Async-signal-safe
/// calls only (it runs in a fork child too); nothing allocates.
pub unsafe fn note_image(dir: &[u8], kind: u8) {
    let mut path = [0u8; 4096 + 32];
    if dir.len() + 32 > path.len() {
        return;
    }
    path[..dir.len()].copy_from_slice(dir);
    let mut at = dir.len();
    for &c in b"/proc." {
        path[at] = c;
        at += 1;
    }
    at += crate::state::write_decimal(&mut path[at..], libc::getpid() as u64);
    path[at] = 0;
    let mut record = [0u8; HEAD + MAX_CMDLINE];
    let len = read_cmdline(&mut record[HEAD..]);
    record[0] = kind;
    record[1..9].copy_from_slice(&(libc::getppid() as u64).to_le_bytes());
    record[9..13].copy_from_slice(&(len as u32).to_le_bytes());
    let fd = libc::open(
        path.as_ptr() as *const c_char,
        libc::O_WRONLY | libc::O_CREAT | libc::O_APPEND | libc::O_CLOEXEC,
        0o644,
    );
    if fd < 0 {
        return;
    }
    libc::write(fd, record.as_ptr() as *const c_void, HEAD + len);
    libc::close(fd);
}

/// `/proc/self/cmdline` into `out` (cut at its size); the bytes read.
unsafe fn read_cmdline(out: &mut [u8]) -> usize {
    let fd = libc::open(
        c"/proc/self/cmdline".as_ptr(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return 0;
    }
    let mut len = 0;
    while len < out.len() {
        let n = libc::read(fd, out[len..].as_mut_ptr() as *mut c_void, out.len() - len);
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    libc::close(fd);
    len
}
