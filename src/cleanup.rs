//! What to undo if the program is interrupted: temporary folders to remove and child
//! processes to stop. Library code registers them while they exist; the command line's
//! interrupt handler ([`signals`]) asks [`take_interrupt`] what a signal does and calls
//! [`run_all`] before exiting.
//!
//! A job that must outlive the first interrupt (a recording: the program got the same
//! Ctrl-C and its trace is still to be written) holds a [`Deferral`]: the first signal is
//! only noted (and passed on to the processes registered with [`forward_interrupt_to`] when
//! a process sent it), the second stops as usual, leaving the folders registered with
//! [`keep_on_interrupt`] in place.

pub(crate) mod signals;

pub use signals::Interrupt;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Default)]
struct Pending {
    next: u64,
    dirs: Vec<(u64, PathBuf)>,
    children: Vec<(u64, u32)>,
    /// Folders kept on a stop, with what to tell the user about them.
    kept: Vec<(u64, PathBuf, String)>,
    /// Held deferrals and the interrupt each took (`None`: still waiting for one).
    deferrals: Vec<(u64, Option<Interrupt>)>,
    /// Processes a deferred interrupt is passed on to: sent by a process (a terminal's
    /// reached them already), or any (`true`: they left the terminal's process group).
    forward: Vec<(u64, u32, bool)>,
}

static PENDING: Mutex<Pending> = Mutex::new(Pending {
    next: 0,
    dirs: Vec::new(),
    children: Vec::new(),
    kept: Vec::new(),
    deferrals: Vec::new(),
    forward: Vec::new(),
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
        p.kept.retain(|(id, _, _)| *id != self.0);
        p.forward.retain(|(id, _, _)| *id != self.0);
    }
}

fn register(add: impl FnOnce(&mut Pending, u64)) -> Registration {
    let mut p = pending();
    p.next += 1;
    let id = p.next;
    add(&mut p, id);
    Registration(id)
}

/// Remove `dir` (and everything in it), or the file at that path, on interrupt.
pub(crate) fn remove_on_interrupt(dir: &Path) -> Registration {
    register(|p, id| p.dirs.push((id, dir.to_path_buf())))
}

/// Stop the child process `pid` on interrupt.
pub fn stop_on_interrupt(pid: u32) -> Registration {
    register(|p, id| p.children.push((id, pid)))
}

/// Keep the folder `dir` on interrupt, and tell the user `note` about it; a folder with
/// nothing in it is removed instead (it holds nothing to keep).
pub fn keep_on_interrupt(dir: &Path, note: String) -> Registration {
    register(|p, id| p.kept.push((id, dir.to_path_buf(), note)))
}

/// Pass a deferred interrupt that a process sent on to process `pid` (a terminal's signal
/// reached it already).
pub fn forward_interrupt_to(pid: u32) -> Registration {
    register(|p, id| p.forward.push((id, pid, false)))
}

/// A process the recorded program left running, re-parented to fragsim (not started by it,
/// so not a [`GuardedChild`]): any deferred interrupt is passed on to it (it may have left
/// the terminal's process group, as a daemon does), and a stop kills it.
pub(crate) fn guard_orphan(pid: u32) -> [Registration; 2] {
    [
        register(|p, id| p.forward.push((id, pid, true))),
        stop_on_interrupt(pid),
    ]
}

/// While held, the first interrupt is noted instead of stopping the program.
#[must_use = "the deferral ends when this is dropped"]
pub struct Deferral(u64);

/// Defers the first interrupt signal until the returned value is dropped.
pub(crate) fn defer_first_interrupt() -> Deferral {
    let mut p = pending();
    p.next += 1;
    let id = p.next;
    p.deferrals.push((id, None));
    Deferral(id)
}

impl Deferral {
    /// The interrupt this deferral took, if one came.
    pub fn interrupted(&self) -> Option<Interrupt> {
        let p = pending();
        p.deferrals.iter().find(|(id, _)| *id == self.0)?.1
    }
}

impl Drop for Deferral {
    fn drop(&mut self) {
        pending().deferrals.retain(|(id, _)| *id != self.0);
    }
}

/// What an interrupt does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Taken {
    /// A [`Deferral`] took it: the job goes on.
    Deferred,
    /// Stop: [`run_all`], then exit.
    Stop,
}

/// Decides what `interrupt` does: deferred if a [`Deferral`] is waiting for its first one
/// (then passed on to the registered processes: those registered for any interrupt, the
/// others if a process sent it), else stop.
pub fn take_interrupt(interrupt: Interrupt) -> Taken {
    let mut p = pending();
    let mut took = false;
    for (_, taken) in p.deferrals.iter_mut().filter(|(_, t)| t.is_none()) {
        *taken = Some(interrupt);
        took = true;
    }
    if !took {
        return Taken::Stop;
    }
    for (_, pid, any) in &p.forward {
        if interrupt.from_process || *any {
            // SAFETY: kill(2) has no memory effects; the process is registered while it runs.
            unsafe {
                libc::kill(*pid as libc::pid_t, interrupt.signal);
            }
        }
    }
    Taken::Deferred
}

/// Stops every registered child and removes every registered folder (children first: they
/// may be writing into the folders); the folders to keep stay, and their notes are returned
/// for the user.
pub fn run_all() -> Vec<String> {
    let mut p = pending();
    for (_, pid) in p.children.drain(..) {
        // SAFETY: kill(2) has no memory effects; a child that has already exited (or a
        // reused pid, unlikely within the registration) only makes it fail or miss.
        #[cfg(unix)]
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
    let kept: Vec<(u64, PathBuf, String)> = p.kept.drain(..).collect();
    let keep = |path: &Path| kept.iter().any(|(_, k, _)| k == path && has_files(k));
    for (_, path) in p.dirs.drain(..) {
        if !keep(&path) {
            remove_while_written(&path);
        }
    }
    let mut notes = Vec::new();
    for (_, path, note) in kept {
        if has_files(&path) {
            notes.push(note);
        } else {
            let _ = std::fs::remove_dir(&path);
        }
    }
    notes
}

/// Whether the folder `dir` holds anything.
fn has_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
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
