//! Opening a store: lock, segment headers, checkpoint choice; then the recovery scan
//! (`scan.rs`) replays and repairs.
//!
//! Order: (1) take the writer lock; (2) read every segment header and check that each
//! segment continues the previous one; (3) pick the newest checkpoint chain that the log
//! confirms (the record it names is there with its checksum), else fall back to older ones
//! and at worst to nothing; (4) scan the log from the checkpoint's position, replaying each
//! record through the acceptance function, and let the decision table (`log::recovery`)
//! decide what to do where a scan stops early.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Condvar, Mutex, RwLock};

use super::catalog::Catalog;
use super::checkpoint;
use super::discover::load_segments;
use super::inner::{CheckpointState, Inner};
use super::options::StoreOptions;
use super::report::OpenReport;
use super::salvage;
use super::scan::scan;
use super::segments::{SegmentList, create_segment};
use crate::codec::checkpoint::{Body, CHECKPOINTS_DIR, CheckpointMeta, checkpoint_path};
use crate::codec::frame::{FRAME_HEADER_LEN, FrameCheck, check_frame};
use crate::codec::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR};
use crate::codec::{CorruptionKind, LOCK_FILE};
use crate::storage::Storage;
use crate::{Error, Result};

/// Opens the store; a read-only open with `stop_lsn` other than `u64::MAX` sees the log only up
/// to that position (a snapshot: `verify` compares two views of the same log prefix).
pub(super) fn open(
    storage: Arc<dyn Storage>,
    options: StoreOptions,
    read_only: bool,
    stop_lsn: u64,
) -> Result<Inner> {
    let lock = if read_only {
        None
    } else {
        match storage
            .try_lock(LOCK_FILE)
            .map_err(|e| Error::io("lock", storage.describe(LOCK_FILE), e))?
        {
            Some(guard) => Some(guard),
            None => {
                return Err(Error::Locked {
                    lock_file: storage.describe(LOCK_FILE),
                });
            }
        }
    };
    if !read_only {
        storage
            .create_dir_all(SEGMENTS_DIR)
            .map_err(|e| Error::io("create directory", SEGMENTS_DIR, e))?;
        storage
            .create_dir_all(CHECKPOINTS_DIR)
            .map_err(|e| Error::io("create directory", CHECKPOINTS_DIR, e))?;
    }
    let mut report = OpenReport::default();
    if !read_only {
        // A checkpoint or salvage replacement interrupted before its rename leaves a temp
        // file: garbage.
        for dir in [CHECKPOINTS_DIR, SEGMENTS_DIR] {
            let names = storage.list(dir).map_err(|e| Error::io("list", dir, e))?;
            for name in names.iter().filter(|n| n.ends_with(".tmp")) {
                let path = format!("{dir}/{name}");
                storage
                    .remove(&path)
                    .map_err(|e| Error::io("remove", &path, e))?;
            }
        }
    }
    if options.salvage && !read_only {
        let mut plan = salvage::plan(&*storage, &options)?;
        salvage::apply(&*storage, &options, &mut plan)?;
        if !plan.report.is_empty() {
            report.salvaged = Some(plan.report);
        }
    }
    let mut segments = load_segments(&*storage, read_only, &mut report)?;
    if segments.is_empty() && !read_only {
        segments.push(create_segment(&*storage, 0, options.clock.now_ms())?);
    }
    let list = SegmentList::new(segments.clone());

    // The newest checkpoint chain the log confirms.
    let mut catalog = Catalog::default();
    let mut ck_state = CheckpointState::default();
    let mut start_lsn = 0;
    let mut last_record = None;
    let mut durable_lsn = 0;
    let chosen = choose_checkpoint(
        &*storage,
        &list,
        read_only,
        options.ignore_checkpoints,
        &mut report,
        &mut durable_lsn,
    )?;
    if !read_only && durable_lsn > log_end(&list)? {
        // A checkpoint vouches for records the log no longer has: acknowledged data is gone.
        return Err(Error::corruption(
            SEGMENTS_DIR,
            durable_lsn,
            CorruptionKind::Inconsistent(
                "the log ends before a checkpoint's covered position: vouched records are missing",
            ),
        ));
    }
    if let Some((chain, meta, base)) = chosen {
        for body in chain {
            if let Err(why) = checkpoint::apply(body, &mut catalog) {
                return Err(Error::corruption(
                    &checkpoint_path(meta.generation),
                    0,
                    CorruptionKind::Inconsistent(why),
                ));
            }
        }
        report.checkpoint = Some(meta.generation);
        start_lsn = meta.covered_lsn;
        last_record = meta.last_record;
        ck_state.generation = meta.generation;
        ck_state.covered_lsn = meta.covered_lsn;
        ck_state.last_full = base;
    }
    if let Ok(gens) = checkpoint::list(&*storage) {
        // Later checkpoints than the one used were discarded: never build on them.
        ck_state.generation = ck_state.generation.max(gens.last().copied().unwrap_or(0));
        if ck_state.generation > report.checkpoint.unwrap_or(0) {
            ck_state.covered_lsn = u64::MAX; // force the next checkpoint to be written
        }
        // The next checkpoint is full when the chain in use is not the newest.
        ck_state.deltas_since_full = if report.checkpoint == gens.last().copied() {
            0
        } else {
            u32::MAX - 1
        };
    }

    let mut touched = BTreeSet::new();
    let mut end = start_lsn;
    let tail = scan(
        &list,
        &options,
        read_only,
        start_lsn,
        durable_lsn.max(start_lsn),
        stop_lsn,
        &mut last_record,
        &mut catalog,
        &mut touched,
        &mut report,
        &mut end,
    )?;
    report.sessions_touched = touched.into_iter().collect();
    // Replay grew vectors by doubling; the resident index keeps only what it holds.
    for e in catalog.sessions.values_mut() {
        e.locs.shrink_to_fit();
        e.state.surface.shrink_to_fit();
    }
    let synced = tail.as_ref().map_or(0, |t| t.next_lsn);
    let active_first_lsn = tail.as_ref().map_or(u64::MAX, |t| t.active.first_lsn);
    let active = tail
        .as_ref()
        .map(|t| (Arc::clone(&t.active.file), t.active.path.clone()));
    Ok(Inner {
        storage,
        options,
        read_only,
        lock: Mutex::new(lock),
        segments: list,
        tail: Mutex::new(tail),
        read_end: Mutex::new((end, last_record)),
        catalog: RwLock::new(catalog),
        sync_state: Mutex::new(super::inner::SyncState {
            durable: synced,
            leader: false,
        }),
        sync_done: Condvar::new(),
        written_lsn: std::sync::atomic::AtomicU64::new(synced),
        active_first_lsn: std::sync::atomic::AtomicU64::new(active_first_lsn),
        active: Mutex::new(active),
        poisoned: Mutex::new(None),
        poison_flag: AtomicBool::new(false),
        bytes_since_checkpoint: AtomicU64::new(0),
        ckpt: Mutex::new(ck_state),
        changes: super::changes::Changes::default(),
        closed: AtomicBool::new(false),
        report,
    })
}

