//! `verify`: read every record and check every checksum by replaying the whole log, then
//! compare what the checkpoint gives with what the full replay gives.

use std::sync::Arc;

use crate::storage::Storage;
use crate::store::catalog::entries::{Entries, SessionEntry};
use crate::store::log::segments::Segment;
use crate::store::open;
use crate::store::options::StoreOptions;
use crate::store::report::VerifyReport;
use crate::{Error, Result};

/// Verifies the store on `storage` without writing to it (works beside a live writer).
///
/// # Errors
/// I/O errors only; damage is reported in [`VerifyReport::problems`].
pub fn verify(storage: Arc<dyn Storage>) -> Result<VerifyReport> {
    verify_with_progress(storage, crate::store::options::OpenProgress::default())
}

/// [`verify`], telling `progress` how far the full replay has come.
///
/// # Errors
/// As [`verify`].
pub fn verify_with_progress(
    storage: Arc<dyn Storage>,
    progress: crate::store::options::OpenProgress,
) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let full_options = StoreOptions {
        ignore_checkpoints: true,
        progress,
        ..StoreOptions::default()
    };
    // One snapshot: the view from the checkpoint first, then a full replay of exactly the
    // same log prefix, so a live writer's later appends never look like a mismatch.
    let checked = open::open(
        Arc::clone(&storage),
        StoreOptions::default(),
        open::Access::Read,
        open::Horizon::End,
        open::Judging::Every,
    );
    let horizon = checked.as_ref().map_or(open::Horizon::End, |inner| {
        open::Horizon::Lsn(inner.writer.end().lsn)
    });
    let full = match open::open(
        Arc::clone(&storage),
        full_options,
        open::Access::Read,
        horizon,
        open::Judging::Every,
    ) {
        Ok(inner) => inner,
        Err(e @ Error::Corruption { .. }) => {
            every_damage(&*storage, &e, &mut report);
            return Ok(report);
        }
        // The damage a salvage that died left: reported as damage, with the way on.
        Err(Error::SalvageInterrupted { damage }) => {
            report.problems.push(
                "a salvage of this store was interrupted (its SALVAGING marker is there): `sessdb repair --salvage` finishes it"
                    .to_owned(),
            );
            every_damage(&*storage, &damage, &mut report);
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    let segments = full.segments.full()?;
    let end_lsn = full.writer.end().lsn;
    report.segments = segments.len();
    report.log_bytes = (0..segments.len())
        .map(|si| Segment::record_bytes_in(&segments, si, end_lsn))
        .sum::<Result<u64>>()?;
    report.records = full.report.records_replayed;
    report.incomplete_tail_bytes = full.report.torn_tail_ignored;
    let checked = match checked {
        Ok(inner) => inner,
        Err(e) => {
            report
                .problems
                .push(format!("opening from the checkpoint fails: {e}"));
            return Ok(report);
        }
    };
    report.checkpoint = checked.report.checkpoint;
    report.compared = report.checkpoint.is_some();
    for why in &checked.report.checkpoints_discarded {
        report.problems.push(format!("unusable checkpoint: {why}"));
    }
    // Every checkpoint file's header, also of the files no open reads (the previous chain
    // kept beside the newest one).
    let headers = crate::store::checkpoint::chain::CheckpointHeaders::load(&*storage)?;
    headers.read_all();
    for why in headers.discarded() {
        if !checked.report.checkpoints_discarded.contains(&why) {
            report.problems.push(format!("unusable checkpoint: {why}"));
        }
    }
    // Every session the checkpoint's index names, decoded: a damaged entry is a problem.
    if let Err(e) = checked.catalog.write().load_all() {
        report
            .problems
            .push(format!("a checkpoint's session entry cannot be read: {e}"));
    }
    compare(&full.catalog.read(), &checked.catalog.read(), &mut report);
    Ok(report)
}

/// Compares the catalog a full replay built (`full`) with the one the checkpoint gives
/// (`checked`), session by session, in id order.
fn compare(full: &Entries, checked: &Entries, report: &mut VerifyReport) {
    report.sessions = full.sessions.len();
    let mut ids: Vec<&String> = full.sessions.keys().collect();
    ids.sort();
    for (id, e) in ids
        .into_iter()
        .filter_map(|id| full.sessions.get_key_value(id))
    {
        report.events += e.state.next_seq();
        match checked.sessions.get(id) {
            None => report.problems.push(format!(
                "session {id:?} is in the log but not in the checkpoint's view"
            )),
            Some(c) => compare_session(id, e, c, report),
        }
    }
    let mut extra: Vec<&String> = checked
        .sessions
        .keys()
        .filter(|id| !full.sessions.contains_key(*id))
        .collect();
    extra.sort();
    for id in extra {
        report.problems.push(format!(
            "session {id:?} is in the checkpoint's view but not in the log"
        ));
    }
}

/// One session as a full replay (`e`) and the checkpoint (`c`) give it.
fn compare_session(id: &str, e: &SessionEntry, c: &SessionEntry, report: &mut VerifyReport) {
    if c.header != e.header {
        report.problems.push(format!(
            "session {id:?}: the checkpoint's header differs from the log's"
        ));
    }
    if c.state != e.state {
        report.problems.push(format!(
            "session {id:?}: the checkpoint's surface or repair state differs from a full replay"
        ));
    }
    // Every checkpoint run is read and checked here (an open reads none).
    let same = match (c.locs.iter(), e.locs.iter()) {
        (Ok(c), Ok(e)) => Ok(c.eq(e)),
        (Err(damage), _) | (_, Err(damage)) => Err(damage),
    };
    match same {
        Ok(true) => {}
        Ok(false) => report.problems.push(format!(
            "session {id:?}: the checkpoint's event index differs from a full replay"
        )),
        Err(damage) => report.problems.push(format!(
            "session {id:?}: the checkpoint's event index: {damage}"
        )),
    }
}

/// The full replay stopped at `first`: every damaged place of the log, as salvage's plan
/// (which reads on past damage, and writes nothing) finds them, after the first one, and what
/// it read intact (records, bytes, sessions, events; the newest checkpoint, not compared).
fn every_damage(storage: &dyn Storage, first: &Error, report: &mut VerifyReport) {
    report.problems.push(first.to_string());
    report.checkpoint = crate::store::checkpoint::chain::CheckpointHeaders::load(storage)
        .ok()
        .and_then(|h| h.newest_readable());
    let Ok(plan) = crate::store::salvage::plan(storage) else {
        return;
    };
    report.segments = crate::store::log::discover::segment_lsns(storage).map_or(0, |l| l.len());
    report.records = plan.read.records;
    report.log_bytes = plan.read.log_bytes;
    report.sessions = plan.read.sessions;
    report.events = plan.read.events;
    for d in plan.report.damage {
        let same = matches!(first, Error::Corruption { segment, offset, .. }
            if *segment == d.segment && *offset == d.offset);
        if !same {
            report.problems.push(
                Error::Corruption {
                    segment: d.segment,
                    offset: d.offset,
                    kind: d.kind,
                }
                .to_string(),
            );
        }
    }
}
