//! `backup`: a consistent copy of a store, taken beside its live writer. A copy of the files
//! as they lie (`cp -r`) is not one: the active segment is read while records are written
//! into it and the checkpoint may be copied after the segments, so the copy can hold a
//! checkpoint vouching for a record it has torn — refused at its open, and salvage then cuts
//! a session (`docs/RELIABILITY.md`). Here the copy is of one read-only view: its segment
//! files, opened when the view was taken (a compaction renaming over them later changes
//! nothing read through them), each sealed one whole and the active one up to the view's log
//! end, which is a record boundary the view has read. The copy is written under a name of its
//! own beside the destination, synced, opened once (the replay checks every record and
//! writes a checkpoint, so the copy opens fast), and only then renamed to the destination: an
//! interrupted backup leaves no directory a user could take for a backup.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::codec::checkpoint::CHECKPOINTS_DIR;
use crate::codec::segment::{SEGMENT_HEADER_LEN, SEGMENTS_DIR};
use crate::storage::{Checked, CheckedFile, FsStorage, OpenMode, Storage};
use crate::store::api::Store;
use crate::store::open;
use crate::store::options::StoreOptions;
use crate::store::report::BackupReport;
use crate::{Error, Result};

/// The bytes copied per read and write.
const PIECE: usize = 1 << 20;

/// The suffix of the directory a backup is written in before it is complete.
const PARTIAL_SUFFIX: &str = ".sessdb-backup-partial";

/// Copies the store in `src` — beside its writer, if one is running — into the new directory
/// `dest`: every session as of one moment, opened and checkpointed. `dest` must not exist;
/// a directory beside it named as `dest` plus `.sessdb-backup-partial` is the backup under
/// way (one an interrupted backup left is removed first).
///
/// # Errors
/// `Io` (`AlreadyExists`) when `dest` exists; whatever opening `src` read-only refuses (a
/// damaged store is not copied: `sessdb repair` first); I/O errors, a full disk.
pub fn backup(src: impl AsRef<Path>, dest: impl AsRef<Path>) -> Result<BackupReport> {
    let (src, dest) = (src.as_ref(), dest.as_ref());
    if dest.symlink_metadata().is_ok() {
        return Err(Error::io(
            "back up into",
            dest.display().to_string(),
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "something is there already: a backup is written into a new directory",
            ),
        ));
    }
    let partial = partial_of(dest)?;
    match std::fs::remove_dir_all(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io("remove", partial.display().to_string(), e)),
    }
    let made = write_partial(src, &partial);
    let report = match made {
        Ok(report) => report,
        Err(e) => {
            // Nothing half made is left beside the destination.
            let _ = std::fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    std::fs::rename(&partial, dest)
        .map_err(|e| Error::io("rename", dest.display().to_string(), e))?;
    sync_parent(dest)?;
    Ok(report)
}

/// The copy of `src`, written, opened once and checkpointed in `partial`.
fn write_partial(src: &Path, partial: &Path) -> Result<BackupReport> {
    std::fs::create_dir_all(partial)
        .map_err(|e| Error::io("create directory", partial.display().to_string(), e))?;
    let target = FsStorage::new(partial);
    let mut report = copy_view(Arc::new(FsStorage::new(src)), &target)?;
    // Opened once: the full replay checks every record copied, and the checkpoint its close
    // takes spares the backup's next open the replay. No background work on it meanwhile.
    let copy = Store::open_with(
        Arc::new(target),
        StoreOptions::default()
            .with_compaction(None)
            .with_retention(None),
    )?;
    report.records = copy.open_report().records_replayed;
    report.sessions = copy.stats().sessions;
    copy.close()?;
    Ok(report)
}

/// The directory `dest` is written in before it is complete.
fn partial_of(dest: &Path) -> Result<PathBuf> {
    let name = dest.file_name().ok_or_else(|| {
        Error::io(
            "back up into",
            dest.display().to_string(),
            std::io::Error::from(std::io::ErrorKind::InvalidInput),
        )
    })?;
    let mut partial = name.to_os_string();
    partial.push(PARTIAL_SUFFIX);
    Ok(dest.with_file_name(partial))
}

/// Makes the rename of the backup into place durable.
fn sync_parent(dest: &Path) -> Result<()> {
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io("sync directory", parent.display().to_string(), e))
}

/// Copies the segments of one read-only view of `source` into `target` (synced): each
/// sealed one whole, the one holding the view's log end up to it.
fn copy_view(source: Arc<dyn Storage>, target: &FsStorage) -> Result<BackupReport> {
    let view = open::open(
        source,
        StoreOptions::default(),
        open::Access::Read,
        open::Horizon::End,
        open::Judging::Every,
    )?;
    let end = view.writer.end().lsn;
    let segments = view.segments.full()?;
    target.create_directory(SEGMENTS_DIR)?;
    target.create_directory(CHECKPOINTS_DIR)?;
    let mut report = BackupReport {
        log_end: end,
        ..BackupReport::default()
    };
    // The last segment starting at or before the end holds it; a segment after it (one a
    // writer rolled to while the view was taken) holds nothing of the view.
    let Some(last) = segments.iter().rposition(|s| s.first_lsn <= end) else {
        return Ok(report);
    };
    let mut buf = vec![0u8; PIECE];
    for (i, seg) in segments.iter().enumerate().take(last + 1) {
        let len = if i == last && !seg.is_compacted() {
            // Up to the view's end: the writer may be appending past it.
            SEGMENT_HEADER_LEN as u64 + (end - seg.first_lsn)
        } else {
            seg.file.at(&seg.path).len()?
        };
        let out = target.open_file(&seg.path, OpenMode::CreateNew)?;
        let mut at = 0u64;
        while at < len {
            let n = usize::try_from(len - at).map_or(PIECE, |n| n.min(PIECE));
            let piece = buf.get_mut(..n).unwrap_or_default();
            seg.file.at(&seg.path).read_at(piece, at)?;
            out.at(&seg.path).write_at(piece, at)?;
            at += n as u64;
        }
        out.at(&seg.path).sync_data()?;
        report.segments += 1;
        report.bytes += len;
    }
    target.sync_directory(SEGMENTS_DIR)?;
    target.sync_directory("")?;
    Ok(report)
}
