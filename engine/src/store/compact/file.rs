//! A compacted segment's file written (`docs/FORMAT.md` §2.1): the header and kept frames
//! given, then the run and tombstone tables and the footer, put in place of the file under the
//! same name by one rename (`storage/replace.rs`) and opened for reading. What both a
//! rewrite and a merge end with.
//!
//! In two stages, so that a compaction can write the next files while the device takes the
//! last ones: [`stage`] writes the file under its temp name and starts its writeback;
//! [`Staged::commit`] syncs it, renames it over the segment and syncs the directory. Until
//! then nothing a reader or an open sees has changed, and a staged file dropped uncommitted
//! is removed.

use std::sync::Arc;

use crate::codec::CorruptionKind;
use crate::codec::compacted::{FOOTER_LEN, Footer, Run, Runs, Tombstone};
use crate::storage::{OpenMode, Replacement, Storage};
use crate::store::log::segments::Segment;
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

/// A compacted file written under its temp name, its writeback started; not in place yet.
pub(super) struct Staged<'s> {
    replacement: Replacement<'s>,
    path: String,
    first_lsn: u64,
    footer: Footer,
    file_len: u64,
    now_ms: i64,
}

/// Writes `out` (header and kept frames) with `layout`'s tables under the temp name of `path`
/// and starts its writeback. The tables are appended to `out`.
///
/// # Errors
/// `Corruption` (`RunTable`) for tables that do not describe the frames, I/O errors (the temp
/// file is removed then).
pub(super) fn stage<'s>(
    storage: &'s dyn Storage,
    path: &str,
    out: &mut Vec<u8>,
    layout: Layout,
) -> Result<Staged<'s>> {
    let first_lsn = layout.first_lsn;
    let now_ms = layout.now_ms;
    out.extend_from_slice(&tables(path, out.len() as u64, layout)?);
    let file_len = out.len() as u64;
    let footer = out
        .get(out.len() - FOOTER_LEN..)
        .and_then(|f| Footer::decode(f, file_len).ok())
        .ok_or_else(|| Error::corruption(path, 0, CorruptionKind::RunTable("footer")))?;
    let io = |op: &'static str| move |e| Error::io(op, path, e);
    let replacement = Replacement::create(storage, path).map_err(io("create"))?;
    if let Err(e) = replacement.file().write_at(out, 0) {
        // The temp file removed first, so that the figure of free space is true.
        drop(replacement);
        return Err(Error::write_failed(
            storage,
            "compact: write",
            path,
            e,
            file_len,
        ));
    }
    replacement.file().start_writeback(0, file_len);
    Ok(Staged {
        replacement,
        path: path.to_owned(),
        first_lsn,
        footer,
        file_len,
        now_ms,
    })
}

/// The run and tombstone tables and the footer that follow `records_end` bytes of header and
/// frames.
fn tables(path: &str, records_end: u64, layout: Layout) -> Result<Vec<u8>> {
    let Layout {
        first_lsn,
        end_lsn,
        runs,
        mut tombstones,
        now_ms: _,
    } = layout;
    tombstones.sort_unstable_by_key(|t| t.lsn);
    let runs = Runs::new(runs, first_lsn, records_end, end_lsn)
        .and_then(|r| r.with_tombstones(tombstones))
        .map_err(|why| Error::corruption(path, 0, CorruptionKind::RunTable(why)))?;
    Ok(runs.encode())
}

/// The length [`stage`] would give the file of `out_len` bytes of header and frames with
/// `layout`'s tables: what a dry run reports, written nowhere.
///
/// # Errors
/// As [`stage`]'s `Corruption`.
pub(super) fn measure(path: &str, out_len: u64, layout: Layout) -> Result<u64> {
    Ok(out_len + tables(path, out_len, layout)?.len() as u64)
}

impl Staged<'_> {
    /// The file's length.
    pub(super) fn file_len(&self) -> u64 {
        self.file_len
    }

    /// Puts the file in place of the segment (sync, rename, directory sync) and opens it.
    ///
    /// # Errors
    /// I/O errors: the segment's file is then the old one or the new one, whole.
    pub(super) fn commit(self, storage: &dyn Storage) -> Result<Arc<Segment>> {
        let path = self.path.as_str();
        let io = |op: &'static str| move |e| Error::io(op, path, e);
        self.replacement.commit().map_err(io("replace"))?;
        let file = storage.open(path, OpenMode::Read).map_err(io("open"))?;
        Ok(Arc::new(Segment::compacted(
            self.first_lsn,
            Arc::from(file),
            self.footer,
            self.file_len,
            self.now_ms,
        )))
    }
}
