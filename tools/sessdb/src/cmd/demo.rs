//! `sessdb demo [STORE]`: the README's main job. A deterministic, realistic DSH workload is
//! written to a store, the interrupted session is resumed (repair closers), the store is
//! closed and reopened, exported to JSONL and SQLite beside it, verified, and summarized.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use sessdb::storage::FsStorage;
use sessdb::store::verify;
use std::sync::atomic::{AtomicI64, Ordering};

use sessdb::store::{OpenReport, SessionInfo, StoreStats, VerifyReport};
use sessdb::{Draft, ForkSpec, ResumeReport, SessionHeader, Store, StoreOptions};
use sessdb_formats::jsonl::{ExportOptions, ExportReport, export_jsonl};
use sessdb_formats::sqlite::{SqliteExportOptions, export_sqlite};
use sessdb_workload::{Sink, WorkloadSpec, WorkloadSummary, generate};

use crate::cmd::{is_store, open_writer};
use crate::error::{CliError, CliResult, code};
use crate::out::{note, println, shown};

/// The file that marks a directory as the demo's own, so running the demo again may replace it.
const MARKER: &str = "SESSDB-DEMO";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to write the demo store; the exports go beside it.
    #[arg(default_value = "./sessdb-demo")]
    pub store: PathBuf,
    /// Random seed of the workload.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Number of root sessions (a fork adds one).
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    /// Most turns per session.
    #[arg(long, default_value_t = 6)]
    turns: u64,
}

fn beside(store: &Path, suffix: &str) -> PathBuf {
    let name = store.file_name().map_or_else(
        || "sessdb-demo".into(),
        |n| n.to_string_lossy().into_owned(),
    );
    store.with_file_name(format!("{name}{suffix}"))
}

/// Clears a previous demo run; refuses to touch anything else (the JSONL directory and SQLite
/// file beside the store are replaced only when the store is a demo store, whose run made them).
fn prepare(store: &Path, jsonl: &Path, sqlite: &Path) -> CliResult<()> {
    let ours = store.join(MARKER).is_file();
    if !ours {
        for companion in [jsonl, sqlite] {
            if companion.exists() {
                // A refusal to overwrite: exit 4, as every command's.
                return Err(CliError::new(
                    code::REJECTED,
                    format!(
                        "{} exists and was not made by `sessdb demo`",
                        companion.display()
                    ),
                )
                .hint("pass another path, e.g. `sessdb demo ./my-demo`"));
            }
        }
    }
    if store.exists() {
        let empty = std::fs::read_dir(store)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !ours && !empty {
            return Err(CliError::new(
                code::REJECTED,
                format!("{} exists and is not a demo store", store.display()),
            )
            .hint("pass another path, e.g. `sessdb demo ./my-demo`"));
        }
        let rm = |p: &Path| {
            std::fs::remove_dir_all(p).map_err(|e| {
                CliError::new(code::OTHER, format!("cannot remove {}: {e}", p.display()))
            })
        };
        rm(store)?;
        if jsonl.is_dir() {
            rm(jsonl)?;
        }
        if sqlite.is_file() {
            std::fs::remove_file(sqlite).map_err(|e| {
                CliError::new(
                    code::OTHER,
                    format!("cannot remove {}: {e}", sqlite.display()),
                )
            })?;
        }
    }
    Ok(())
}

/// Marks the store as the demo's (once the store exists: a store is opened only in a new or
/// empty directory, or one that is a store already).
fn mark(store: &Path) -> CliResult<()> {
    std::fs::write(
        store.join(MARKER),
        b"written by `sessdb demo`; the next demo run replaces this directory\n",
    )
    .map_err(|e| {
        CliError::new(
            code::OTHER,
            format!("cannot write in {}: {e}", store.display()),
        )
    })
}

/// The store as the demo's sink, keeping the demo's clock at the generator's time: the
/// latest time of an event or a creation so far. (A clock fixed at the workload's start
/// stamped later sessions' end-seed markers, the fork and the repair closers before the
/// sessions' own creation: `ls` showed a last event before the creation.)
struct Stamped<'a> {
    store: &'a Store,
    now: &'a AtomicI64,
}

