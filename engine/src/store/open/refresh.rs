//! A read-only view catching up with the log: what a live writer appended since the open (or
//! the last refresh), read through the same scan as open. When the log was rewritten under the
//! view — salvage replaces segment files whole — or what follows no longer continues what the
//! view holds, the view is built again from the files as they are now, as a fresh read-only
//! open would; only damage that fresh view sees too is reported.

use crate::store::log::cursor::Writers;
use crate::store::writer::{Access, LogEnd};
use std::collections::BTreeSet;
use std::sync::Arc;

use crate::store::checkpoint;
use crate::store::inner::Inner;
use crate::store::log::discover::discover;
use crate::store::log::segments::Segment;
use crate::store::open;
use crate::store::open::scan::{Span, scan};
use crate::store::report::OpenReport;
use crate::store::salvage::marker;
use crate::{Error, Result};

/// Catches the view up; returns the records read (at least 1 when the view was rebuilt, 0
/// when it was kept because a salvage is rewriting the log).
pub(in crate::store) fn refresh(inner: &Inner) -> Result<u64> {
    match catch_up(inner) {
        Ok(Some(n)) => follow_checkpoints(inner, n),
        // Older segments rewritten before the view first read them: no longer its files.
        Ok(None) | Err(Error::Corruption { .. } | Error::Overtaken { .. }) => rebuild(inner),
        Err(e) => Err(e),
    }
}

/// A view that catches up decodes every session the writer changes (they are not in the index
/// it opened from), and, writing no checkpoint, never lets them go as the writer does at its
/// own. Once the sessions decoded pass what reads may keep (`resident_sessions`) and letting
/// the clean ones go is not enough, a newer checkpoint of the writer's is taken as a fresh
/// open takes it: the view is built again from it, holding decoded only what changed after
/// it. So a follower's memory follows the writer's checkpoints, not everything written since
/// the follower started. `n`: the records the catch-up read.
fn follow_checkpoints(inner: &Inner, n: u64) -> Result<u64> {
    let resident = inner.options.resident_sessions;
    // Looked at under the shared lock: most refreshes stop here, and readers go on.
    if !inner.catalog.read().decoded_past(resident) {
        return Ok(n);
    }
    {
        let mut catalog = inner.catalog.write();
        catalog.release_clean();
        if catalog.sessions.len() < resident {
            return Ok(n);
        }
    }
    // The view has caught up already: a failure from here on (listing the checkpoints,
    // opening afresh) leaves it as it is, whole, and the next refresh tries again — the files
    // it could not read fail the reads that need them, loudly.
    let Ok(listed) = checkpoint::files::list(&*inner.storage) else {
        return Ok(n);
    };
    let known = inner.checkpointer.chain().generation;
    if listed.last().is_none_or(|&g| g <= known) {
        return Ok(n);
    }
    Ok(rebuild(inner).map_or(n, |m| m.max(n)))
}

/// Reads the new records; `None` when the log was rewritten under the view.
fn catch_up(inner: &Inner) -> Result<Option<u64>> {
    let discovered = discover(&*inner.storage, Access::Read)?;
    if rewritten(&inner.segments.full()?, &discovered.segments) {
        return Ok(None);
    }
    *inner.segments.write() = discovered.segments;
    let mut scanned_to = inner.writer.scanned();
    let start = scanned_to.lsn;
    let mut last_record = scanned_to.last_record;
    let mut catalog = inner.catalog.write();
    let mut touched = BTreeSet::new();
    let span = Span {
        start_lsn: start,
        durable_lsn: start,
        stop_lsn: u64::MAX,
        writers: Writers::Beside,
    };
    let scanned = scan(
        &inner.segments,
        &inner.options,
        span,
        &mut last_record,
        &mut catalog,
        &mut touched,
    )?;
    *scanned_to = LogEnd {
        lsn: scanned.end_lsn,
        last_record,
    };
    Ok(Some(scanned.records))
}

/// Whether the segments now listed are not the ones the view read, grown: a segment the view
/// knew is gone or is another file under its name.
fn rewritten(known: &[Arc<Segment>], now: &[Arc<Segment>]) -> bool {
    known.iter().any(|k| {
        now.iter()
            .find(|n| n.first_lsn == k.first_lsn)
            .is_none_or(|n| n.file.identity() != k.file.identity())
    })
}

/// Builds the view again from the files as they are now — unless a salvage is rewriting
/// them (its marker is there, or a segment the build started from was replaced while it
/// read): then the view is kept as it is, and a later refresh, after the salvage, builds it.
/// A salvage replaces its segments one rename at a time, and a view built between two
/// renames would read a log half old, half new.
fn rebuild(inner: &Inner) -> Result<u64> {
    let storage = &*inner.storage;
    if marker::is_set(storage) {
        return Ok(0);
    }
    // A listing can fail too while a salvage removes segments under it: decided as the
    // open's failure is, once the marker is looked at again.
    let listed = |storage| discover(storage, Access::Read).map(|d| d.segments);
    let before = listed(storage);
    let fresh = open::open(
        Arc::clone(&inner.storage),
        inner.options.clone(),
        open::Access::Read,
        open::Horizon::End,
        open::Judging::Every,
    );
    if marker::is_set(storage) {
        return Ok(0);
    }
    if rewritten(&before?, &listed(storage)?) {
        return Ok(0);
    }
    let fresh = fresh?;
    let mut scanned_to = inner.writer.scanned();
    let mut catalog = inner.catalog.write();
    inner.segments.replace(fresh.segments.full()?);
    *catalog = std::mem::take(&mut *fresh.catalog.write());
    *scanned_to = fresh.writer.end();
    // The chain the new catalog came from: what `stats` reports and what the next
    // `follow_checkpoints` compares with.
    *inner.checkpointer.chain() = std::mem::take(&mut *fresh.checkpointer.chain());
    let OpenReport {
        records_replayed, ..
    } = fresh.report;
    Ok(records_replayed.max(1))
}
