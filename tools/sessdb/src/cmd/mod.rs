//! The commands.

mod backup;
mod compact;
pub mod completions;
mod delete;
mod demo;
mod export;
mod fork;
mod import;
mod ls;
mod repair;
mod ship;
mod show;
mod stats;
mod stress;
mod tail;
mod verify;

use std::path::{Path, PathBuf};

use clap::Subcommand;
use sessdb::{Store, StoreOptions};

use crate::error::{CliError, CliResult, code, no_store};

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate a realistic DSH workload into a store, export it to JSONL and SQLite beside it,
    /// verify, and print a summary.
    Demo(demo::Args),
    /// List the sessions of a store.
    Ls(ls::Args),
    /// Print a session's events (DSH JSONL lines), surface or derived messages.
    Show(show::Args),
    /// Print the last events of a session; with -f, follow new ones.
    Tail(tail::Args),
    /// Import DSH JSONL sessions or a SQLite export (creates the store if needed).
    Import(import::Args),
    /// Export sessions to the DSH JSONL layout or to a SQLite database.
    Export(export::Args),
    /// Delete sessions by id, or every session last written longer ago than --older-than
    /// (a Delete record each; forks keep what they inherited; `compact` then removes their
    /// records from the files); prints each one (--dry-run: each it would delete).
    Delete(delete::Args),
    /// Write the log again without the records of deleted sessions: afterwards no file of the
    /// store holds their events (--dry-run prints what would be reclaimed per segment).
    Compact(compact::Args),
    /// Fork a session at a seq (DSH v0 rules); prints the child's id.
    Fork(fork::Args),
    /// Copy the store, beside its writer if one is running, into a new directory: every
    /// session as of one moment, each record checked, ready to open (a copy of the files
    /// with `cp` is not one: it can catch a record half written).
    Backup(backup::Args),
    /// Read every record, check every checksum, compare the checkpoint with a full replay.
    Verify(verify::Args),
    /// Cut a torn tail, then close the open turns of interrupted sessions; with --salvage,
    /// skip damaged records and cut only the sessions that had events in them (--dry-run
    /// prints that plan).
    Repair(repair::Args),
    /// Sessions, events, segments, bytes, checkpoint position, and what opening found.
    Stats(stats::Args),
    /// Append a realistic workload for N seconds, printing `ack <session> <seq>` after every
    /// acknowledged write (for kill loops and disk tests).
    Stress(stress::Args),
    /// Ship every session of a store to PostgreSQL, exactly once; with --follow keep shipping
    /// new records as they are written.
    Ship(ship::ShipArgs),
    /// Bring sessions from PostgreSQL into a store, validated like any import; the store then
    /// owns them (their old store's shipper stops shipping them).
    Pull(ship::PullArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(completions::CompletionsArgs),
    /// Print the man page (roff): `sessdb man > sessdb.1`.
    Man(completions::ManArgs),
}

impl Command {
    /// Whether the command was asked for JSON output: its errors are then JSON on stdout too.
    /// The store the command works on, when it has one (its hints name it).
    pub fn store(&self) -> Option<&Path> {
        Some(match self {
            Command::Demo(a) => &a.store,
            Command::Ls(a) => &a.store,
            Command::Show(a) => &a.store,
            Command::Tail(a) => &a.store,
            Command::Import(a) => &a.store,
            Command::Export(a) => &a.store,
            Command::Delete(a) => &a.store,
            Command::Compact(a) => &a.store,
            Command::Fork(a) => &a.store,
            Command::Backup(a) => &a.store,
            Command::Verify(a) => &a.store,
            Command::Repair(a) => &a.store,
            Command::Stats(a) => &a.store,
            Command::Stress(a) => &a.store,
            Command::Ship(a) => &a.store,
            Command::Pull(a) => &a.store,
            _ => return None,
        })
    }