/// A checkpoint chain to apply in order, its newest checkpoint, and its full base's generation.
type Chain = (Vec<Body>, CheckpointMeta, u64);

/// Loads checkpoint chains newest first; returns the first whose last record the log
/// confirms, with the bodies to apply in order. Raises `durable_lsn` to the furthest position
/// any checkpoint header vouches for.
fn choose_checkpoint(
    storage: &dyn Storage,
    segments: &SegmentList,
    read_only: bool,
    ignore_state: bool,
    report: &mut OpenReport,
    durable_lsn: &mut u64,
) -> Result<Option<Chain>> {
    let gens = checkpoint::list(storage)?;
    let log_end = log_end(segments)?;
    // Headers only: a body is read when its chain is the one used.
    let mut loaded = std::collections::BTreeMap::new();
    let mut any_gone = false;
    for &g in &gens {
        match checkpoint::open_header(storage, g) {
            Ok(opened) => {
                loaded.insert(g, opened);
            }
            Err(unusable) => {
                any_gone |= unusable.gone;
                if !unusable.gone {
                    report.checkpoints_discarded.push(unusable.why);
                }
            }
        }
    }
    // Every checkpoint with a valid header vouches for the log before its covered LSN,
    // whether or not its state can be used — unless the log holds another valid record where
    // it points (it belongs to another store's log).
    for opened in loaded
        .values()
        .filter(|o| vouches(segments, &o.header.meta))
    {
        *durable_lsn = (*durable_lsn).max(opened.header.meta.covered_lsn);
    }
    if ignore_state {
        // A full replay wants only the durable marks: no body is read.
        return Ok(None);
    }
    'chains: for &g in gens.iter().rev() {
        let Some(meta) = loaded.get(&g).map(|o| o.header.meta) else {
            continue;
        };
        if read_only && meta.covered_lsn > log_end {
            // Written by a live writer after this reader listed the segments: newer than
            // this view, not damage.
            continue;
        }
        if let Err(why) = confirm(segments, &meta) {
            if read_only && why == NOT_WRITTEN {
                // Where it points is still allocated space in this view: written later.
                continue;
            }
            report
                .checkpoints_discarded
                .push(format!("{}: {why}", checkpoint_path(g)));
            continue;
        }
        // Walk the chain back to its full checkpoint.
        let mut chain = vec![g];
        let mut base = meta.base;
        while base != 0 {
            let Some(o) = loaded.get(&base) else {
                break;
            };
            chain.push(base);
            base = o.header.meta.base;
        }
        let complete = loaded
            .get(chain.last().unwrap_or(&g))
            .is_some_and(|o| o.header.meta.base == 0);
        if !complete {
            // A base that retention removed after the listing is not damage.
            if !any_gone {
                report
                    .checkpoints_discarded
                    .push(format!("{}: its chain lacks a base", checkpoint_path(g)));
            }
            continue;
        }
        let base = chain.last().copied().unwrap_or(g);
        let mut bodies = Vec::with_capacity(chain.len());
        for member in chain.iter().rev() {
            let Some(opened) = loaded.get(member) else {
                continue 'chains;
            };
            match opened.body() {
                Ok(body) => bodies.push(body),
                Err(unusable) => {
                    report.checkpoints_discarded.push(unusable.why);
                    continue 'chains;
                }
            }
        }
        return Ok(Some((bodies, meta, base)));
    }
    Ok(None)
}

