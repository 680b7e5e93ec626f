//! A compacted segment's file written (`docs/FORMAT.md` §2.1): the header and kept frames
//! given, then the run and tombstone tables and the footer, put in place of the file under the
//! same name by one rename (`storage/replace.rs`) and opened for reading. What both a
//! rewrite and a merge end with.

use std::sync::Arc;

use crate::codec::CorruptionKind;
use crate::codec::compacted::{FOOTER_LEN, Footer, Run, Runs, Tombstone};
use crate::storage::{OpenMode, Replacement, Storage};
use crate::store::segments::Segment;
use crate::{Error, Result};

/// What a compacted file holds besides its header and frames.
pub(super) struct Layout {
    pub(super) first_lsn: u64,
    pub(super) end_lsn: u64,
    pub(super) runs: Vec<Run>,
    /// In any order.
    pub(super) tombstones: Vec<Tombstone>,
    /// The header's creation time.
    pub(super) now_ms: i64,
}

/// Writes `out` (header and kept frames) with `layout`'s tables under `path`; returns the
/// segment and the file's length. The tables are appended to `out`.
pub(super) fn write_compacted(
    storage: &dyn Storage,
    path: &str,
    out: &mut Vec<u8>,
    layout: Layout,
) -> Result<(Arc<Segment>, u64)> {
    let Layout {
        first_lsn,
        end_lsn,
        runs,
        mut tombstones,
        now_ms,
    } = layout;
    tombstones.sort_unstable_by_key(|t| t.lsn);
    let records_end = out.len() as u64;
    let runs = Runs::new(runs, first_lsn, records_end, end_lsn)
        .and_then(|r| r.with_tombstones(tombstones))
        .map_err(|why| Error::corruption(path, 0, CorruptionKind::RunTable(why)))?;
    out.extend_from_slice(&runs.encode());
    let file_len = out.len() as u64;
    let footer = out
        .get(out.len() - FOOTER_LEN..)
        .and_then(|f| Footer::decode(f, file_len).ok())
        .ok_or_else(|| Error::corruption(path, 0, CorruptionKind::RunTable("footer")))?;
    let io = |op: &'static str| move |e| Error::io(op, path, e);
    let replacement = Replacement::create(storage, path).map_err(io("create"))?;
    replacement.file().write_at(out, 0).map_err(io("write"))?;
    replacement.commit().map_err(io("replace"))?;
    let file = storage.open(path, OpenMode::Read).map_err(io("open"))?;
    let segment = Segment::compacted(first_lsn, Arc::from(file), footer, file_len, now_ms);
    Ok((Arc::new(segment), file_len))
}
