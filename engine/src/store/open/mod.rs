//! Opening a store. Everything is decided before anything is written, so an open that
//! refuses leaves every file as it was.
//!
//! Order: (1) take the writer lock; (2) read the checkpoint headers — before the segments, so
//! every checkpoint seen was written after the log it covers was durable; (3) list the
//! segments and check their headers (`log/discover.rs`); (4) pick the newest checkpoint chain
//! the log confirms (`chain.rs`); (5) scan the log from its position with the log cursor,
//! replaying each record (`scan.rs`), the decision table deciding wherever the cursor stops;
//! (6) only then, for a writable open: remove leftover temp files, a merge's leftover segments and an interrupted segment
//! creation, and cut the torn tail.

pub(crate) mod refresh;
pub(crate) mod replay;
pub(crate) mod scan;

use crate::codec::frame::RecordLink;
use crate::storage::{Checked, CheckedFile};
use crate::store::log::cursor::Writers;
use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::codec::checkpoint::{BodyLayout, CHECKPOINTS_DIR, checkpoint_path};
use crate::codec::segment::SEGMENTS_DIR;
use crate::codec::{CorruptionKind, LOCK_FILE};
use crate::storage::{LockGuard, Storage};
use crate::store::catalog::Catalog;
use crate::store::catalog::entries::Entries;
use crate::store::checkpoint::Checkpointer;
use crate::store::checkpoint::chain::{CheckpointHeaders, Confirmed};
use crate::store::checkpoint::state::CheckpointState;
use crate::store::inner::Inner;
use crate::store::log::discover::{Pending, Strays, discover, discover_newest, judge_older};
use crate::store::log::segments::{JudgeOlder, SegmentList, create_segment};
use crate::store::maintenance::Maintenance;
use crate::store::open::scan::{Scanned, Span, scan};
use crate::store::options::StoreOptions;
use crate::store::report::OpenReport;
use crate::store::salvage;
pub(crate) use crate::store::writer::Access;
use crate::store::writer::tail::{Active, Tail};
use crate::store::writer::{LogEnd, Writer};
use crate::{Error, Result};

/// How far an open replays the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Horizon {
    /// To its end.
    End,
    /// Up to this position only (read-only: a snapshot — `verify` compares two views of the
    /// same log prefix).
    Lsn(u64),
}

/// Which segments an open judges before it returns (`docs/DESIGN.md` §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Judging {
    /// The newest; the older ones at their first use (a store an application opens).
    Newest,
    /// Every one: a view read whole at once (`verify`, a backup's copy, a view built again
    /// because older segments were rewritten under it).
    Every,
}

/// Opens the store with `access`, replaying the log to `horizon`, judging the segments
/// `judging` names now.
pub(super) fn open(
    storage: Arc<dyn Storage>,
    options: StoreOptions,
    access: Access,
    horizon: Horizon,
    judging: Judging,
) -> Result<Inner> {
    let stop_lsn = match horizon {
        Horizon::End => u64::MAX,
        Horizon::Lsn(lsn) => lsn,
    };
    debug_assert!(
        access == Access::Read || horizon == Horizon::End,
        "a writer opens to the end"
    );
    let interrupted = crate::store::salvage::marker::is_set(&*storage);
    let opened = match open_log(
        Arc::clone(&storage),
        options.clone(),
        access,
        stop_lsn,
        judging,
    ) {
        // A read-only open whose replay reached older segments a writer's compaction had
        // rewritten since the listing: judged whole, as a view is built again. The replay
        // reports what it could not read as the record's damage (a stored event it could
        // not check against), so damage is asked again of a view judged whole too, as
        // `refresh` reports only damage a fresh view sees: a store damaged there is refused
        // by that open.
        Err(Error::Overtaken { .. } | Error::Corruption { .. })
            if judging == Judging::Newest && access == Access::Read =>
        {
            open_log(
                Arc::clone(&storage),
                options,
                access,
                stop_lsn,
                Judging::Every,
            )
        }
        other => other,
    };
    match opened {
        // Damage found while a salvage's marker is there: the log is likely half rewritten
        // by a salvage that died, and the way on is to finish it, not to look for damage.
        Err(damage @ Error::Corruption { .. }) if interrupted => Err(Error::SalvageInterrupted {
            damage: Box::new(damage),
        }),
        other => other,
    }
}

