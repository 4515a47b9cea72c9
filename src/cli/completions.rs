//! `fragsim completions SHELL`: the shell's completion script, generated from the command
//! line's own definition (clap_complete), so it names every subcommand and option there is.

use super::output::print_text;
use anyhow::Result;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

#[derive(Args, Debug)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for (bash: `source <(fragsim completions bash)`; zsh and fish:
    /// write it where the shell looks, e.g. `~/.config/fish/completions/fragsim.fish`).
    shell: Shell,
}

pub fn run(args: CompletionsArgs) -> Result<i32> {
    // The hidden child commands are internal: a shell never offers them.
    let full = super::Cli::command();
    let visible = full.get_subcommands().filter(|c| !c.is_hide_set()).cloned();
    let mut command = clap::Command::new("fragsim")
        .version(env!("CARGO_PKG_VERSION"))
        .subcommands(visible);
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "fragsim", &mut script);
    print_text(&String::from_utf8_lossy(&script))?;
    Ok(0)
}
