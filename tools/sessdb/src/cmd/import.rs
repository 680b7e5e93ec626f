//! `sessdb import STORE --jsonl PATH` / `sessdb import STORE --sqlite FILE`

use std::path::PathBuf;

use sessdb::StoreOptions;
use sessdb_formats::Outcome;
use sessdb_formats::jsonl::{
    ImportReport, import_jsonl_reader, import_jsonl_with_progress, plan_jsonl, plan_jsonl_reader,
};
use sessdb_formats::sqlite::{import_sqlite_with_progress, plan_sqlite};

use crate::cmd::{PathArg, is_store, open_existing, open_or_create_writer};
use crate::error::{CliError, CliResult, code};
use crate::out::{Unit, bar, update, warn};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("source").args(["jsonl", "sqlite"]).required(true)))]
pub struct Args {
    /// The store directory (created if needed).
    pub store: PathArg,
    /// A DSH sessions root, a session directory, or one session.jsonl[.zstd] file; `-` reads
    /// one session file (raw or zstd) from stdin, streamed.
    #[arg(long, value_name = "PATH")]
    jsonl: Option<PathArg>,
    /// A sessdb SQLite export or a DSH database; `-` reads one from stdin (copied to a private
    /// temporary file first: SQLite reads a file).
    #[arg(long, value_name = "FILE")]
    sqlite: Option<PathArg>,
    /// Print what the import would do (imported, extended, skipped, per session) and write
    /// nothing.
    #[arg(long)]
    dry_run: bool,
    /// JSON output: `{"sessions": [{"id", "outcome", "events", "added", "tornFromLine",
    /// "linesDropped", "invalidUtf8Lines", "migratedSeqs"}], "added": N}` (with `--dry-run`,
    /// what would be, and `"dryRun": true`).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    // A missing input is "not found" (exit 6), said before anything is opened or created.
    if let Some(input) = a.jsonl.as_ref().or(a.sqlite.as_ref())
        && input != std::path::Path::new("-")
        && !input.exists()
    {
        return Err(CliError::new(
            code::NOT_FOUND,
            format!("{}: no such file or directory", input.display()),
        ));
    }
    if a.dry_run {
        return dry_run(a);
    }
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

/// The temporary copy of stdin `--sqlite -` reads (kept alive by the guard beside it).
type StdinCopy = Option<(tempfile::TempDir, PathBuf)>;

/// Whether `--jsonl -` reads one session file from stdin (streamed: no copy is made).
fn jsonl_from_stdin(a: &Args) -> bool {
    a.jsonl.as_deref() == Some(std::path::Path::new("-"))
}

/// The name stdin goes by in errors and reports.
const STDIN: &str = "stdin";

/// `--sqlite -`: stdin streamed to a private temporary file (SQLite reads files).
fn sqlite_source(a: &Args) -> CliResult<(StdinCopy, Option<PathBuf>)> {
    let Some(path) = &a.sqlite else {
        return Ok((None, None));
    };
    if path != std::path::Path::new("-") {
        return Ok((None, Some(path.clone())));
    }
    let io = |e: std::io::Error| CliError::new(code::OTHER, format!("reading stdin: {e}"));
    let dir = tempfile::tempdir().map_err(io)?;
    let file = dir.path().join("stdin.sqlite");
    let mut out = std::fs::File::create(&file).map_err(io)?;
    std::io::copy(&mut std::io::stdin().lock(), &mut out).map_err(io)?;
    Ok((Some((dir, file.clone())), Some(file)))
}

fn import(a: &Args, quiet: bool) -> CliResult {
    let (stdin, sqlite) = sqlite_source(a)?;
    let from_stdin = stdin.is_some() || jsonl_from_stdin(a);
    // A batch writer: no background read of the log competing with the import.
    let store = open_or_create_writer(&a.store, StoreOptions::default().with_compaction(None))?;
    let progress = bar(quiet, "importing", Unit::Events);
    let mut report_progress = |p| update(&progress, p);
    let report = match (&a.jsonl, &sqlite) {
        (Some(_), _) if jsonl_from_stdin(a) => {
            import_jsonl_reader(&store, std::io::stdin(), std::path::Path::new(STDIN))
        }
        (Some(path), _) => import_jsonl_with_progress(&store, path, &mut report_progress),
        (_, Some(file)) => import_sqlite_with_progress(&store, file, &mut report_progress),
        (None, None) => unreachable_source(),
    };
    if let Some(b) = progress {
        b.finish_and_clear();
    }
    let close = store.close();
    drop(store);
    let report = report.map_err(|e| {
        let mut err = CliError::from(e);
        if let Some((_, file)) = &stdin {
            err.message = err.message.replace(&file.display().to_string(), STDIN);
        }
        if err.code == code::REJECTED && err.hint.is_none() {
            err.hint("nothing of this import was stored")
        } else {
            err
        }
    })?;
    close?;
    // The result, on stdout whatever `--quiet` says: one line, or the JSON object.
    if a.json {
        crate::out::print_json(&report_json(&report));
    } else {
        crate::out::println(&format!("{} into {}", summary(&report), a.store.display()));
    }
    for s in &report.sessions {
        let file = if from_stdin {
            STDIN.to_owned()
        } else {
            s.file.display().to_string()
        };
        if !s.invalid_utf8_lines.is_empty() {
            let lines: Vec<String> = s.invalid_utf8_lines.iter().map(u64::to_string).collect();
            warn(&format!(
                "{file}: invalid UTF-8 read as U+FFFD, as DSH reads it, on line(s) {}",
                lines.join(", ")
            ));
        }
        if !s.migrated.is_empty() {
            warn(&format!(
                "{file}: session {}: {} event(s) in a legacy shape stored as DSH reads them (see FORMATS.md §1.1), from seq {}",
                s.id,
                s.migrated.len(),
                s.migrated.first().copied().unwrap_or_default()
            ));
        }
        if let Some(t) = &s.torn {
            warn(&format!(
                "{file}: torn tail from line {} dropped ({} line(s)): {}",
                t.line, t.lines_dropped, t.reason
            ));
        }
    }
    Ok(code::OK)
}

/// `--dry-run`: the plan on stdout, nothing written (a store that does not exist is planned
/// as empty and not created).
fn dry_run(a: &Args) -> CliResult {
    let store = if is_store(&a.store) {
        open_existing(&a.store)?
    } else {
        // No store yet: planned against an empty one in memory; nothing is created.
        sessdb::Store::open_with(
            std::sync::Arc::new(sessdb::storage::MemStorage::new()),
            StoreOptions::default(),
        )?
    };
    // The guard keeps a copy of stdin alive while it is read.
    let (_stdin_sqlite, sqlite) = sqlite_source(a)?;
    let report = match (&a.jsonl, &sqlite) {
        (Some(_), _) if jsonl_from_stdin(a) => {
            plan_jsonl_reader(&store, std::io::stdin(), std::path::Path::new(STDIN))
        }
        (Some(path), _) => plan_jsonl(&store, path),
        (_, Some(file)) => plan_sqlite(&store, file),
        (None, None) => unreachable_source(),
    }
    .map_err(CliError::from)?;
    if a.json {
        // The import's own JSON, `"dryRun": true` beside it: what would be added.
        let mut out = report_json(&report);
        out["dryRun"] = serde_json::Value::Bool(true);
        crate::out::print_json(&out);
        return Ok(code::OK);
    }
    for s in &report.sessions {
        let what = match s.outcome {
            Outcome::Imported => format!("import  {} ({} events)", s.id, s.events),
            Outcome::Extended { from } => format!(
                "extend  {} ({} new events after seq {})",
                s.id,
                s.events - from,
                from.saturating_sub(1)
            ),
            _ => format!("skip    {} (all {} events stored)", s.id, s.events),
        };
        crate::out::println(&crate::out::shown(&what));
    }
    crate::out::println(&format!("would have: {}", summary(&report)));
    Ok(code::OK)
}

/// The import report as `--json` prints it.
fn report_json(report: &ImportReport) -> serde_json::Value {
    let sessions: Vec<serde_json::Value> = report
        .sessions
        .iter()
        .map(|s| {
            let outcome = match s.outcome {
                Outcome::Imported => "imported",
                Outcome::Extended { .. } => "extended",
                _ => "skipped",
            };
            serde_json::json!({
                "id": s.id,
                "outcome": outcome,
                "events": s.events,
                "added": s.outcome.added(s.events),
                "tornFromLine": s.torn.as_ref().map(|t| t.line),
                "linesDropped": s.torn.as_ref().map_or(0, |t| t.lines_dropped),
                "invalidUtf8Lines": s.invalid_utf8_lines,
                "migratedSeqs": s.migrated,
            })
        })
        .collect();
    let added: u64 = report
        .sessions
        .iter()
        .map(|s| s.outcome.added(s.events))
        .sum();
    serde_json::json!({ "sessions": sessions, "added": added })
}

/// `imported N, extended N, skipped N session(s); N event(s) added`.
fn summary(report: &ImportReport) -> String {
    let count = |f: fn(&Outcome) -> bool| report.sessions.iter().filter(|s| f(&s.outcome)).count();
    let added: u64 = report
        .sessions
        .iter()
        .map(|s| s.outcome.added(s.events))
        .sum();
    format!(
        "imported {}, extended {}, skipped {} session(s); {added} event(s) added",
        count(|o| *o == Outcome::Imported),
        count(|o| matches!(o, Outcome::Extended { .. })),
        count(|o| *o == Outcome::Skipped),
    )
}

fn unreachable_source() -> sessdb_formats::Result<sessdb_formats::jsonl::ImportReport> {
    // clap requires one of --jsonl and --sqlite.
    Ok(sessdb_formats::jsonl::ImportReport::default())
}
