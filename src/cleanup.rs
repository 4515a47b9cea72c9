//! What to undo if the program is interrupted: temporary folders to remove and child
//! processes to stop. Library code registers them while they exist; the command line's
//! interrupt handler calls [`run_all`] before exiting.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Default)]
struct Pending {
    next: u64,
    dirs: Vec<(u64, PathBuf)>,
    children: Vec<(u64, u32)>,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    next: 0,
    dirs: Vec::new(),
    children: Vec::new(),
});

fn pending() -> std::sync::MutexGuard<'static, Pending> {
    // A panic while holding the lock leaves plain data behind; still usable.
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps something registered until dropped.
#[must_use = "the registration ends when this is dropped"]
pub struct Registration(u64);

impl Drop for Registration {
    fn drop(&mut self) {
        let mut p = pending();
        p.dirs.retain(|(id, _)| *id != self.0);
        p.children.retain(|(id, _)| *id != self.0);
    }
}

/// Remove `dir` (and everything in it), or the file at that path, on interrupt.
pub fn remove_on_interrupt(dir: &Path) -> Registration {
    let mut p = pending();
    p.next += 1;
    let id = p.next;
    p.dirs.push((id, dir.to_path_buf()));
    Registration(id)
}

/// Stop the child process `pid` on interrupt.
pub fn stop_on_interrupt(pid: u32) -> Registration {
    let mut p = pending();
    p.next += 1;
    let id = p.next;
    p.children.push((id, pid));
    Registration(id)
}

/// Stops every registered child and removes every registered folder (children first: they
/// may be writing into the folders).
pub fn run_all() {
    let mut p = pending();
    for (_, pid) in p.children.drain(..) {
        // SAFETY: kill(2) has no memory effects; a child that has already exited (or a
        // reused pid, unlikely within the registration) only makes it fail or miss.
        #[cfg(unix)]
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    for (_, path) in p.dirs.drain(..) {
        remove_while_written(&path);
    }
}

/// Removes `path` while the main thread may still be writing into it: renamed away first, so
/// new files under the old name fail instead of landing beside the ones being removed; then
/// removed again if a writer recreated the folder in the meantime.
fn remove_while_written(path: &Path) {
    if std::fs::remove_file(path).is_ok() {
        return;
    }
    let mut trash = path.as_os_str().to_owned();
    trash.push(".removing");
    let trash = PathBuf::from(trash);
    match std::fs::rename(path, &trash) {
        Ok(()) => {
            let _ = std::fs::remove_dir_all(&trash);
        }
        Err(_) => {
            let _ = std::fs::remove_dir_all(path);
        }
    }
    if path.exists() {
        let _ = std::fs::remove_dir_all(path);
    }
}

/// A child process that is stopped if the program is interrupted while it runs: the one way
/// fragsim starts a child it waits for. It derefs to the [`Child`](std::process::Child), so
/// its pipes are taken and it is waited for as usual; the registration ends when it is dropped.
pub struct GuardedChild {
    child: std::process::Child,
    _registration: Registration,
}

impl GuardedChild {
    /// Starts `command` and registers the child to be stopped on interrupt.
    pub fn spawn(command: &mut std::process::Command) -> std::io::Result<GuardedChild> {
        let child = command.spawn()?;
        let registration = stop_on_interrupt(child.id());
        Ok(GuardedChild {
            child,
            _registration: registration,
        })
    }

    /// Waits for the child to exit, collecting the stdout and stderr it was given pipes for.
    pub fn wait_with_output(self) -> std::io::Result<std::process::Output> {
        let GuardedChild {
            child,
            _registration,
        } = self;
        child.wait_with_output()
    }
}

impl std::ops::Deref for GuardedChild {
    type Target = std::process::Child;

    fn deref(&self) -> &std::process::Child {
        &self.child
    }
}

impl std::ops::DerefMut for GuardedChild {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.child
    }
}

/// Runs `command` with stdin closed and stdout and stderr collected, stopped on interrupt.
pub fn output(command: &mut std::process::Command) -> std::io::Result<std::process::Output> {
    use std::process::Stdio;
    let command = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    GuardedChild::spawn(command)?.wait_with_output()
}
