//! Finding the segment files: the segment-header rules, in one place, and the strict listing
//! open and `refresh` use (every header checked, each segment continuing the previous one).
//! Nothing here changes a file: a newest segment whose creation was interrupted is reported,
//! and a writable open removes it only once recovery has decided that the store opens.
//! Salvage applies the same header rules to a store that this listing refuses.

use std::sync::Arc;

use crate::codec::CorruptionKind;
use crate::codec::compacted::{FOOTER_LEN, Footer};
use crate::codec::segment::{
    SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, SegmentHeaderError,
    parse_segment_name, segment_path,
};
use crate::storage::{OpenMode, Storage, StorageFile};
use crate::store::log::segments::Segment;
use crate::{Error, Result};

/// What a segment's header says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderVerdict {
    /// A valid header naming the segment's own first LSN.
    Valid,
    /// A valid header of another segment (its name and header disagree).
    NameMismatch,
    /// A whole, checksummed header of another format version: another sessdb wrote it.
    Unsupported(u16),
    /// The newest segment with a short or damaged header and nothing but zeros after it: a
    /// crash while it was being created. It never held a record.
    Interrupted,
    /// A damaged header.
    Damaged(SegmentHeaderError),
}

/// The header rules: `head` is the file's first bytes (up to a header's worth), `rest_zero`
/// tells whether every byte after the header is zero (asked only of a damaged header),
/// `newest` whether no segment follows.
pub(crate) fn judge_header(
    lsn: u64,
    head: &[u8],
    rest_zero: impl FnOnce() -> Result<bool>,
    newest: bool,
) -> Result<HeaderVerdict> {
    Ok(match SegmentHeader::decode(head) {
        Ok(h) if h.first_lsn == lsn => HeaderVerdict::Valid,
        Ok(_) => HeaderVerdict::NameMismatch,
        Err(SegmentHeaderError::UnsupportedVersion(found)) => HeaderVerdict::Unsupported(found),
        Err(_) if newest && rest_zero()? => HeaderVerdict::Interrupted,
        Err(e) => HeaderVerdict::Damaged(e),
    })
}

/// The segments' first LSNs, from their file names, in order.
pub(crate) fn segment_lsns(storage: &dyn Storage) -> Result<Vec<u64>> {
    let names = storage
        .list(SEGMENTS_DIR)
        .map_err(|e| Error::io("list", SEGMENTS_DIR, e))?;
    let mut lsns: Vec<u64> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    lsns.sort_unstable();
    Ok(lsns)
}

/// Reads a segment's header bytes (fewer when the file is shorter).
pub(crate) fn read_head(file: &dyn StorageFile, path: &str) -> Result<Vec<u8>> {
    let len = file.len().map_err(|e| Error::io("stat", path, e))?;
    let mut head = vec![0u8; usize::try_from(len.min(SEGMENT_HEADER_LEN as u64)).unwrap_or(0)];
    file.read_at(&mut head, 0)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(head)
}

/// Whether every byte after the header is zero.
pub(crate) fn rest_is_zero(file: &dyn StorageFile, path: &str) -> Result<bool> {
    let len = file.len().map_err(|e| Error::io("stat", path, e))?;
    if len <= SEGMENT_HEADER_LEN as u64 {
        return Ok(true);
    }
    let mut rest = vec![0u8; usize::try_from(len).unwrap_or(0) - SEGMENT_HEADER_LEN];
    file.read_at(&mut rest, SEGMENT_HEADER_LEN as u64)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(crate::store::log::cursor::zeros(&rest))
}

/// A segment found: its first LSN, its file, the file's length, a compacted one's footer.
type Found = (u64, Box<dyn StorageFile>, u64, Option<(Footer, i64)>);

/// The segments found.
#[derive(Debug, Default)]
pub(crate) struct Discovered {
    /// Every segment that holds records, oldest first.
    pub(crate) segments: Vec<Arc<Segment>>,
    /// Segment files that are no segment of the log (a writable open removes them).
    pub(crate) strays: Strays,
}

/// Segment files that are no segment of the log.
#[derive(Debug, Default)]
pub(crate) struct Strays {
    /// The newest segment's file when its creation was interrupted.
    pub(crate) interrupted: Option<String>,
    /// Files a merge of compacted segments took in and had not removed yet.
    pub(crate) leftovers: Vec<String>,
}

/// Opens every segment, checks its header and that it continues the previous one.
///
/// # Errors
/// `Corruption` for a damaged header or a segment that does not continue the log,
/// `UnsupportedStore` for another format version, I/O errors.
pub(crate) fn discover(storage: &dyn Storage, read_only: bool) -> Result<Discovered> {
    // A reader lists the files beside a writer whose compaction may merge segments: a file
    // listed and gone before it is opened was merged into its predecessor, which the reader
    // may have opened before the merge. The listing is taken again (a few times: each merge
    // is one rename and a few removals).
    let mut tries = 0;
    loop {
        match discover_once(storage, read_only) {
            Err(Error::Io { source, .. })
                if read_only && source.kind() == std::io::ErrorKind::NotFound && tries < 8 =>
            {
                tries += 1;
            }
            other => return other,
        }
    }
}

