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
use std::sync::atomic::AtomicBool;

use parking_lot::{Condvar, Mutex, RwLock};

use super::catalog::Catalog;
use super::checkpoint::{self, CheckpointMeta};
use super::report::{OpenReport, Salvaged};
use super::scan::scan;
use super::segments::{Segment, SegmentList, create_segment};
use super::{CheckpointState, Inner, StoreOptions};
use crate::log::frame::{FRAME_HEADER_LEN, FrameCheck, check_frame};
use crate::log::recovery::CorruptionKind;
use crate::log::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, parse_segment_name};
use crate::storage::{OpenMode, Storage};
use crate::{Error, Result};

const LOCK_FILE: &str = "LOCK";

pub(super) fn corrupt(segment: &str, offset: u64, kind: CorruptionKind) -> Error {
    Error::Corruption {
        segment: segment.to_owned(),
        offset,
        kind,
    }
}

pub(super) fn open(
    storage: Arc<dyn Storage>,
    options: StoreOptions,
    read_only: bool,
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
            .create_dir_all(checkpoint::CHECKPOINTS_DIR)
            .map_err(|e| Error::io("create directory", checkpoint::CHECKPOINTS_DIR, e))?;
    }
    let mut report = OpenReport::default();
    if !read_only {
        // A checkpoint interrupted before its rename leaves a temp file: garbage.
        let names = storage
            .list(checkpoint::CHECKPOINTS_DIR)
            .map_err(|e| Error::io("list", checkpoint::CHECKPOINTS_DIR, e))?;
        for name in names.iter().filter(|n| n.ends_with(".tmp")) {
            let path = format!("{}/{name}", checkpoint::CHECKPOINTS_DIR);
            storage
                .remove(&path)
                .map_err(|e| Error::io("remove", &path, e))?;
        }
    }
    let mut segments = load_segments(&*storage, read_only, &options, &mut report)?;
    if segments.is_empty() && !read_only {
        segments.push(create_segment(&*storage, 0, options.clock.now_ms())?);
    }
    let list = SegmentList::new(segments.clone());

    // The newest checkpoint chain the log confirms.
    let mut catalog = Catalog::default();
    let mut ck_state = CheckpointState::default();
    let mut start_lsn = 0;
    let mut last_record = None;
    let chosen = if options.ignore_checkpoints {
        None
    } else {
        choose_checkpoint(&*storage, &list, &mut report)?
    };
    if let Some((chain, meta, base)) = chosen {
        for body in chain {
            if let Err(why) = checkpoint::apply(body, &mut catalog) {
                return Err(corrupt(
                    &checkpoint::checkpoint_path(meta.generation),
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
        &*storage,
        &list,
        &options,
        read_only,
        start_lsn,
        &mut last_record,
        &mut catalog,
        &mut touched,
        &mut report,
        &mut end,
    )?;
    report.sessions_touched = touched.into_iter().collect();
    if report.salvaged.is_some() && !read_only {
        // Checkpoints may cover what salvage dropped: none of them can be trusted now.
        for generation in checkpoint::list(&*storage)? {
            let path = checkpoint::checkpoint_path(generation);
            storage
                .remove(&path)
                .map_err(|e| Error::io("remove", &path, e))?;
        }
        ck_state.covered_lsn = u64::MAX;
        ck_state.deltas_since_full = u32::MAX - 1;
    }
    // Replay grew vectors by doubling; the resident index keeps only what it holds.
    for e in catalog.sessions.values_mut() {
        e.locs.shrink_to_fit();
        e.state.surface.shrink_to_fit();
    }
    let synced = tail.as_ref().map_or(0, |t| t.next_lsn);
    Ok(Inner {
        storage,
        options,
        read_only,
        lock: Mutex::new(lock),
        segments: list,
        tail: Mutex::new(tail),
        read_end: Mutex::new((end, last_record)),
        catalog: RwLock::new(catalog),
        synced_lsn: Mutex::new(synced),
        poisoned: Mutex::new(None),
        ckpt: Mutex::new(ck_state),
        changes: (Mutex::new(0), Condvar::new()),
        closed: AtomicBool::new(false),
        report,
    })
}

/// Opens every segment, checks its header and that it continues the previous one.
pub(super) fn load_segments(
    storage: &dyn Storage,
    read_only: bool,
    options: &StoreOptions,
    report: &mut OpenReport,
) -> Result<Vec<Arc<Segment>>> {
    let names = storage
        .list(SEGMENTS_DIR)
        .map_err(|e| Error::io("list", SEGMENTS_DIR, e))?;
    let mut lsns: Vec<u64> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    lsns.sort_unstable();
    let mode = if read_only {
        OpenMode::Read
    } else {
        OpenMode::ReadWrite
    };
    let mut out: Vec<Arc<Segment>> = Vec::new();
    let count = lsns.len();
    let all_paths: Vec<String> = lsns
        .iter()
        .map(|&l| crate::log::segment::segment_path(l))
        .collect();
    for (i, lsn) in lsns.into_iter().enumerate() {
        let last = i + 1 == count;
        let path = crate::log::segment::segment_path(lsn);
        let file = storage
            .open(&path, mode)
            .map_err(|e| Error::io("open", &path, e))?;
        let len = file.len().map_err(|e| Error::io("stat", &path, e))?;
        let mut head = vec![0u8; usize::try_from(len.min(SEGMENT_HEADER_LEN as u64)).unwrap_or(0)];
        file.read_at(&mut head, 0)
            .map_err(|e| Error::io("read", &path, e))?;
        match SegmentHeader::decode(&head) {
            Ok(h) if h.first_lsn == lsn => {}
            Ok(_) => {
                return Err(corrupt(
                    &path,
                    0,
                    CorruptionKind::Inconsistent("segment name and header disagree"),
                ));
            }
            Err(e) => {
                // A crash while creating the newest segment leaves a short or empty header
                // and nothing after it: that segment never held a record.
                let rest_zero = len <= SEGMENT_HEADER_LEN as u64 || {
                    let mut rest =
                        vec![0u8; usize::try_from(len).unwrap_or(0) - SEGMENT_HEADER_LEN];
                    file.read_at(&mut rest, SEGMENT_HEADER_LEN as u64).is_ok()
                        && rest.iter().all(|&b| b == 0)
                };
                if last && rest_zero && !read_only {
                    storage
                        .remove(&path)
                        .map_err(|e| Error::io("remove", &path, e))?;
                    storage
                        .sync_dir(SEGMENTS_DIR)
                        .map_err(|e| Error::io("sync directory", SEGMENTS_DIR, e))?;
                    report.segments_removed.push(path);
                    continue;
                }
                if last && rest_zero {
                    continue;
                }
                if options.salvage && !read_only {
                    // Nothing of this segment or later ones can be trusted.
                    salvage_from(
                        storage,
                        &all_paths[i..],
                        report,
                        CorruptionKind::SegmentHeader(e),
                    )?;
                    break;
                }
                return Err(corrupt(&path, 0, CorruptionKind::SegmentHeader(e)));
            }
        }
        if let Some(prev) = out.last() {
            let prev_len = prev
                .file
                .len()
                .map_err(|e| Error::io("stat", &prev.path, e))?;
            let expected = prev.first_lsn + prev_len.saturating_sub(SEGMENT_HEADER_LEN as u64);
            if lsn != expected {
                if options.salvage && !read_only {
                    salvage_from(
                        storage,
                        &all_paths[i..],
                        report,
                        CorruptionKind::SegmentGap { expected },
                    )?;
                    break;
                }
                return Err(corrupt(&path, 0, CorruptionKind::SegmentGap { expected }));
            }
        }
        out.push(Arc::new(Segment::new(lsn, Arc::from(file), !last)));
    }
    Ok(out)
}

/// Salvage of damage at the start of a segment: that segment and every later one go.
fn salvage_from(
    storage: &dyn Storage,
    paths: &[String],
    report: &mut OpenReport,
    kind: CorruptionKind,
) -> Result<()> {
    let mut dropped = 0;
    for path in paths {
        if let Ok(f) = storage.open(path, OpenMode::Read) {
            dropped += f.len().unwrap_or(0);
        }
        storage
            .remove(path)
            .map_err(|e| Error::io("remove", path, e))?;
        report.segments_removed.push(path.clone());
    }
    storage
        .sync_dir(SEGMENTS_DIR)
        .map_err(|e| Error::io("sync directory", SEGMENTS_DIR, e))?;
    if let Some(first) = paths.first() {
        report.salvaged = Some(Salvaged {
            segment: first.clone(),
            offset: 0,
            kind,
            bytes_dropped: dropped,
        });
    }
    Ok(())
}

/// A checkpoint chain to apply in order, its newest checkpoint, and its full base's generation.
type Chain = (Vec<checkpoint::Body>, CheckpointMeta, u64);

/// Loads checkpoint chains newest first; returns the first whose last record the log
/// confirms, with the bodies to apply in order.
fn choose_checkpoint(
    storage: &dyn Storage,
    segments: &SegmentList,
    report: &mut OpenReport,
) -> Result<Option<Chain>> {
    let gens = checkpoint::list(storage)?;
    let mut loaded = std::collections::BTreeMap::new();
    for &g in &gens {
        match checkpoint::read(storage, g) {
            Ok(c) => {
                loaded.insert(g, c);
            }
            Err(why) => report.checkpoints_discarded.push(why),
        }
    }
    for &g in gens.iter().rev() {
        let Some((meta, _)) = loaded.get(&g) else {
            continue;
        };
        if let Err(why) = confirm(segments, meta) {
            report
                .checkpoints_discarded
                .push(format!("{}: {why}", checkpoint::checkpoint_path(g)));
            continue;
        }
        // Walk the chain back to its full checkpoint.
        let mut chain = vec![g];
        let mut base = meta.base;
        while base != 0 {
            if !loaded.contains_key(&base) {
                break;
            }
            chain.push(base);
            base = loaded.get(&base).map_or(0, |(m, _)| m.base);
        }
        let complete = loaded
            .get(chain.last().unwrap_or(&g))
            .is_some_and(|(m, _)| m.base == 0);
        if !complete {
            report.checkpoints_discarded.push(format!(
                "{}: its chain lacks a base",
                checkpoint::checkpoint_path(g)
            ));
            continue;
        }
        let meta = *meta;
        let base = chain.last().copied().unwrap_or(g);
        let bodies = chain
            .iter()
            .rev()
            .filter_map(|g| loaded.get(g).map(|(_, b)| b.clone()))
            .collect();
        return Ok(Some((bodies, meta, base)));
    }
    Ok(None)
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
    let len = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
    let mut frame = vec![0u8; FRAME_HEADER_LEN + len.min(1 << 30)];
    seg.file
        .read_at(&mut frame, at)
        .map_err(|_| "the record it names is cut short")?;
    match check_frame(&frame, u32::MAX) {
        FrameCheck::Valid {
            crc: c, frame_len, ..
        } if c == crc && lsn + frame_len as u64 == meta.covered_lsn => Ok(()),
        FrameCheck::Valid { .. } => {
            Err("the log has another record where it points (stale checkpoint)")
        }
        _ => Err("the record it names is damaged"),
    }
}