impl Sink for Stamped<'_> {
    fn create(&mut self, header: SessionHeader) -> sessdb::Result<()> {
        self.now.fetch_max(header.created_at, Ordering::Relaxed);
        self.store.create_session(header, Vec::new()).map(|_| ())
    }

    fn append(&mut self, session: &str, draft: Draft) -> sessdb::Result<u64> {
        if let Some(t) = draft.time() {
            self.now.fetch_max(t, Ordering::Relaxed);
        }
        self.store.append(session, draft)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> sessdb::Result<String> {
        self.store.fork(source, spec)
    }
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    let (jsonl, sqlite) = (beside(&a.store, ".jsonl"), beside(&a.store, ".sqlite"));
    prepare(&a.store, &jsonl, &sqlite)?;
    let spec = WorkloadSpec {
        seed: a.seed,
        sessions: a.sessions,
        max_turns: a.turns,
        ..WorkloadSpec::default()
    };

    // The generator's time everywhere (end-seed markers, the fork's header, repair closers):
    // the same seed gives the same store, byte for byte.
    let now = Arc::new(AtomicI64::new(spec.start_time_ms));
    let clock_now = Arc::clone(&now);
    let options = StoreOptions::default().with_clock(sessdb::Clock::from_fn(move || {
        clock_now.load(Ordering::Relaxed)
    }));
    let started = Instant::now();
    let store = open_writer(&a.store, options.clone())?;
    mark(&a.store)?;
    let summary = generate(
        &spec,
        &mut Stamped {
            store: &store,
            now: &now,
        },
    )?;
    let written = started.elapsed();
    note(
        quiet,
        &format!(
            "wrote {} events in {} sessions in {:.1} ms",
            summary.events,
            summary.sessions.len(),
            written.as_secs_f64() * 1e3
        ),
    );
    let mut repaired = Vec::new();
    for id in &summary.interrupted {
        repaired.push((id.clone(), store.resume(id)?));
    }
    store.close()?;

    let started = Instant::now();
    let store = Store::open(&a.store, options)?;
    let reopened = started.elapsed();
    let report = store.open_report().clone();
    let stats = store.stats();
    let disk = store.disk_usage()?;
    let sessions = store.list()?;
    store.close()?;
    let store = Store::open_read_only(&a.store, sessdb::StoreOptions::default())?;
    let jsonl_report = export_jsonl(&store, &jsonl, &ExportOptions::default())?;
    let sqlite_events = export_sqlite(
        &store,
        &sqlite,
        // The demo's database is for querying: sessdb's one-row-per-event layout.
        &SqliteExportOptions {
            layout: sessdb_formats::sqlite::SqliteLayout::Analytics,
            ..SqliteExportOptions::default()
        },
    )?
    .events;
    let verified = verify(Arc::new(FsStorage::new(&a.store)))?;

    print_outcome(&Outcome {
        store: &a.store,
        jsonl: &jsonl,
        sqlite: &sqlite,
        sessions: &sessions,
        stats: &stats,
        disk_bytes: disk.total(),
        summary: &summary,
        repaired: &repaired,
        reopened,
        report: &report,
        jsonl_report: &jsonl_report,
        sqlite_events,
        verified: &verified,
    });
    Ok(if verified.ok() && is_store(&a.store) {
        code::OK
    } else {
        code::CORRUPTION
    })
}

/// What the demo did, as it prints it.
struct Outcome<'a> {
    store: &'a Path,
    jsonl: &'a Path,
    sqlite: &'a Path,
    sessions: &'a [SessionInfo],
    stats: &'a StoreStats,
    disk_bytes: u64,
    summary: &'a WorkloadSummary,
    repaired: &'a [(String, ResumeReport)],
    reopened: std::time::Duration,
    report: &'a OpenReport,
    jsonl_report: &'a ExportReport,
    sqlite_events: u64,
    verified: &'a VerifyReport,
}

/// The sessions, then a line for each part of the demo.
fn print_outcome(o: &Outcome<'_>) {
    println(&format!(
        "{:<32} {:>7} {:>8}  parent",
        "session", "events", "surface"
    ));
    for s in o.sessions {
        println(&format!(
            "{:<32} {:>7} {:>8}  {}",
            shown(&s.header.id),
            s.events,
            s.surface_len,
            shown(s.header.parent_session.as_deref().unwrap_or("-"))
        ));
    }
    println("");
    println(&format!(
        "store        {}: {} sessions, {} events, {} segment(s), {} bytes on disk",
        o.store.display(),
        o.stats.sessions,
        o.stats.events,
        o.stats.segments,
        o.disk_bytes
    ));
    println(&format!(
        "workload     {} compaction(s), {} tool-result prune(s), {} fork(s), {} interrupted session(s)",
        o.summary.compactions,
        o.summary.prunes,
        o.summary.forks.len(),
        o.summary.interrupted.len()
    ));
    for (id, r) in o.repaired {
        println(&format!(
            "resumed      {id}: {} repair closer(s) at seqs {:?}, end-seed marker at {}",
            r.closers.len(),
            r.closers,
            r.end_seed.map_or_else(|| "-".into(), |s| s.to_string())
        ));
    }
    println(&format!(
        "reopened     in {:.1} ms from checkpoint {}, {} record(s) replayed",
        o.reopened.as_secs_f64() * 1e3,
        o.report
            .checkpoint
            .map_or_else(|| "none".into(), |g| g.to_string()),
        o.report.records_replayed
    ));
    println(&format!(
        "jsonl        {} ({} files, {} bytes)",
        o.jsonl.display(),
        o.jsonl_report.files.len(),
        o.jsonl_report.bytes
    ));
    println(&format!(
        "sqlite       {} ({} events)",
        o.sqlite.display(),
        o.sqlite_events
    ));
    println(&format!(
        "verify       {}",
        if o.verified.ok() {
            format!("ok ({} records checked)", o.verified.records)
        } else {
            o.verified.problems.join("; ")
        }
    ));
}
