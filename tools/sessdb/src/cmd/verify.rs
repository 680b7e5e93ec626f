//! `sessdb verify STORE [--json]`

use std::sync::Arc;

use sessdb::storage::FsStorage;
use sessdb::store::verify_with_progress;

use crate::cmd::{PathArg, is_store};
use crate::error::{CliResult, code, no_store};
use crate::out::{print_json, println, scan_bar};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// One JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `verify --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Verified<'a> {
    ok: bool,
    segments: usize,
    records: u64,
    log_bytes: u64,
    sessions: usize,
    events: u64,
    checkpoint: Option<u64>,
    compared: bool,
    incomplete_tail_bytes: u64,
    problems: &'a [String],
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let (bar, progress) = scan_bar(quiet || a.json, "verifying");
    let r = verify_with_progress(Arc::new(FsStorage::new(&a.store)), progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let r = r?;
    if a.json {
        print_json(&Verified {
            ok: r.ok(),
            segments: r.segments,
            records: r.records,
            log_bytes: r.log_bytes,
            sessions: r.sessions,
            events: r.events,
            checkpoint: r.checkpoint,
            compared: r.compared,
            incomplete_tail_bytes: r.incomplete_tail_bytes,
            problems: &r.problems,
        });
    } else {
        println(&format!(
            "checked {} segment(s), {} record(s), {} log byte(s): {} session(s), {} event(s)",
            r.segments, r.records, r.log_bytes, r.sessions, r.events
        ));
        match (r.checkpoint, r.compared) {
            (Some(g), true) => println(&format!("checkpoint {g} compared with a full replay")),
            (Some(g), false) => println(&format!(
                "checkpoint {g} not compared: the full replay stops at the damage (the counts above are of the intact records, read on past it)"
            )),
            (None, _) => println("no checkpoint to compare"),
        }
        if r.incomplete_tail_bytes > 0 {
            println(&format!(
                "{} byte(s) after the last complete record (a torn tail or an append under way)",
                r.incomplete_tail_bytes
            ));
        }
        if r.ok() {
            println("ok: no corruption, no mismatch");
        }
        for p in &r.problems {
            println(&format!("problem: {p}"));
        }
    }
    Ok(if r.ok() { code::OK } else { code::CORRUPTION })
}
