//! `sessdb completions SHELL` and `sessdb man`: generated from the clap definitions, so they
//! cannot drift from the commands.

use crate::error::{CliError, CliResult, code};
use crate::out::print;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {}

/// Prints the completion script for `a.shell`.
pub fn completions(a: &CompletionsArgs, mut command: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut command, "sessdb", &mut out);
    print(&out);
    Ok(code::OK)
}

/// Prints the man page (roff).
pub fn man(command: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut out)
        .map_err(|e| CliError::new(code::OTHER, format!("cannot render the man page: {e}")))?;
    print(&out);
    Ok(code::OK)
}
