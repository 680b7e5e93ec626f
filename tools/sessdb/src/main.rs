//! `sessdb`: look into, move and check sessdb session stores.

#![forbid(unsafe_code)]

mod cmd;
mod error;
mod out;

use std::process::ExitCode;

use clap::Parser;

const AFTER_HELP: &str = "\
Examples:
  sessdb demo                                   generate a workload into ./sessdb-demo
  sessdb ls ./sessdb-demo                       list its sessions
  sessdb show ./sessdb-demo SESSION --messages --json
  sessdb tail ./sessdb-demo SESSION -n 5 -f     follow a session
  sessdb import ./store --jsonl ~/.dsh/sessions import DSH sessions
  sessdb export ./store --sqlite out.sqlite     export to SQLite
  sessdb verify ./store                         check every record and the checkpoint

Exit codes:
  0  success
  1  other error (I/O, internal)
  2  usage error
  3  corruption found (verify, or any command reading a damaged store)
  4  input refused (validation, an unreadable or unsupported input file, an import
     conflict, a refused fork, a path that is not the command's to overwrite)
  5  store locked by another writer
  6  not found (no store at the path, no such session)";

/// sessdb: an embedded, event-sourced store for LLM-agent sessions (DSH format v0).
#[derive(Debug, Parser)]
#[command(name = "sessdb", version, about, after_help = AFTER_HELP)]
struct Cli {
    /// No progress bars or notes on stderr (warnings about data are always shown).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: cmd::Command,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // Asked for JSON: the usage error as JSON too (on stdout, as every other error),
            // beside clap's own text on stderr.
            if std::env::args_os().skip(1).any(|a| a == "--json") {
                let text = e.render().to_string();
                let first = text.lines().next().unwrap_or_default();
                let message = first.strip_prefix("error: ").unwrap_or(first);
                let err = error::CliError::new(error::code::USAGE, message).hint(
                    "`sessdb --help` lists the commands, `sessdb COMMAND --help` their options",
                );
                out::print_json(&err.to_json());
            }
            let _ = e.print();
            return ExitCode::from(error::code::USAGE);
        }
        // `--help`, `--version`: output on stdout under the rule every command's output
        // follows (`out::print`: a full disk is exit 1 with the error, not a silent exit 0).
        Err(e) => {
            out::print(e.render().to_string().as_bytes());
            return ExitCode::from(error::code::OK);
        }
    };
    let json = cli.command.wants_json();
    let store = cli.command.store().map(std::path::Path::to_path_buf);
    match cmd::run(
        cli.command,
        cli.quiet,
        <Cli as clap::CommandFactory>::command(),
    ) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let e = e.naming(store.as_deref());
            if json {
                out::print_json(&e.to_json());
            }
            eprintln!("sessdb: {e}");
            ExitCode::from(e.code)
        }
    }
}
