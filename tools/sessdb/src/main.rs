//! The `sessdb` command-line tool.

#![forbid(unsafe_code)]

mod demo;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// sessdb: an embedded, event-sourced store for LLM-agent sessions.
#[derive(Debug, Parser)]
#[command(
    name = "sessdb",
    version,
    about,
    after_help = "Examples:\n  sessdb demo\n  sessdb demo --seed 7 --sessions 10"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Generate a realistic DSH-style workload, run it through the session model, and print a
    /// summary.
    Demo(demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sessdb: {e}");
            ExitCode::from(1)
        }
    }
}
