//! `sessdb import STORE --jsonl PATH` / `sessdb import STORE --sqlite FILE`

use sessdb::StoreOptions;
use sessdb_formats::jsonl::import_jsonl;
use sessdb_formats::sqlite::import_sqlite;

use crate::cmd::{PathArg, open_writer};
use crate::error::{CliResult, code};
use crate::out::{bar, note, update};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").args(["jsonl", "sqlite"]).required(true)))]
pub struct Args {
    /// The store directory (created if needed).
    store: PathArg,
    /// A DSH sessions root, a session directory, or one session.jsonl[.zstd] file.
    #[arg(long, value_name = "PATH")]
    jsonl: Option<PathArg>,
    /// A SQLite export.
    #[arg(long, value_name = "FILE")]
    sqlite: Option<PathArg>,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    let store = open_writer(&a.store, StoreOptions::default())?;
    let progress = bar(quiet, "importing");
    let mut report_progress = |p| update(&progress, p);
    let report = match (&a.jsonl, &a.sqlite) {
        (Some(path), _) => import_jsonl(&store, path, &mut report_progress),
        (_, Some(file)) => import_sqlite(&store, file, &mut report_progress),
        (None, None) => unreachable_source(),
    };
    if let Some(b) = progress {
        b.finish_and_clear();
    }
    let close = store.close();
    let report = report?;
    close?;
    let events: u64 = report.sessions.iter().map(|s| s.events).sum();
    note(
        quiet,
        &format!(
            "imported {} session(s), {events} event(s) into {}",
            report.sessions.len(),
            a.store.display()
        ),
    );
    for s in &report.sessions {
        if let Some(t) = &s.torn {
            note(
                quiet,
                &format!(
                    "{}: torn tail from line {} dropped ({} line(s)): {}",
                    s.file.display(),
                    t.line,
                    t.lines_dropped,
                    t.reason
                ),
            );
        }
    }
    Ok(code::OK)
}

fn unreachable_source() -> sessdb_formats::Result<sessdb_formats::jsonl::ImportReport> {
    // clap requires one of --jsonl and --sqlite.
    Ok(sessdb_formats::jsonl::ImportReport::default())
}