    pub fn wants_json(&self) -> bool {
        match self {
            Command::Ls(a) => a.json,
            Command::Show(a) => a.json,
            Command::Stats(a) => a.json,
            Command::Verify(a) => a.json,
            Command::Import(a) => a.json,
            Command::Export(a) => a.json,
            Command::Fork(a) => a.json,
            Command::Backup(a) => a.json,
            Command::Delete(a) => a.json,
            Command::Compact(a) => a.json,
            Command::Repair(a) => a.json,
            Command::Ship(a) => a.json,
            Command::Pull(a) => a.json,
            Command::Tail(a) => a.json,
            _ => false,
        }
    }
}

/// Runs one command; returns the exit code.
pub fn run(command: Command, quiet: bool, cli: clap::Command) -> CliResult {
    match command {
        Command::Completions(a) => completions::completions(&a, cli),
        Command::Man(a) => completions::man(&a, cli),
        Command::Demo(a) => demo::run(&a, quiet),
        Command::Ls(a) => ls::run(&a),
        Command::Show(a) => show::run(&a),
        Command::Tail(a) => tail::run(&a),
        Command::Import(a) => import::run(&a, quiet),
        Command::Export(a) => export::run(&a, quiet),
        Command::Fork(a) => fork::run(&a),
        Command::Backup(a) => backup::run(&a),
        Command::Delete(a) => delete::run(&a, quiet),
        Command::Compact(a) => compact::run(&a, quiet),
        Command::Verify(a) => verify::run(&a, quiet),
        Command::Repair(a) => repair::run(&a, quiet),
        Command::Stats(a) => stats::run(&a),
        Command::Stress(a) => stress::run(&a, quiet),
        Command::Ship(a) => ship::ship(&a, quiet),
        Command::Pull(a) => ship::pull(&a, quiet),
    }
}

/// Whether `dir` holds a store.
pub(crate) fn is_store(dir: &Path) -> bool {
    dir.join("segments").is_dir()
}

/// Opens an existing store read-only (works beside a live writer).
pub(crate) fn open_existing(dir: &Path) -> CliResult<Store> {
    if !is_store(dir) {
        return Err(no_store(dir));
    }
    Ok(Store::open_read_only(dir, sessdb::StoreOptions::default())?)
}

/// Lets a read-only store (and what was read from it) go at the command's end without
/// freeing it piece by piece: the process exits next and the system takes its memory back at
/// once (freeing the catalog entries of 100,000 sessions was about a fifth of
/// `sessdb ls -n 20`, docs/PERFORMANCE.md). A read-only store holds no lock, no thread and
/// nothing unwritten; a writer is closed, never left.
pub(crate) fn leave<T>(read: (Store, T)) {
    debug_assert!(read.0.is_read_only(), "only a read-only store is left");
    std::mem::forget(read);
}

/// Opens an existing store for writing; a path that holds no store is refused (only `import`,
/// `demo` and `stress` create stores), so a mistyped path leaves nothing behind.
fn open_store_writer(dir: &Path, options: StoreOptions) -> CliResult<Store> {
    if !is_store(dir) {
        return Err(no_store(dir));
    }
    open_writer(dir, options)
}

/// Opens a store for writing, creating it only in a missing or empty directory: a directory
/// that holds other files (a DSH sessions root, a project) never becomes a store.
fn open_or_create_writer(dir: &Path, options: StoreOptions) -> CliResult<Store> {
    if !is_store(dir) {
        let occupied = match std::fs::read_dir(dir) {
            Ok(mut entries) => entries.next().is_some(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
            Err(_) => true,
        };
        if occupied || dir.is_file() {
            return Err(CliError::new(
                code::REJECTED,
                format!(
                    "{} holds no sessdb store and is not empty: refused (a store is created \
                     only in a new or empty directory)",
                    dir.display()
                ),
            ));
        }
    }
    open_writer(dir, options)
}

/// Opens (creating) a store for writing.
fn open_writer(dir: &Path, options: StoreOptions) -> CliResult<Store> {
    // The lock error says what to do itself (open read-only, or stop the other writer).
    Ok(Store::open(dir, options)?)
}

/// A path argument.
pub type PathArg = PathBuf;
