//! Standard output for every command, one mechanism: a closed pipe (`fragsim ... | head`) ends
//! the program quietly with exit code 141, as Unix tools do; any other write error (a full
//! disk) is a one-line error. Never `print!`/`println!`, which panic on both.
//!
//! Use: `output::print_text(&text)?` or `outln!("{x}")?` inside a command returning
//! `anyhow::Result`; [`exit_code`] in `cli::main` turns the error into the exit code.

use std::io::{self, Write};

/// Exit code after a closed pipe: 128 + SIGPIPE, what a shell reports for a tool killed by it.
pub(crate) const CLOSED_PIPE_EXIT: i32 = 141;

/// Standard output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The reader went away; not worth a message.
    #[error("standard output was closed")]
    Closed,
    /// Anything else, e.g. `No space left on device`.
    #[error("cannot write to standard output: {0}")]
    Failed(io::Error),
}

impl From<io::Error> for OutputError {
    fn from(err: io::Error) -> Self {
        if err.kind() == io::ErrorKind::BrokenPipe {
            OutputError::Closed
        } else {
            OutputError::Failed(err)
        }
    }
}

/// Writes `text` to standard output and flushes it, so errors surface here and now.
pub fn print_text(text: &str) -> Result<(), OutputError> {
    let mut stdout = io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Writes a line to standard error; if even that fails there is no one left to tell.
pub(crate) fn print_error(line: &str) {
    let _ = writeln!(io::stderr().lock(), "{line}");
}

/// `println!` through `print_text`: `outln!("{x}")?`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::cli::output::print_text("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::output::print_text(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// The exit code for a failed command, printing its one-line message unless it was a closed
/// pipe: 141 quietly for a closed pipe, otherwise 2.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    // Also a file output that is a closed pipe (`--timeline /dev/stdout | head`).
    let closed = err.chain().any(|cause| {
        matches!(cause.downcast_ref(), Some(OutputError::Closed))
            || cause
                .downcast_ref::<crate::export::WriteError>()
                .is_some_and(|e| e.kind == io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    });
    if closed {
        return CLOSED_PIPE_EXIT;
    }
    print_error(&format!("error: {}", one_line(err)));
    2
}

/// The error and its causes on one line.
pub(crate) fn one_line(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ").replace('\n', " ")
}

/// Prints clap's message whole (it names the missing argument and suggests fixes for typos)
/// and returns its exit code: 0 for help and version, 2 for bad arguments. A misspelt
/// subcommand is never pointed to one of `hidden` (the internal child commands).
pub(crate) fn clap_exit(err: &clap::Error, hidden: &[String]) -> i32 {
    use clap::error::ErrorKind;
    if err.kind() == ErrorKind::InvalidSubcommand {
        if let Some(line) = unknown_subcommand(err, hidden) {
            print_error(&line);
            return 2;
        }
    }
    let text = err.render().to_string();
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Help goes to standard output, which may be a closed pipe.
            match print_text(&text) {
                Err(OutputError::Closed) => CLOSED_PIPE_EXIT,
                Err(e) => {
                    print_error(&format!("error: {e}"));
                    2
                }
                Ok(()) => 0,
            }
        }
        // `fragsim` (or `fragsim trace`) alone: the usage, not just the tagline, and exit 2.
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = write!(io::stderr().lock(), "{text}");
            2
        }
        _ => {
            print_error(&clap_one_line(&text));
            2
        }
    }
}

/// clap's "unrecognized subcommand" message with the suggestions that are not hidden
/// commands (clap suggests those too), or `None` when clap gave no subcommand name.
fn unknown_subcommand(err: &clap::Error, hidden: &[String]) -> Option<String> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(given)) = err.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    let suggested: Vec<&String> = match err.get(ContextKind::SuggestedSubcommand) {
        Some(ContextValue::Strings(names)) => names.iter().collect(),
        Some(ContextValue::String(name)) => vec![name],
        _ => Vec::new(),
    };
    let shown: Vec<String> = suggested
        .into_iter()
        .filter(|name| !hidden.contains(name))
        .map(|name| format!("'{name}'"))
        .collect();
    let mut line = format!("error: unrecognized subcommand '{given}'");
    match shown.as_slice() {
        [] => line.push_str("; see 'fragsim --help'"),
        [one] => line.push_str(&format!("; tip: a similar subcommand exists: {one}")),
        many => line.push_str(&format!(
            "; tip: some similar subcommands exist: {}",
            many.join(", ")
        )),
    }
    Some(line)
}

/// clap's message on one line, everything it says before the usage: "error: the following
/// required arguments were not provided: --array <ARRAYS>", "error: unexpected argument
/// '--formt' found; tip: a similar argument exists: '--format'".
fn clap_one_line(text: &str) -> String {
    let mut line = String::new();
    for part in text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        if !line.is_empty() {
            line.push_str(if part.starts_with("tip:") { "; " } else { " " });
        }
        line.push_str(part);
    }
    line
}

/// On Ctrl-C (or SIGTERM, SIGHUP): stop the child processes and remove the temporary folders
/// registered in [`crate::cleanup`], say what was kept, then exit with 128 + the signal. A job
/// that defers the first interrupt (`record`) goes on after it, told so on stderr.
pub(crate) fn stop_cleanly_on_interrupt() {
    // Fails only if a handler is already installed (a second call): keep that one.
    let _ = crate::cleanup::signals::install(|interrupt| {
        match crate::cleanup::take_interrupt(interrupt) {
            crate::cleanup::Taken::Deferred => print_error(&format!(
                "fragsim: {}: the recording goes on until the program exits, then its trace is written (another signal stops at once, keeping the recorder's raw files)",
                interrupt.name()
            )),
            crate::cleanup::Taken::Stop => {
                for note in crate::cleanup::run_all() {
                    print_error(&note);
                }
                std::process::exit(interrupt.exit_code());
            }
        }
    });
}