const STALE: &str = "the log has another record where it points (stale checkpoint)";
const NOT_WRITTEN: &str = "the log holds only zeros where it points";

/// Whether a checkpoint header vouches for the log before its covered LSN: its named record is
/// there, damaged, or missing — anything but another valid record.
fn vouches(segments: &SegmentList, meta: &CheckpointMeta) -> bool {
    confirm(segments, meta) != Err(STALE)
}

/// The LSN just past the last byte of the segments loaded.
fn log_end(segments: &SegmentList) -> Result<u64> {
    let Some(last) = segments.all().pop() else {
        return Ok(0);
    };
    let len = last
        .file
        .len()
        .map_err(|e| Error::io("stat", &last.path, e))?;
    Ok(last.first_lsn + len.saturating_sub(SEGMENT_HEADER_LEN as u64))
}

/// Whether the log holds the record a checkpoint names, with its checksum, ending where the
/// checkpoint says.
fn confirm(segments: &SegmentList, meta: &CheckpointMeta) -> std::result::Result<(), &'static str> {
    let Some((lsn, crc)) = meta.last_record else {
        return if meta.covered_lsn == 0 {
            Ok(())
        } else {
            Err("no record named but a position past 0")
        };
    };
    let seg = segments
        .find(lsn)
        .ok_or("the record it names is not in the log")?;
    let at = seg.offset_of(lsn);
    let mut head = [0u8; FRAME_HEADER_LEN];
    seg.file
        .read_at(&mut head, at)
        .map_err(|_| "the record it names is not in the log")?;
    if head.iter().all(|&b| b == 0) {
        return Err(NOT_WRITTEN);
    }
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let mut frame = vec![0u8; FRAME_HEADER_LEN + len.min(1 << 30)];
    seg.file
        .read_at(&mut frame, at)
        .map_err(|_| "the record it names is cut short")?;
    match check_frame(&frame, u32::MAX) {
        FrameCheck::Valid {
            crc: c, frame_len, ..
        } if c == crc && lsn + frame_len as u64 == meta.covered_lsn => Ok(()),
        FrameCheck::Valid { .. } => Err(STALE),
        _ => Err("the record it names is damaged"),
    }
}
