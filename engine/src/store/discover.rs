//! Finding the segment files on open: every header checked, each segment continuing the
//! previous one; a newest segment whose creation was interrupted is removed. (Damaged headers
//! are salvage's: `salvage.rs`.)

use std::sync::Arc;

use super::report::OpenReport;
use super::segments::Segment;
use crate::codec::CorruptionKind;
use crate::codec::segment::{
    SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, SegmentHeaderError,
    parse_segment_name, segment_path,
};
use crate::storage::{OpenMode, Storage};
use crate::{Error, Result};

fn corrupt(segment: &str, offset: u64, kind: CorruptionKind) -> Error {
    Error::corruption(segment, offset, kind)
}

/// Opens every segment, checks its header and that it continues the previous one.
pub(super) fn load_segments(
    storage: &dyn Storage,
    read_only: bool,
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
    for (i, lsn) in lsns.into_iter().enumerate() {
        let last = i + 1 == count;
        let path = segment_path(lsn);
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
            Err(SegmentHeaderError::UnsupportedVersion(found)) => {
                // A whole, checksummed header of another version: another sessdb wrote it.
                return Err(Error::UnsupportedStore {
                    file: path,
                    found,
                    expected: SEGMENT_FORMAT_VERSION,
                });
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
                return Err(corrupt(&path, 0, CorruptionKind::SegmentGap { expected }));
            }
        }
        out.push(Arc::new(Segment::new(lsn, Arc::from(file), !last)));
    }
    Ok(out)
}
