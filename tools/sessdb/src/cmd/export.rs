//! `sessdb export STORE --jsonl DIR [--zstd] [--no-pack] [--session ID]...` /
//! `sessdb export STORE --sqlite FILE [--session ID]...`

use sessdb_formats::jsonl::{ExportOptions, export_jsonl_with_progress, write_session_jsonl};
use sessdb_formats::sqlite::{SqliteExportOptions, SqliteLayout, export_sqlite_with_progress};

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliError, CliResult, code};
use crate::out::{Unit, bar, note, to_stdout, update};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("target").args(["jsonl", "sqlite"]).required(true)))]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// Write the DSH JSONL layout under this directory; `-` writes the one `--session` as its
    /// session.jsonl to stdout.
    #[arg(long, value_name = "DIR")]
    jsonl: Option<PathArg>,
    /// Write a SQLite database to this file (built beside it, then renamed). An existing file
    /// is replaced only when it is an earlier `--layout analytics` export holding nothing
    /// else; a DSH database or any other file only with `--force`.
    #[arg(long, value_name = "FILE")]
    sqlite: Option<PathArg>,
    /// JSONL: write session.jsonl.zstd files.
    #[arg(long, requires = "jsonl", conflicts_with = "sqlite")]
    zstd: bool,
    /// JSONL: one event per line, no packed chunk rows.
    #[arg(long, requires = "jsonl", conflicts_with = "sqlite")]
    no_pack: bool,
    /// JSONL: write into a non-empty directory that is not a sessions root (symbolic links are
    /// refused even so). SQLite: replace a file that is not such a database.
    #[arg(long)]
    force: bool,
    /// SQLite: `dsh` writes DSH's own schema 17 (a database DSH's SQLite backend opens);
    /// `analytics` sessdb's one-row-per-event schema, lossless and queryable.
    #[arg(long, value_enum, requires = "sqlite", conflicts_with = "jsonl")]
    layout: Option<Layout>,
    /// Only this session (repeatable); all when absent.
    #[arg(long = "session", value_name = "ID")]
    sessions: Vec<String>,
    /// JSON output: `{"events": N, "target": PATH, "files": [{"session": ID, "file": PATH}],
    /// "left": [PATH]}` (`files` and `left` for `--jsonl` only; `left`: session files already
    /// under the root that this export did not write and left as they are).
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    let store = open_existing(&a.store)?;
    if a.jsonl.as_deref() == Some(std::path::Path::new("-")) {
        return session_to_stdout(a, &store);
    }
    let progress = bar(quiet, "exporting", Unit::Events);
    let mut report_progress = |p| update(&progress, p);
    let mut files = Vec::new();
    let mut left = Vec::new();
    let (events, target) = match (&a.jsonl, &a.sqlite) {
        (Some(dir), _) => {
            let options = ExportOptions {
                zstd: a.zstd,
                pack: !a.no_pack,
                sessions: a.sessions.clone(),
                force: a.force,
            };
            let r = export_jsonl_with_progress(&store, dir, &options, &mut report_progress)?;
            files = r.files;
            left = r.left;
            (r.events, dir.clone())
        }
        (_, Some(file)) => {
            check_sqlite_target(file)?;
            let options = SqliteExportOptions {
                sessions: a.sessions.clone(),
                layout: match a.layout.unwrap_or(Layout::Dsh) {
                    Layout::Dsh => SqliteLayout::Dsh,
                    Layout::Analytics => SqliteLayout::Analytics,
                },
                force: a.force,
            };
            (
                export_sqlite_with_progress(&store, file, &options, &mut report_progress)?.events,
                file.clone(),
            )
        }
        (None, None) => (0, a.store.clone()),
    };
    if let Some(b) = progress {
        b.finish_and_clear();
    }
    if a.json {
        let mut out = serde_json::json!({
            "events": events,
            "target": target.display().to_string(),
        });
        if a.jsonl.is_some() {
            out["left"] = left
                .iter()
                .map(|f| serde_json::Value::from(f.display().to_string()))
                .collect();
            out["files"] = files
                .iter()
                .map(|(id, f)| serde_json::json!({"session": id, "file": f.display().to_string()}))
                .collect();
        }
        crate::out::print_json(&out);
    } else {
        // The result, on stdout whatever `--quiet` says (the data went to files).
        crate::out::println(&format!(
            "exported {events} event(s) to {}",
            target.display()
        ));
    }
    if !left.is_empty() {
        note(
            quiet,
            &format!(
                "{} session file(s) already under {} were not written by this export (sessions deleted from the store since an earlier export, or not chosen) and were left as they are, for example {}",
                left.len(),
                target.display(),
                left[0].display()
            ),
        );
    }
    Ok(code::OK)
}

/// `export STORE --jsonl - --session ID`: that session's file on stdout.
fn session_to_stdout(a: &Args, store: &sessdb::Store) -> CliResult {
    let [id] = a.sessions.as_slice() else {
        return Err(CliError::new(
            code::USAGE,
            "`--jsonl -` writes one session: name it with exactly one --session ID",
        ));
    };
    if a.zstd {
        return Err(CliError::new(
            code::USAGE,
            "`--jsonl -` writes raw JSONL; pipe it through zstd for a compressed file",
        ));
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    to_stdout(write_session_jsonl(
        store,
        id,
        &mut out,
        !a.no_pack,
        std::path::Path::new("stdout"),
    ))?;
    Ok(code::OK)
}

/// `--sqlite -` is refused: a database is a file, not a stream. What an existing file may be
/// replaced by is the library's rule (`docs/FORMATS.md` §3.2).
fn check_sqlite_target(file: &std::path::Path) -> CliResult<()> {
    if file == std::path::Path::new("-") {
        return Err(CliError::new(
            code::USAGE,
            "`--sqlite -`: a SQLite database is written to a file, not a stream; name the file",
        ));
    }
    Ok(())
}

/// `--layout`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Layout {
    /// DSH's schema 17.
    Dsh,
    /// sessdb's queryable schema.
    Analytics,
}