fn discover_once(storage: &dyn Storage, read_only: bool) -> Result<Discovered> {
    let lsns = segment_lsns(storage)?;
    let mode = if read_only {
        OpenMode::Read
    } else {
        OpenMode::ReadWrite
    };
    let mut out = Discovered::default();
    let mut kept: Vec<Found> = Vec::new();
    let count = lsns.len();
    for (i, lsn) in lsns.into_iter().enumerate() {
        let newest = i + 1 == count;
        let path = segment_path(lsn);
        let file = storage
            .open(&path, mode)
            .map_err(|e| Error::io("open", &path, e))?;
        let head = read_head(&*file, &path)?;
        match judge_header(lsn, &head, || rest_is_zero(&*file, &path), newest)? {
            HeaderVerdict::Valid => {}
            HeaderVerdict::Interrupted => {
                out.strays.interrupted = Some(path);
                continue;
            }
            HeaderVerdict::NameMismatch => {
                return Err(Error::corruption(
                    &path,
                    0,
                    CorruptionKind::Inconsistent("segment name and header disagree"),
                ));
            }
            HeaderVerdict::Unsupported(found) => {
                return Err(Error::UnsupportedStore {
                    file: path,
                    found,
                    expected: SEGMENT_FORMAT_VERSION,
                });
            }
            HeaderVerdict::Damaged(e) => {
                return Err(Error::corruption(
                    &path,
                    0,
                    CorruptionKind::SegmentHeader(e),
                ));
            }
        }
        let len = file.len().map_err(|e| Error::io("stat", &path, e))?;
        let footer = compacted_footer(&*file, &path, &head, len)?;
        if let Some((prev, _, prev_len, prev_footer)) = kept.last() {
            let expected = match prev_footer {
                Some((f, _)) => f.end_lsn,
                None => prev + prev_len.saturating_sub(SEGMENT_HEADER_LEN as u64),
            };
            if lsn != expected {
                if merge_leftover(*prev, prev_footer.as_ref(), lsn, footer.as_ref()) {
                    out.strays.leftovers.push(path);
                    continue;
                }
                return Err(Error::corruption(
                    &path,
                    0,
                    CorruptionKind::SegmentGap { expected },
                ));
            }
        }
        kept.push((lsn, file, len, footer));
    }
    // Sealed: every segment but the last one kept (an interrupted newest one is not kept).
    let n = kept.len();
    out.segments = kept
        .into_iter()
        .enumerate()
        .map(|(i, (lsn, file, len, footer))| {
            Arc::new(match footer {
                Some((f, at)) => Segment::compacted(lsn, Arc::from(file), f, len, at),
                None => Segment::new(lsn, Arc::from(file), i + 1 < n),
            })
        })
        .collect();
    Ok(out)
}

/// Whether the compacted segment at `lsn` ending at its footer's end LSN lies wholly inside
/// the previous one, compacted too: a merge wrote its records into that one and was cut
/// before it removed this file (`store/compact/merge.rs`).
pub(crate) fn merge_leftover(
    prev_lsn: u64,
    prev: Option<&(Footer, i64)>,
    lsn: u64,
    this: Option<&(Footer, i64)>,
) -> bool {
    match (prev, this) {
        (Some((p, _)), Some((t, _))) => prev_lsn < lsn && lsn < p.end_lsn && t.end_lsn <= p.end_lsn,
        _ => false,
    }
}

/// A compacted segment's footer, checked (`None` for a segment appends wrote); its run table
/// is read the first time the segment's LSNs are mapped.
///
/// # Errors
/// `Corruption` (`RunTable`) for a damaged footer, I/O errors.
fn compacted_footer(
    file: &dyn StorageFile,
    path: &str,
    head: &[u8],
    len: u64,
) -> Result<Option<(Footer, i64)>> {
    let created_ms = match SegmentHeader::decode(head) {
        Ok(h) if h.compacted => h.created_ms,
        _ => return Ok(None),
    };
    let mut bytes = [0u8; FOOTER_LEN];
    let at = len.checked_sub(FOOTER_LEN as u64);
    if let Some(at) = at {
        file.read_at(&mut bytes, at)
            .map_err(|e| Error::io("read", path, e))?;
    }
    let footer = at
        .ok_or("the footer is cut short")
        .and_then(|_| Footer::decode(&bytes, len));
    footer
        .map(|f| Some((f, created_ms)))
        .map_err(|why| Error::corruption(path, len, CorruptionKind::RunTable(why)))
}
