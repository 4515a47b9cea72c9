//! The interrupt signals (SIGINT, SIGTERM, SIGHUP) handed to a thread as [`Interrupt`]s: the
//! handler itself only writes the signal's number and origin to a pipe (async-signal-safe),
//! and a thread of the command line's reads them in order and decides.

use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals that ask fragsim to stop.
pub const INTERRUPTS: [c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// One interrupt signal received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interrupt {
    pub signal: i32,
    /// Sent by a process (`kill`, `sigqueue`), which may have aimed at fragsim alone; not by
    /// the kernel for a terminal (Ctrl-C, a hang-up), which signals the whole foreground
    /// process group, the recorded program included.
    pub from_process: bool,
}

impl Interrupt {
    /// `SIGINT`, `SIGTERM`, `SIGHUP`.
    pub fn name(&self) -> String {
        match self.signal {
            libc::SIGINT => "SIGINT".into(),
            libc::SIGTERM => "SIGTERM".into(),
            libc::SIGHUP => "SIGHUP".into(),
            n => format!("signal {n}"),
        }
    }

    /// What a shell reports for a process this signal ended: 128 + its number.
    pub fn exit_code(&self) -> i32 {
        128 + self.signal
    }
}

/// The pipe's write end (-1 before [`install`]).
static PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(signal: c_int, info: *mut libc::siginfo_t, _: *mut c_void) {
    // SAFETY: only async-signal-safe calls (write) and reads of the kernel's siginfo; errno
    // is kept for the code the signal interrupted.
    unsafe {
        let errno = *libc::__errno_location();
        let code = if info.is_null() { 0 } else { (*info).si_code };
        // SI_USER (0), SI_QUEUE (-1), SI_TKILL (-6)...: a process; SI_KERNEL (0x80): a terminal.
        let message = [signal as u8, u8::from(code <= 0)];
        let fd = PIPE.load(Ordering::Relaxed);
        libc::write(fd, message.as_ptr() as *const c_void, message.len());
        *libc::__errno_location() = errno;
    }
}

/// Installs the handler for [`INTERRUPTS`] and starts the thread that calls `handle` for each
/// signal, in the order they came. A second call fails (the first handler stays).
pub fn install(handle: impl Fn(Interrupt) + Send + 'static) -> std::io::Result<()> {
    let mut fds = [0 as c_int; 2];
    // SAFETY: pipe2 writes two descriptors into `fds`.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read_end, write_end] = fds;
    // A full pipe drops the signal rather than block the handler (64 KiB of unread signals).
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe { libc::fcntl(write_end, libc::F_SETFL, libc::O_NONBLOCK) };
    if PIPE
        .compare_exchange(-1, write_end, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        // SAFETY: closing the descriptors made above.
        unsafe {
            libc::close(read_end);
            libc::close(write_end);
        }
        return Err(std::io::Error::other(
            "the interrupt handler is installed already",
        ));
    }
    std::thread::Builder::new()
        .name("interrupts".into())
        .spawn(move || watch(read_end, handle))?;
    for signal in INTERRUPTS {
        // SAFETY: a zeroed sigaction with a handler of the SA_SIGINFO signature; SA_RESTART
        // so the main thread's system calls go on as if nothing happened.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    Ok(())
}

/// The thread that reads the pipe: one [`Interrupt`] per two bytes.
fn watch(read_end: c_int, handle: impl Fn(Interrupt)) {
    loop {
        let mut message = [0u8; 2];
        // SAFETY: reads at most two bytes into `message`. The handler's two-byte writes are
        // atomic (below PIPE_BUF), so a message is never split.
        let n = unsafe { libc::read(read_end, message.as_mut_ptr() as *mut c_void, 2) };
        match n {
            2 => handle(Interrupt {
                signal: i32::from(message[0]),
                from_process: message[1] != 0,
            }),
            n if n < 0
                && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}
