//! With `--follow-forks`, the processes the program leaves running when it exits (a daemon
//! made by `daemon()` or a double fork, a server's workers, a script's `cmd &`) are recorded
//! until they exit too. While it records, fragsim is their reaper
//! (`PR_SET_CHILD_SUBREAPER`): orphans of the program are re-parented to it, not to init, so
//! it can tell they still run and wait for them. Before, their traces were converted while
//! they still wrote them (empty, said to be killed) and their raw files removed under them.

use std::path::Path;

/// The process is the reaper of its orphaned descendants while this is held.
pub(crate) struct Reaper(());

impl Reaper {
    /// Becomes the reaper (`None` where the kernel refuses: orphans then go to init, as
    /// before, and are not waited for).
    pub(crate) fn adopt() -> Option<Reaper> {
        // SAFETY: prctl with this option only sets a flag of this process.
        let ok = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } == 0;
        ok.then_some(Reaper(()))
    }
}

impl Drop for Reaper {
    fn drop(&mut self) {
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
    }
}

/// A process still running, by pid, with its command line (as `/proc` has it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    pub pid: u32,
    pub command: String,
}

/// This process's children now: once the program has exited, the processes it left
/// running (re-parented here).
pub(crate) fn children() -> Vec<Running> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut found: Vec<Running> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| parent_of(pid) == Some(me))
        .map(|pid| Running {
            pid,
            command: command_of(pid),
        })
        .collect();
    found.sort_by_key(|r| r.pid);
    found
}

/// The parent of `pid` (the fourth field of `/proc/PID/stat`, after the name in parentheses,
/// which may hold anything).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

fn command_of(pid: u32) -> String {
    let raw =
        std::fs::read(Path::new("/proc").join(pid.to_string()).join("cmdline")).unwrap_or_default();
    raw.split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Waits until this process has no child left, reaping each one. While it waits, an
/// interrupt is passed on to them (they may have left the terminal's process group, as a
/// daemon does), and a stop kills them.
pub(crate) fn wait_for_all() {
    let mut registered: Vec<(u32, [crate::cleanup::Registration; 2])> = Vec::new();
    loop {
        for running in children() {
            if !registered.iter().any(|(pid, _)| *pid == running.pid) {
                registered.push((running.pid, crate::cleanup::guard_orphan(running.pid)));
            }
        }
        let mut status = 0;
        // SAFETY: waitpid writes the status; -1 waits for any child.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            // Its pid may be reused: nothing is sent to it any more.
            registered.retain(|(p, _)| *p != pid as u32);
            continue;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}
