//! Carrying a salvage plan out: never a file changed in place (a reader may have it mapped):
//! the marker set, every checkpoint removed, the segments that go removed (later ones
//! first), each changed segment written whole and renamed over the old one, the marker
//! cleared.

use crate::codec::CorruptionKind;
use crate::codec::frame::encode_voids;
use crate::codec::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, segment_path};
use crate::storage::Checked;
use crate::storage::{Replacement, Storage};
use crate::store::checkpoint::files;
use crate::store::options::StoreOptions;
use crate::store::salvage::edits::{Edit, Plan, read_whole};
use crate::store::salvage::marker;
use crate::{Error, Result};

/// Carries out a plan (see the module docs for the order and why).
pub(crate) fn apply(storage: &dyn Storage, options: &StoreOptions, plan: &mut Plan) -> Result<()> {
    if plan.edits.is_empty() && plan.report.is_empty() {
        return Ok(());
    }
    // Readers beside it see the marker and keep their view until it goes: the segments are
    // replaced one rename at a time, and a view built between two renames would read a log
    // half old, half new. Left by a salvage that died: the next writer open removes it.
    marker::set(storage)?;
    apply_edits(storage, options, plan)?;
    marker::clear(storage)
}

/// The checkpoints removed, the segments removed and rewritten (see the module docs).
fn apply_edits(storage: &dyn Storage, options: &StoreOptions, plan: &mut Plan) -> Result<()> {
    plan.report.checkpoints_removed += files::remove(storage, files::Older::All)?;
    // Later segments first: a crash leaves a log that still continues.
    for (lsn, _) in plan.edits.iter().rev().filter(|(_, e)| *e == Edit::Remove) {
        let path = segment_path(*lsn);
        storage.remove_file(&path)?;
    }
    storage.sync_directory(SEGMENTS_DIR)?;
    for (lsn, edit) in &plan.edits {
        let Edit::Rewrite {
            header,
            compacted,
            voids,
            cut_at,
        } = edit
        else {
            continue;
        };
        let path = segment_path(*lsn);
        let (_, mut bytes) = read_whole(storage, &path)?;
        if *header {
            let fresh = SegmentHeader::new(*lsn, options.clock.now_ms(), *compacted).encode();
            if let Some(h) = bytes.get_mut(..SEGMENT_HEADER_LEN) {
                h.copy_from_slice(&fresh);
            }
        }
        for &(at, n) in voids {
            let mut void = Vec::with_capacity(n);
            encode_voids(n, options.record_bytes_max, &mut void)
                .ok_or_else(|| Error::corruption(&path, at as u64, CorruptionKind::Incomplete))?;
            if let Some(dst) = bytes.get_mut(at..at + n) {
                dst.copy_from_slice(&void);
            }
        }
        if let Some(cut) = cut_at {
            bytes.truncate(*cut);
        }
        let io = |op: &'static str| {
            let path = path.clone();
            move |e| Error::io(op, path, e)
        };
        let replacement = Replacement::create(storage, &path).map_err(io("create"))?;
        replacement
            .file()
            .write_at(&bytes, 0)
            .map_err(io("write"))?;
        replacement.commit().map_err(io("replace"))?;
    }
    Ok(())
}
