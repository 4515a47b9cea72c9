//! The child side of the one-arena live replay (`fragsim __replay-live-child TRACE`): it
//! opens the trace itself, replays it in a private arena and prints snapshot lines; and the
//! parent's end of it ([`ChildReplay`]), read by [`super::arena_replay`]'s comparison.

use super::arena_replay::LiveArena;
use super::snapshot_line::{parse_snapshot, write_snapshot};
use crate::live::Api;
use crate::sim::Snapshot;
use crate::sizeclass::AllocatorConfig;
use anyhow::{bail, ensure, Context, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::Command;

/// The jemalloc a live-replay child runs: the linked one with this
/// `disable_large_size_classes`, or a system library preloaded.
pub(super) enum ChildAllocator {
    Linked(bool),
    System(std::path::PathBuf),
}

/// The child's side: opens the trace at `path` itself, replays its calls in a private arena,
/// and prints the build (JSON), then one snapshot line every `every` calls and after the last.
pub fn serve_child(path: &Path, every: u64, api: Api, out: &mut impl Write) -> Result<()> {
    let events = crate::trace::open(path)?.events();
    let config = api.config()?;
    writeln!(out, "{}", serde_json::to_string(&config)?)?;
    let mut live = LiveArena::with_api(api)?;
    let every = every.max(1);
    let mut calls = 0u64;
    for event in events {
        // An error line ends the replay; the parent reports it where it reads it.
        let applied = event
            .map_err(anyhow::Error::from)
            .and_then(|e| live.apply(e));
        if let Err(err) = applied {
            writeln!(out, "error {err:#}")?;
            out.flush()?;
            return Ok(());
        }
        calls += 1;
        if calls.is_multiple_of(every) {
            write_snapshot(out, &live.snapshot()?)?;
        }
    }
    if !calls.is_multiple_of(every) {
        write_snapshot(out, &live.snapshot()?)?;
    }
    out.flush()?;
    Ok(())
}

/// The child's options besides the build's own: decay off, and one automatic arena. The
/// replay runs in an arena of its own (`arenas.create`), which neither option's arena count
/// touches; but every statistics refresh (`epoch`, before each snapshot) merges every
/// initialized arena, and with the default count the child's first allocation initializes
/// a second automatic one beside arena 0 (`arena_choose_hard`): `narenas:1` keeps the thread
/// on arena 0, so each refresh merges two arenas instead of three.
const CHILD_CONF: &str = "dirty_decay_ms:-1,muzzy_decay_ms:-1,narenas:1";

/// The live-replay child's command line for `how`, reading the trace at `trace`; and the
/// `disable_large_size_classes` its jemalloc must report (`None`: a system jemalloc, which
/// has its own).
fn child_command(
    exe: &Path,
    how: &ChildAllocator,
    trace: &Path,
    every: u64,
) -> Result<(Command, Option<bool>)> {
    let mut command = Command::new(exe);
    command
        .args(["__replay-live-child", "--every", &every.max(1).to_string()])
        .arg(trace);
    let expect_rounding = match how {
        ChildAllocator::Linked(v) => {
            command.env(
                "_RJEM_MALLOC_CONF",
                format!("disable_large_size_classes:{v},{CHILD_CONF}"),
            );
            Some(*v)
        }
        ChildAllocator::System(lib) => {
            ensure!(lib.is_file(), "no jemalloc library at '{}'", lib.display());
            command
                .arg("--system")
                .env("LD_PRELOAD", lib)
                .env("MALLOC_CONF", CHILD_CONF);
            None
        }
    };
    Ok((command, expect_rounding))
}

/// A live-replay child: its snapshot lines, read as the parent reaches each compared call.
pub(super) struct ChildReplay {
    child: crate::cleanup::GuardedChild,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl ChildReplay {
    /// Starts the child on `trace` and reads its header: the build its jemalloc runs.
    pub(super) fn start(
        exe: &Path,
        how: &ChildAllocator,
        trace: &Path,
        every: u64,
    ) -> Result<(AllocatorConfig, ChildReplay)> {
        let (mut command, expect_rounding) = child_command(exe, how, trace, every)?;
        let mut child = super::process::spawn_piped(exe, &mut command)?;
        let stdout = child.stdout.take().context("child stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let header = match lines.next() {
            Some(line) => line?,
            None => {
                let err = stderr_of(&mut child);
                let _ = child.wait();
                bail!("the live replay child printed nothing: {}", err.trim());
            }
        };
        let config: AllocatorConfig = parse_config(&header)?;
        if let Some(v) = expect_rounding {
            ensure!(
                config.large_page_rounding == v,
                "the child's jemalloc ignored disable_large_size_classes:{v} (this build has no such option?)"
            );
        }
        Ok((config, ChildReplay { child, lines }))
    }

    pub(super) fn snapshot(&mut self) -> Result<Snapshot> {
        let line = self.lines.next().context("the child stopped early")??;
        parse_snapshot(&line)
    }

    pub(super) fn wait(mut self) -> Result<()> {
        let status = self.child.wait()?;
        if !status.success() {
            let err = stderr_of(&mut self.child);
            bail!("the live replay child failed: {}", err.trim());
        }
        Ok(())
    }
}

fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// The child's header: the build as JSON (`AllocatorConfig`'s serialised form, written from
/// the child's [`Api::config`]), checked as any build is.
pub(crate) fn parse_config(line: &str) -> Result<AllocatorConfig> {
    let config: AllocatorConfig = serde_json::from_str(line).context("child header")?;
    config.validate()?;
    Ok(config)
}