fn open_log(
    storage: Arc<dyn Storage>,
    options: StoreOptions,
    access: Access,
    stop_lsn: u64,
    judging: Judging,
) -> Result<Inner> {
    let mut report = OpenReport::default();
    let lock = match access {
        Access::Read => None,
        Access::Write => Some(before_reading(&*storage, &options, &mut report)?),
    };
    let headers = CheckpointHeaders::load(&*storage)?;
    // The newest segments judged now, the older ones at their first use (§3.6 of DESIGN.md):
    // the writer's lock keeps them the files listed; a read-only view holds them to the
    // identities listed, and is built again where a writer rewrote them first.
    let discovered = match judging {
        Judging::Newest => discover_newest(&*storage, access)?,
        Judging::Every => discover(&*storage, access)?,
    };
    let list = match discovered.pending {
        Some(pending) => SegmentList::with_older(
            discovered.segments,
            pending.before,
            judge_older_later(Arc::clone(&storage), access, pending),
        ),
        None => SegmentList::new(discovered.segments),
    };

    let confirmed = headers.confirm(&list);
    let durable_lsn = confirmed.durable_mark();
    let Loaded {
        mut catalog,
        chain_state,
        scanned,
        last_record,
        touched,
    } = load_with_fallback(
        &Sources {
            headers: &headers,
            confirmed: &confirmed,
            list: &list,
            options: &options,
            durable_lsn,
            access,
            stop_lsn,
        },
        &mut report,
    )?;
    // The headers read that did not check out, before what choosing a chain passed over.
    report
        .checkpoints_discarded
        .splice(0..0, headers.discarded());
    report.records_replayed = scanned.records;
    report.torn_tail_ignored = scanned.pending_bytes;
    report.sessions_touched = touched.into_iter().collect();
    // Recovery has decided: the store opens. Only now is anything written.
    let tail = match access {
        Access::Read => None,
        Access::Write => Some(finish_writable(
            &*storage,
            &options,
            &list,
            discovered.strays,
            &scanned,
            last_record,
            &mut report,
        )?),
    };
    // A salvage marker left by a salvage that died: this open found the log consistent, so
    // readers may build their views from it again.
    if access == Access::Write && crate::store::salvage::marker::is_set(&*storage) {
        crate::store::salvage::marker::clear(&*storage)?;
    }
    catalog.shrink_to_fit();
    let end = LogEnd {
        lsn: scanned.end_lsn,
        last_record,
    };
    let resident = options.resident_sessions;
    Ok(Inner {
        checkpointer: Checkpointer::new(
            chain_state,
            scanned.end_lsn,
            options.checkpoint_interval_bytes,
            options.checkpoint_merge_every,
            options.checkpoint_writes,
        ),
        storage,
        options,
        lock: Mutex::new(lock),
        segments: list,
        writer: Writer::new(tail, end),
        catalog: Catalog::new(catalog, resident),
        maintenance: Maintenance::default(),
        report,
    })
}

/// A writer's steps before the log is read: the lock, a new store's directories, the salvage
/// the options ask for.
fn before_reading(
    storage: &dyn Storage,
    options: &StoreOptions,
    report: &mut OpenReport,
) -> Result<LockGuard> {
    let lock = storage
        .try_lock(LOCK_FILE)
        .map_err(|e| Error::io("lock", storage.describe(LOCK_FILE), e))?
        .ok_or_else(|| Error::Locked {
            lock_file: storage.describe(LOCK_FILE),
        })?;
    // A new store's directories (on an existing store they are there: nothing changes).
    for dir in [SEGMENTS_DIR, CHECKPOINTS_DIR] {
        storage.create_directory(dir)?;
    }
    if options.salvage {
        let mut plan = salvage::plan(storage)?;
        salvage::apply(storage, options, &mut plan)?;
        if !plan.report.is_empty() {
            report.salvaged = Some(plan.report);
        }
    }
    Ok(lock)
}

/// The writes of a writable open, once recovery has decided: leftover temp files (a
/// checkpoint or salvage replacement interrupted before its rename) and an interrupted
/// segment creation go, the torn tail is cut, and an empty store gets its first segment.
/// Returns the append position.
fn finish_writable(
    storage: &dyn Storage,
    options: &StoreOptions,
    list: &SegmentList,
    strays: crate::store::log::discover::Strays,
    scanned: &Scanned,
    last_record: Option<RecordLink>,
    report: &mut OpenReport,
) -> Result<Tail> {
    for dir in [CHECKPOINTS_DIR, SEGMENTS_DIR] {
        let names = storage.list_dir(dir)?;
        for name in names.iter().filter(|n| n.ends_with(".tmp")) {
            let path = format!("{dir}/{name}");
            storage.remove_file(&path)?;
        }
    }
    let crate::store::log::discover::Strays {
        interrupted,
        leftovers,
    } = strays;
    // A merge's leftovers hold nothing the merged segment does not (`compact/merge.rs`).
    for path in &leftovers {
        storage.remove_file(path)?;
    }
    if !leftovers.is_empty() && interrupted.is_none() {
        storage.sync_directory(SEGMENTS_DIR)?;
    }
    if let Some(path) = interrupted {
        storage.remove_file(&path)?;
        storage.sync_directory(SEGMENTS_DIR)?;
        report.segments_removed.push(path);
    }
    if let Some(cut) = &scanned.cut {
        let seg = &cut.segment;
        seg.file.at(&seg.path).set_len(cut.offset)?;
        seg.file.at(&seg.path).sync_data()?;
        report.bytes_truncated = cut.bytes;
    }
    let active = match list.last() {
        // Compaction writes only sealed segments: after a compacted newest one, the first
        // write creates the next segment, as after a roll.
        Some(last) if last.is_compacted() => Active::Due,
        Some(active) => Active::Open(active),
        None => {
            let first = create_segment(storage, 0, options.clock.now_ms())?;
            list.push(Arc::clone(&first));
            Active::Open(first)
        }
    };
    Tail::at(active, scanned.end_lsn, last_record, options)
}

