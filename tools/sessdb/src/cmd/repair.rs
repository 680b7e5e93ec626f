//! `sessdb repair STORE [--salvage]`

use sessdb::StoreOptions;

use crate::cmd::{PathArg, open_writer};
use crate::error::{CliError, CliResult, code};
use crate::out::println;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// Keep everything before the first corrupt record and drop the rest (reported).
    #[arg(long)]
    salvage: bool,
}

pub fn run(a: &Args) -> CliResult {
    // Repair reads the whole log, not only what follows the checkpoint: damage anywhere is
    // found here, as `verify` finds it.
    let options = StoreOptions {
        salvage: a.salvage,
        ignore_checkpoints: true,
        ..StoreOptions::default()
    };
    let store = open_writer(&a.store, options).map_err(|e| {
        if e.message.contains("corruption") && !a.salvage {
            CliError {
                hint: Some("rerun with --salvage to keep what precedes the damage"),
                ..e
            }
        } else {
            e
        }
    })?;
    let report = store.open_report().clone();
    if report.bytes_truncated > 0 {
        println(&format!(
            "cut a torn tail of {} byte(s)",
            report.bytes_truncated
        ));
    }
    if let Some(s) = &report.salvaged {
        println(&format!(
            "salvaged: dropped {} byte(s) from {} at byte {} ({})",
            s.bytes_dropped, s.segment, s.offset, s.kind
        ));
    }
    for seg in &report.segments_removed {
        println(&format!("removed {seg}"));
    }
    let mut closed = 0;
    for info in store.list().into_iter().filter(|i| i.turn_open) {
        let r = store.resume(&info.header.id)?;
        closed += 1;
        println(&format!(
            "closed the open turn of {}: {} closer(s), end-seed marker {}",
            info.header.id,
            r.closers.len(),
            r.end_seed
                .map_or_else(|| "already there".to_owned(), |s| format!("at seq {s}"))
        ));
    }
    store.checkpoint()?;
    store.close()?;
    if report.bytes_truncated == 0 && report.salvaged.is_none() && closed == 0 {
        println("nothing to repair");
    }
    Ok(code::OK)
}
