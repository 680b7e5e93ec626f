//! `sessdb repair STORE [--salvage] [--dry-run]`

use sessdb::StoreOptions;
use sessdb::storage::FsStorage;
use sessdb::store::{DamageRepair, SalvageReport, salvage_plan};

use crate::cmd::{PathArg, is_store, open_store_writer};
use crate::error::{CliError, CliResult, code, no_store};
use crate::out::{println, scan_bar, shown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// Skip damaged records: cut only the sessions that had events in them, each at its last
    /// intact event; keep every other session whole. Prints what each session lost.
    #[arg(long)]
    salvage: bool,
    /// Print what the repair would do and change nothing (with --salvage: the salvage plan).
    #[arg(long)]
    dry_run: bool,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    if a.dry_run && !a.salvage {
        return plan(a, quiet);
    }
    if a.dry_run {
        if !is_store(&a.store) {
            return Err(no_store(&a.store));
        }
        let storage = FsStorage::new(&a.store);
        let report = salvage_plan(&storage, &StoreOptions::default())?;
        if report.is_empty() {
            println("nothing to salvage");
        } else {
            print_salvage(&report, true);
        }
        // What the real run then writes, too: a dry run hides none of its writes.
        for id in &report.open_turns {
            println(&format!(
                "would close the open turn of {} (repair closers, then an end-seed marker)",
                shown(id)
            ));
        }
        return Ok(code::OK);
    }
    // Repair reads the whole log, not only what follows the checkpoint: damage anywhere is
    // found here, as `verify` finds it.
    let (bar, progress) = scan_bar(quiet, "reading the log");
    let options = StoreOptions::default()
        .with_compaction(None)
        .with_salvage(a.salvage)
        .with_ignore_checkpoints(true)
        .with_progress(progress);
    let store = open_store_writer(&a.store, options);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let store = store.map_err(|e| if a.salvage { e } else { salvage_hint(e) })?;
    let report = store.open_report().clone();
    if report.bytes_truncated > 0 {
        println(&format!(
            "cut a torn tail of {} byte(s)",
            report.bytes_truncated
        ));
    }
    if let Some(s) = &report.salvaged {
        print_salvage(s, false);
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
            shown(&info.header.id),
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

/// A refusal for corruption, with the way to see what salvage would keep.
fn salvage_hint(e: CliError) -> CliError {
    if e.message.contains("corruption") {
        CliError {
            hint: Some("rerun with --salvage --dry-run to see what salvage would keep"),
            ..e
        }
    } else {
        e
    }
}

/// `repair --dry-run`: what a plain repair would do, read from a read-only open of the whole
/// log (as the repair reads it), nothing written.
fn plan(a: &Args, quiet: bool) -> CliResult {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let (bar, progress) = scan_bar(quiet, "reading the log");
    let options = StoreOptions::default()
        .with_ignore_checkpoints(true)
        .with_progress(progress);
    let store =
        sessdb::Store::open_read_only_with(std::sync::Arc::new(FsStorage::new(&a.store)), options);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let store = store.map_err(|e| salvage_hint(CliError::from(e)))?;
    let report = store.open_report().clone();
    let mut any = false;
    if report.torn_tail_ignored > 0 {
        any = true;
        println(&format!(
            "would cut a torn tail of {} byte(s)",
            report.torn_tail_ignored
        ));
    }
    for info in store.list().into_iter().filter(|i| i.turn_open) {
        any = true;
        println(&format!(
            "would close the open turn of {} (repair closers, then an end-seed marker)",
            shown(&info.header.id)
        ));
    }
    if !any {
        println("nothing to repair");
    }
    Ok(code::OK)
}

/// The salvage report, one line per damaged place and per session that loses events.
fn print_salvage(r: &SalvageReport, dry_run: bool) {
    let (void, cut, remove, header, drop) = if dry_run {
        (
            "would void",
            "would cut",
            "would remove",
            "would rewrite",
            "would remove",
        )
    } else {
        ("voided", "cut", "removed", "rewrote", "removed")
    };
    for d in &r.damage {
        let what = match d.repair {
            DamageRepair::Voided => format!("{void} {} byte(s)", d.bytes),
            DamageRepair::Cut => format!("{cut} a torn tail of {} byte(s)", d.bytes),
            DamageRepair::SegmentRemoved => format!("{remove} the segment"),
            DamageRepair::HeaderRewritten => format!("{header} the segment header"),
            DamageRepair::CheckpointsRemoved => {
                format!("{drop} the checkpoints; the sessions they remember longer are named below")
            }
            _ => "left alone".to_owned(),
        };
        let whose = match (&d.repair, d.session.as_deref()) {
            (_, Some(s)) => format!(", session {}", shown(s)),
            // Missing records name no session of their own: the losses below do.
            (DamageRepair::CheckpointsRemoved, None) => String::new(),
            (_, None) => ", session unreadable".to_owned(),
        };
        println(&format!(
            "damage: {} at byte {} ({}{whose}): {what}",
            d.segment, d.offset, d.kind
        ));
    }
    for s in &r.sessions {
        let through = s
            .lost_through
            .map_or_else(String::new, |l| format!(" through {l}"));
        let kept = if s.kept == 0 {
            "lost whole".to_owned()
        } else {
            format!("keeps seqs 0..={}", s.kept - 1)
        };
        println(&format!(
            "session {}: {kept}; loses seqs from {}{through}",
            shown(&s.session),
            s.kept
        ));
    }
    if r.records_dropped > 0 {
        println(&format!(
            "{} intact record(s) of cut sessions dropped",
            r.records_dropped
        ));
    }
    println(&format!(
        "salvage{}: {} damaged place(s), {} session(s) lose events; every other session is kept whole",
        if dry_run { " plan" } else { "d" },
        r.damage.len(),
        r.sessions.len()
    ));
}
