//! The command line: parse, call the library, print. Errors are one line and exit code 2.

mod advise;
mod args;
mod blame;
mod bump_arena;
mod choice;
mod classes;
mod clock_compare;
mod completions;
mod container;
mod containers;
mod layout;
mod measure;
pub(crate) mod output;
mod process;
mod progress;
mod project;
mod record;
mod record_native;
mod replay;
mod replay_args;
mod report;
mod route;
mod stats_json;
mod table;
mod trace;
mod validate;
mod view;
mod whatif;

use clap::{Parser, Subcommand};

pub use args::{AllocatorArgs, OutputArgs};

#[derive(Parser, Debug)]
#[command(
    name = "fragsim",
    version,
    about = "What a data-structure layout really costs under jemalloc's size classes"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// Parsed once per run: the size of the largest variant (replay's many flags) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: every table, chart and validation result into reports/.
    Report(report::ReportArgs),
    /// The second seed: M vectors with the general allocator, a bump arena, a no-free bump
    /// arena.
    #[command(visible_alias = "arena")]
    BumpArena(bump_arena::BumpArenaArgs),
    /// One real container grown to N: every allocator request, priced step by step.
    Container(container::ContainerArgs),
    /// Every container side by side for one element type; split vs unified per container.
    Containers(containers::ContainersArgs),
    /// Print every size class of a jemalloc build.
    Classes(classes::ClassesArgs),
    /// Any list of arrays: one allocation each (split) vs one allocation (unified).
    Layout(layout::LayoutArgs),
    /// Footprint of F14 vector tables, split vs unified, over value and table sizes.
    Table(table::TableArgs),
    /// Check the model against the running jemalloc: class table, nallocx, real allocations.
    Validate(validate::ValidateArgs),
    /// Replay an allocation trace through the arena model (--live: and the real jemalloc;
    /// --preset a,b,c: under several builds, what-if).
    Replay(replay_args::ReplayArgs),
    /// Internal: the child process of a live replay.
    #[command(name = "__replay-live-child", hide = true)]
    ReplayLiveChild(replay::ChildArgs),
    /// Internal: the child process of `replay --measure`.
    #[command(name = "__measure-child", hide = true)]
    MeasureChild(measure::MeasureChildArgs),
    /// Internal: the child process of a live process (baton) replay.
    #[command(name = "__process-live-child", hide = true)]
    ProcessLiveChild(stats_json::ChildArgs),
    /// Allocation traces: import (valgrind, text), dump, stats.
    Trace(trace::TraceArgs),
    /// Run a program and record its allocations (threads, times, optionally call stacks).
    Record(record::RecordArgs),
    /// Which MALLOC_CONF would lower this trace's memory: the process model under a grid of
    /// run-time options, ranked, the recommended ones checked live.
    Advise(advise::AdviseArgs),
    /// One self-contained HTML page to explore a trace in a browser: the timeline, the waste
    /// flame graph at any moment (a slider), the waste by site and the size classes.
    View(view::ViewArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
}

/// The internal child commands' names, never offered to a user as a suggestion.
fn hidden_subcommands() -> Vec<String> {
    use clap::CommandFactory;
    Cli::command()
        .get_subcommands()
        .filter(|c| c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => return output::clap_exit(&err, &hidden_subcommands()),
    };
    // The process child starts no thread of its own (an interrupt handler's thread would
    // take an automatic arena before the trace's threads).
    if let Command::ProcessLiveChild(args) = cli.command {
        return stats_json::run_child(args).unwrap_or_else(|err| output::exit_code(&err));
    }
    // Not in a measuring child: the handler's thread would start (stack, glibc arena) while
    // the child measures its baseline. The parent stops the child on interrupt.
    if !matches!(cli.command, Command::MeasureChild(_)) {
        output::stop_cleanly_on_interrupt();
    }
    let result = match cli.command {
        Command::Report(args) => report::run(args),
        Command::BumpArena(args) => bump_arena::run(args),
        Command::Classes(args) => classes::run(args),
        Command::Container(args) => container::run(args),
        Command::Containers(args) => containers::run(args),
        Command::Table(args) => table::run(args),
        Command::Layout(args) => layout::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Replay(args) => replay::run(args),
        Command::ReplayLiveChild(args) => replay::run_child(args),
        Command::MeasureChild(args) => measure::run_child(args),
        Command::ProcessLiveChild(_) => unreachable!("handled above"),
        Command::Trace(args) => trace::run(args),
        Command::Record(args) => record::run(args),
        Command::Advise(args) => advise::run(args),
        Command::View(args) => view::run(args),
        Command::Completions(args) => completions::run(args),
    };
    result.unwrap_or_else(|err| output::exit_code(&err))
}
