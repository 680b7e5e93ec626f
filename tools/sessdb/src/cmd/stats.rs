//! `sessdb stats STORE [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::{print_json, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// One JSON object.
    #[arg(long)]
    pub json: bool,
    /// Also read the whole log for its live and dead record bytes (what `sessdb compact`
    /// gives back): the one figure that reads records. Without it, nothing but metadata is
    /// read.
    #[arg(long)]
    space: bool,
}

/// `stats --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Stats {
    sessions: usize,
    events: u64,
    segments: usize,
    /// The bytes the store's files take (segments and checkpoints).
    disk_bytes: u64,
    segment_bytes: u64,
    checkpoint_bytes: u64,
    /// The log's end position (a position: compaction leaves gaps, so it does not shrink).
    end_lsn: u64,
    checkpoint_lsn: u64,
    checkpoint_generation: u64,
    open: Open,
    index_bytes: usize,
    mapped_index_bytes: usize,
    surface_bytes: usize,
    /// Record bytes some session reads (`null` without `--space`, or when the log could not
    /// be read through).
    live_bytes: Option<u64>,
    /// Record bytes a compaction would give back.
    dead_bytes: Option<u64>,
    /// Bytes of compaction's run and tombstone tables.
    table_bytes: Option<u64>,
}

/// What opening the store did.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Open {
    checkpoint_used: Option<u64>,
    records_replayed: u64,
    bytes_truncated: u64,
    incomplete_tail_bytes: u64,
}

pub fn run(a: &Args) -> CliResult {
    let store = open_existing(&a.store)?;
    let s = store.stats();
    let r = store.open_report();
    let m = store.memory_usage();
    let disk = store.disk_usage()?;
    // Only asked for: one read of the whole log, for what is live and what a compaction
    // would give back.
    let space = if a.space {
        store.space().map_err(|e| format!("unknown: {e}"))
    } else {
        Err("not read (`sessdb stats --space` reads the log for them)".to_owned())
    };
    if a.json {
        print_json(&Stats {
            sessions: s.sessions,
            events: s.events,
            segments: s.segments,
            disk_bytes: disk.total(),
            segment_bytes: disk.segment_bytes,
            checkpoint_bytes: disk.checkpoint_bytes,
            end_lsn: s.end_lsn,
            checkpoint_lsn: s.checkpoint_lsn,
            checkpoint_generation: s.checkpoint_generation,
            open: Open {
                checkpoint_used: r.checkpoint,
                records_replayed: r.records_replayed,
                bytes_truncated: r.bytes_truncated,
                incomplete_tail_bytes: r.torn_tail_ignored,
            },
            index_bytes: m.index_bytes,
            mapped_index_bytes: m.mapped_index_bytes,
            surface_bytes: m.surface_bytes,
            live_bytes: space.as_ref().ok().map(sessdb::store::Space::live_bytes),
            dead_bytes: space.as_ref().ok().map(sessdb::store::Space::dead_bytes),
            table_bytes: space.as_ref().ok().map(sessdb::store::Space::table_bytes),
        });
        return Ok(code::OK);
    }
    println(&format!("sessions           {}", s.sessions));
    println(&format!("events             {}", s.events));
    println(&format!("segments           {}", s.segments));
    println(&format!(
        "on disk            {} byte(s): segments {}, checkpoints {}",
        disk.total(),
        disk.segment_bytes,
        disk.checkpoint_bytes
    ));
    println(&format!("log end position   {}", s.end_lsn));
    match &space {
        Ok(sp) => println(&format!(
            "live / dead        {} / {} record byte(s) (dead: what `sessdb compact` gives back)",
            sp.live_bytes(),
            sp.dead_bytes()
        )),
        Err(e) => println(&format!("live / dead        {e}")),
    }
    // What the files hold beside the records once compaction ran: a run per stretch of
    // records kept, and tombstones only for records from before epochs (and the one a
    // checkpoint names).
    if let Ok(sp) = &space
        && sp.table_bytes() > 0
    {
        println(&format!(
            "tables             {} byte(s) of compaction's run and tombstone tables ({} tombstone(s): records left out that no epoch confirms, kept for the tombstone TTL)",
            sp.table_bytes(),
            sp.tombstones()
        ));
    }
    println(&format!(
        "checkpoint         generation {}, covering the log to position {}",
        s.checkpoint_generation, s.checkpoint_lsn
    ));
    println(&format!(
        "opening replayed   {} record(s) after {}",
        r.records_replayed,
        r.checkpoint
            .map_or_else(|| "no checkpoint".to_owned(), |g| format!("checkpoint {g}"))
    ));
    println(&format!(
        "incomplete tail    {} byte(s)",
        r.torn_tail_ignored
    ));
    // Said apart: the index of a session loaded from a checkpoint stays in that file's map
    // until the session is read (a few dozen heap bytes for a store of thousands of events is
    // not a bug).
    println(&format!(
        "event index        {} byte(s) on the heap, {} byte(s) mapped from the checkpoint (decoded when a session is first read)",
        m.index_bytes, m.mapped_index_bytes
    ));
    println(&format!("surfaces           {} byte(s)", m.surface_bytes));
    Ok(code::OK)
}
