//! `sessdb stats STORE [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::{json_opt, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> CliResult {
    let store = open_existing(&a.store)?;
    let s = store.stats();
    let r = store.open_report();
    let m = store.memory_usage();
    if a.json {
        println(&format!(
            "{{\"sessions\":{},\"events\":{},\"segments\":{},\"logBytes\":{},\"checkpointLsn\":{},\"checkpointGeneration\":{},\"open\":{{\"checkpointUsed\":{},\"recordsReplayed\":{},\"bytesTruncated\":{},\"incompleteTailBytes\":{}}},\"indexBytes\":{},\"surfaceBytes\":{}}}",
            s.sessions,
            s.events,
            s.segments,
            s.log_bytes,
            s.checkpoint_lsn,
            s.checkpoint_generation,
            json_opt(r.checkpoint),
            r.records_replayed,
            r.bytes_truncated,
            r.torn_tail_ignored,
            m.index_bytes,
            m.surface_bytes
        ));
        return Ok(code::OK);
    }
    println(&format!("sessions           {}", s.sessions));
    println(&format!("events             {}", s.events));
    println(&format!("segments           {}", s.segments));
    println(&format!("log bytes          {}", s.log_bytes));
    println(&format!(
        "checkpoint         generation {} covering {} byte(s)",
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
    println(&format!(
        "resident index     {} byte(s), surfaces {} byte(s)",
        m.index_bytes, m.surface_bytes
    ));
    Ok(code::OK)
}
