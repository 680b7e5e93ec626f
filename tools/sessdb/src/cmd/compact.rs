//! `sessdb compact STORE [--dry-run]`

use sessdb::StoreOptions;

use crate::cmd::{PathArg, open_existing, open_store_writer};
use crate::error::{CliResult, code};
use crate::out::{note, print_json, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory (no writer may hold it, except for a dry run).
    pub store: PathArg,
    /// Print what would be reclaimed per segment; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// One JSON object: `{"dryRun", "reclaimedBytes", "sessionsErased", "sessionsKept",
    /// "segmentsMerged", "segments": [{"segment", "bytesBefore", "bytesAfter",
    /// "recordsDropped"}]}`.
    #[arg(long)]
    pub json: bool,
}

/// `compact --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Compacted {
    dry_run: bool,
    reclaimed_bytes: u64,
    sessions_erased: usize,
    sessions_kept: usize,
    segments_merged: usize,
    segments: Vec<SegmentJson>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SegmentJson {
    segment: String,
    bytes_before: u64,
    bytes_after: u64,
    records_dropped: u64,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    // One compaction, the command's own: no background one beside it. A dry run changes
    // nothing: it reads the store read-only, beside an application that holds it.
    let store = if a.dry_run {
        open_existing(&a.store)?
    } else {
        open_store_writer(&a.store, StoreOptions::default().with_compaction(None))?
    };
    let result = if a.dry_run {
        store.compact_plan()
    } else {
        store.compact()
    };
    let close = store.close();
    let report = result?;
    close?;
    if a.json {
        print_json(&Compacted {
            dry_run: a.dry_run,
            reclaimed_bytes: report.reclaimed_bytes(),
            sessions_erased: report.sessions_erased,
            sessions_kept: report.sessions_kept,
            segments_merged: report.segments_merged,
            segments: report
                .segments
                .iter()
                .map(|s| SegmentJson {
                    segment: s.segment.clone(),
                    bytes_before: s.bytes_before,
                    bytes_after: s.bytes_after,
                    records_dropped: s.records_dropped,
                })
                .collect(),
        });
        return Ok(code::OK);
    }
    let verb = if a.dry_run {
        "would reclaim"
    } else {
        "reclaimed"
    };
    // `-q`: the summary line alone goes too (a warning about data never would).
    for s in report.segments.iter().filter(|_| !quiet) {
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
    // A deletion that reclaims nothing says why: a live fork reads what it inherited.
    let kept = if report.sessions_kept > 0 {
        format!(
            "; {} deleted session(s) kept in part: live forks read them",
            report.sessions_kept
        )
    } else {
        String::new()
    };
    note(
        quiet,
        &format!(
            "{verb} {} bytes in {} segment(s); {} deleted session(s) erased{kept}{merged}",
            report.reclaimed_bytes(),
            report.segments.len(),
            report.sessions_erased
        ),
    );
    Ok(code::OK)
}