/// How the segments an open left are judged at their first use (`log/discover.rs`,
/// `judge_older`): as the open judges, and — by a writable store — a merge's leftover found
/// among them removed, as the open removes one (a read-only view never writes).
fn judge_older_later(storage: Arc<dyn Storage>, access: Access, pending: Pending) -> JudgeOlder {
    Box::new(move |next| {
        let mut strays = Strays::default();
        let judged = judge_older(&*storage, access, &pending, next, &mut strays)?;
        debug_assert!(
            strays.interrupted.is_none(),
            "only the newest is interrupted"
        );
        if access == Access::Write && !strays.leftovers.is_empty() {
            // A merge's leftovers hold nothing the merged segment does not (`compact/merge.rs`).
            for path in &strays.leftovers {
                storage.remove_file(path)?;
            }
            storage.sync_directory(SEGMENTS_DIR)?;
        }
        Ok(judged)
    })
}

/// What loading the catalog gives.
struct Loaded {
    catalog: Entries,
    chain_state: CheckpointState,
    scanned: Scanned,
    /// The last record read (the checkpoint's, when the log after it is empty).
    last_record: Option<RecordLink>,
    /// The sessions the replay touched.
    touched: BTreeSet<String>,
}

/// What a load reads from, as the open found it.
struct Sources<'a> {
    headers: &'a CheckpointHeaders<'a>,
    /// Each checkpoint confirmed against the log, once.
    confirmed: &'a Confirmed<'a, 'a>,
    list: &'a SegmentList,
    options: &'a StoreOptions,
    durable_lsn: u64,
    access: Access,
    stop_lsn: u64,
}

/// Loads the catalog from the newest usable checkpoint chain, then the log after it. A
/// checkpoint's location run that fails its checksum while the chain is applied or the log
/// after it replayed (an earlier event read for a rule) is that checkpoint's damage: the
/// whole log is replayed instead.
fn load_with_fallback(from: &Sources<'_>, report: &mut OpenReport) -> Result<Loaded> {
    match load(from, from.options.ignore_checkpoints, report) {
        Err(Error::Corruption {
            kind:
                kind @ (CorruptionKind::CheckpointLocations
                | CorruptionKind::CheckpointEntry
                | CorruptionKind::CheckpointIndex),
            segment,
            ..
        }) if !from.options.ignore_checkpoints => {
            report.checkpoints_discarded.push(format!(
                "{kind} (found reading {segment}); the whole log is replayed"
            ));
            report.checkpoint = None;
            load(from, true, report)
        }
        other => other,
    }
}

/// Loads the catalog: the newest usable checkpoint chain (none with `full_replay`), then the
/// log after it.
fn load(from: &Sources<'_>, full_replay: bool, report: &mut OpenReport) -> Result<Loaded> {
    let Sources {
        headers,
        confirmed,
        list,
        options,
        durable_lsn,
        access,
        stop_lsn,
    } = *from;
    let chosen = if full_replay {
        // A full replay wants only the durable mark: no body is read.
        None
    } else {
        confirmed.choose(&mut report.checkpoints_discarded)
    };
    let mut catalog = Entries::default();
    let mut start_lsn = 0;
    let mut last_record = None;
    let mut used = None;
    if let Some(chosen) = chosen {
        let meta = chosen.meta;
        let layout = chosen
            .bodies
            .last()
            .map_or(BodyLayout::CURRENT, |b| b.layout);
        crate::store::checkpoint::load::apply_chain(chosen.bodies, &mut catalog)
            .map_err(|e| Error::corruption(&checkpoint_path(meta.generation), 0, e.kind()))?;
        // `deleted` is what the next delta must say was deleted since the chain: nothing yet.
        // Left as the chain's deltas filled it, the next delta named again an id the chain
        // deleted and a later delta created anew — and an open then deleted the new session
        // before extending it (`regression_a_deleted_id_created_again_extends_after_reopen`).
        catalog.deleted.clear();
        report.checkpoint = Some(meta.generation);
        start_lsn = meta.covered_lsn;
        last_record = meta.last_record;
        used = Some((meta, chosen.base, layout));
    }
    let chain_state =
        CheckpointState::from_open(used.as_ref().map(|(m, b, l)| (m, *b, *l)), headers.newest());

    let mut touched = BTreeSet::new();
    let span = Span {
        start_lsn,
        // A snapshot ends at its stop: a checkpoint written since vouches past it.
        durable_lsn: durable_lsn.max(start_lsn).min(stop_lsn),
        stop_lsn,
        writers: match access {
            Access::Read => Writers::Beside,
            Access::Write => Writers::Excluded,
        },
    };
    let scanned = scan(
        list,
        options,
        span,
        &mut last_record,
        &mut catalog,
        &mut touched,
    )?;
    Ok(Loaded {
        catalog,
        chain_state,
        scanned,
        last_record,
        touched,
    })
}
