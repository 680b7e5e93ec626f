//! `sessdb backup STORE DEST [--json]`

use sessdb::store::backup;

use crate::cmd::{PathArg, is_store};
use crate::error::{CliResult, code, no_store};
use crate::out::{print_json, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory (a writer may be running on it).
    pub store: PathArg,
    /// Where to write the copy: a directory that does not exist yet.
    pub dest: PathArg,
    /// One JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `backup --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct BackedUp<'a> {
    dest: &'a str,
    log_end: u64,
    segments: usize,
    bytes: u64,
    records: u64,
    sessions: usize,
}

pub fn run(a: &Args) -> CliResult {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let r = backup(&a.store, &a.dest)?;
    let dest = a.dest.display().to_string();
    if a.json {
        print_json(&BackedUp {
            dest: &dest,
            log_end: r.log_end,
            segments: r.segments,
            bytes: r.bytes,
            records: r.records,
            sessions: r.sessions,
        });
    } else {
        println(&format!(
            "copied {} segment(s), {} byte(s) up to log position {}: {} session(s), {} record(s) checked",
            r.segments, r.bytes, r.log_end, r.sessions, r.records
        ));
        println(&format!(
            "backup in {dest} (opens as a store; restore by using or copying that directory)"
        ));
    }
    Ok(code::OK)
}
