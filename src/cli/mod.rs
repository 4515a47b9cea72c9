//! The command line: parse, call the library, print. Errors are one line and exit code 2.

mod args;
mod bump_arena;
mod classes;
mod layout;
mod report;
mod table;
mod validate;

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

#[derive(Subcommand, Debug)]
enum Command {
    /// The main job: every table, chart and validation result into reports/.
    Report(report::ReportArgs),
    /// The second seed: M vectors with the general allocator, a bump arena, a no-free bump
    /// arena.
    #[command(visible_alias = "arena")]
    BumpArena(bump_arena::BumpArenaArgs),
    /// Print every size class of a jemalloc build.
    Classes(classes::ClassesArgs),
    /// Any list of arrays: one allocation each (split) vs one allocation (unified).
    Layout(layout::LayoutArgs),
    /// Footprint of F14 vector tables, split vs unified, over value and table sizes.
    Table(table::TableArgs),
    /// Check the model against the running jemalloc: class table, nallocx, real allocations.
    Validate(validate::ValidateArgs),
}

/// Runs the command line and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) || err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            {
                let _ = err.print();
                return if err.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                    2
                } else {
                    0
                };
            }
            // clap's first line names the bad value; the usage that follows is noise here.
            let text = err.render().to_string();
            eprintln!("{}", text.lines().next().unwrap_or("error: bad arguments"));
            return 2;
        }
    };
    let result = match cli.command {
        Command::Report(args) => report::run(args),
        Command::BumpArena(args) => bump_arena::run(args),
        Command::Classes(args) => classes::run(args),
        Command::Table(args) => table::run(args),
        Command::Layout(args) => layout::run(args),
        Command::Validate(args) => validate::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", one_line(&err));
            2
        }
    }
}

/// The error and its causes on one line.
fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ").replace('\n', " ")
}
