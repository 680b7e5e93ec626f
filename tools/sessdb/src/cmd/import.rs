//! `sessdb import STORE --jsonl PATH` / `sessdb import STORE --sqlite FILE`

use sessdb::StoreOptions;
use sessdb_formats::jsonl::import_jsonl;
use sessdb_formats::sqlite::import_sqlite;

use crate::cmd::{PathArg, is_store, open_writer};
use crate::error::{CliError, CliResult, code};
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
    // A failed import into a path that held no store leaves nothing behind.
    let existed = a.store.exists();
    let was_store = is_store(&a.store);
    let parts = ["segments", "checkpoints", "LOCK"];
    let new_parts: Vec<_> = parts
        .iter()
        .map(|p| a.store.join(p))
        .filter(|p| !p.exists())
        .collect();
    let result = import(a, quiet);
    if result.is_err() && !was_store {
        // Best effort: the error being reported matters more than a failed clean-up.
        if existed {
            for p in new_parts {
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
        } else {
            let _ = std::fs::remove_dir_all(&a.store);
        }
    }
    result
}

fn import(a: &Args, quiet: bool) -> CliResult {
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
    drop(store);
    let report = report.map_err(|e| {
        let err = CliError::from(e);
        if err.code == code::REJECTED {
            err.hint("nothing of this import was stored")
        } else {
            err
        }
    })?;
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
