//! `sessdb compact STORE [--dry-run]`

use sessdb::StoreOptions;

use crate::cmd::{PathArg, open_store_writer};
use crate::error::{CliResult, code};
use crate::out::{note, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory (no writer may hold it).
    store: PathArg,
    /// Print what would be reclaimed per segment; change nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    let store = open_store_writer(&a.store, StoreOptions::default())?;
    let result = if a.dry_run {
        store.compact_plan()
    } else {
        store.compact()
    };
    let close = store.close();
    let report = result?;
    close?;
    let verb = if a.dry_run {
        "would reclaim"
    } else {
        "reclaimed"
    };
    for s in &report.segments {
        println(&format!(
            "{}\t{} -> {} bytes\t{} record(s) left out",
            s.segment, s.bytes_before, s.bytes_after, s.records_dropped
        ));
    }
    let merged = if report.segments_merged > 0 {
        format!(
            "; {} segment file(s) merged into their neighbours",
            report.segments_merged
        )
    } else {
        String::new()
    };
    note(
        quiet,
        &format!(
            "{verb} {} bytes in {} segment(s); {} deleted session(s) erased{merged}",
            report.reclaimed_bytes(),
            report.segments.len(),
            report.sessions_erased
        ),
    );
    Ok(code::OK)
}
