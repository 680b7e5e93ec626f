//! Finding the segment files: the segment-header rules, in one place, and the strict listing
//! open and `refresh` use (every header checked, each segment continuing the previous one).
//! Nothing here changes a file: a newest segment whose creation was interrupted is reported,
//! and a writable open removes it only once recovery has decided that the store opens.
//! Salvage applies the same header rules to a store that this listing refuses.

use std::sync::Arc;

use crate::codec::CorruptionKind;
use crate::codec::compacted::{FOOTER_LEN, Footer};
use crate::codec::frame::FrameLayout;
use crate::codec::segment::{
    SEGMENT_FORMAT_VERSION, SEGMENT_HEADER_LEN, SEGMENTS_DIR, SegmentHeader, SegmentHeaderError,
    parse_segment_name, segment_path,
};
use crate::storage::{Checked, CheckedFile};
use crate::storage::{OpenMode, Storage, StorageFile};
use crate::store::log::segments::Segment;
use crate::store::writer::Access;
use crate::{Error, Result};

/// What a segment's header says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HeaderVerdict {
    /// A valid header naming the segment's own first LSN.
    Valid(SegmentHeader),
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
        Ok(h) if h.first_lsn == lsn => HeaderVerdict::Valid(h),
        Ok(_) => HeaderVerdict::NameMismatch,
        Err(SegmentHeaderError::UnsupportedVersion(found)) => HeaderVerdict::Unsupported(found),
        Err(_) if newest && rest_zero()? => HeaderVerdict::Interrupted,
        Err(e) => HeaderVerdict::Damaged(e),
    })
}

/// The segments' first LSNs, from their file names, in order.
pub(crate) fn segment_lsns(storage: &dyn Storage) -> Result<Vec<u64>> {
    let names = storage.list_dir(SEGMENTS_DIR)?;
    let mut lsns: Vec<u64> = names.iter().filter_map(|n| parse_segment_name(n)).collect();
    lsns.sort_unstable();
    Ok(lsns)
}

/// The segments' first LSNs with each file's identity as listed ([`Storage::list_with_ids`]),
/// in order.
fn segment_listing(storage: &dyn Storage) -> Result<Vec<(u64, Option<u64>)>> {
    let names = storage.list_dir_with_ids(SEGMENTS_DIR)?;
    let mut listed: Vec<(u64, Option<u64>)> = names
        .iter()
        .filter_map(|(n, id)| parse_segment_name(n).map(|lsn| (lsn, *id)))
        .collect();
    listed.sort_unstable();
    Ok(listed)
}

/// Reads a segment's header bytes (fewer when the file is shorter).
pub(crate) fn read_head(file: &dyn StorageFile, path: &str) -> Result<Vec<u8>> {
    let len = file.at(path).len()?;
    read_head_of(file, path, len)
}

/// [`read_head`] of a file whose length is known (`len`): one `statx` less per segment
/// an open discovers.
fn read_head_of(file: &dyn StorageFile, path: &str, len: u64) -> Result<Vec<u8>> {
    let mut head = vec![0u8; crate::width::index(len.min(SEGMENT_HEADER_LEN as u64))];
    file.at(path).read_at(&mut head, 0)?;
    Ok(head)
}

/// Whether every byte after the header is zero.
pub(crate) fn rest_is_zero(file: &dyn StorageFile, path: &str) -> Result<bool> {
    let len = file.at(path).len()?;
    if len <= SEGMENT_HEADER_LEN as u64 {
        return Ok(true);
    }
    let mut rest = vec![0u8; crate::width::index(len) - SEGMENT_HEADER_LEN];
    file.at(path)
        .read_at(&mut rest, SEGMENT_HEADER_LEN as u64)?;
    Ok(crate::store::log::cursor::zeros(&rest))
}

/// A segment found and kept.
struct Found {
    lsn: u64,
    file: Box<dyn StorageFile>,
    len: u64,
    /// The frame layout its header admits.
    frames: FrameLayout,
    /// A compacted segment's footer and its header's creation time.
    compacted: Option<(Footer, i64)>,
}

impl Found {
    /// The segment as the next one's judge sees it.
    fn as_prev(&self) -> Prev {
        Prev {
            lsn: self.lsn,
            end_lsn: match &self.compacted {
                Some((f, _)) => f.end_lsn,
                None => self.lsn + self.len.saturating_sub(SEGMENT_HEADER_LEN as u64),
            },
            compacted: self.compacted.is_some(),
        }
    }
}

/// The segment before the one being judged: where it starts and ends, and whether compaction
/// wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prev {
    pub(crate) lsn: u64,
    pub(crate) end_lsn: u64,
    pub(crate) compacted: bool,
}

/// How a segment stands against the one before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Continuation {
    /// It starts where the previous one ends (or it is the first).
    Continues,
    /// A merge's leftover: compacted, wholly inside the compacted segment before it, which
    /// holds its records — a merge was cut before it removed this file
    /// (`store/compact/merge.rs`).
    MergeLeftover,
    /// It does not continue the log: the previous segment ends at `expected`.
    Gap { expected: u64 },
}

/// **The one judge of the segment list** (open here, salvage in `salvage/mod.rs`): whether
/// the segment at `lsn` — compacted and ending at `compacted_end`, or written by appends —
/// continues the log after `prev`.
pub(crate) fn continuation(
    prev: Option<Prev>,
    lsn: u64,
    compacted_end: Option<u64>,
) -> Continuation {
    let Some(prev) = prev else {
        return Continuation::Continues;
    };
    if lsn == prev.end_lsn {
        return Continuation::Continues;
    }
    match compacted_end {
        Some(end)
            if prev.compacted && prev.lsn < lsn && lsn < prev.end_lsn && end <= prev.end_lsn =>
        {
            Continuation::MergeLeftover
        }
        _ => Continuation::Gap {
            expected: prev.end_lsn,
        },
    }
}

/// The segments found.
#[derive(Debug, Default)]
pub(crate) struct Discovered {
    /// Every segment that holds records, oldest first.
    pub(crate) segments: Vec<Arc<Segment>>,
    /// Segment files that are no segment of the log (a writable open removes them).
    pub(crate) strays: Strays,
    /// Set when only the newest segments were judged ([`discover_newest`]): the segments
    /// before them are judged at their first use.
    pub(crate) pending: Option<Pending>,
}

/// The segments an open left to their first use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pending {
    /// The first LSN of the first segment judged at open: the pending ones are named before.
    pub(crate) before: u64,
    /// What keeps them the files the open listed.
    pub(crate) pinned: Pinned,
}

/// What keeps the segments an open left to their first use the files it listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pinned {
    /// The writer's lock: no one else compacts, salvages or removes a segment.
    Lock,
    /// Nothing — a read-only view beside a writer: each file's identity as listed (first
    /// LSN, identity), and a first use that finds any other file under those names, or any
    /// name more or less, is [`Error::Overtaken`].
    Listed(Vec<(u64, u64)>),
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
pub(crate) fn discover(storage: &dyn Storage, access: Access) -> Result<Discovered> {
    // A reader lists the files beside a writer, and takes the listing again (a few times)
    // when what it listed does not hold together:
    // - a file listed and gone before it is opened was merged into its predecessor by the
    //   writer's compaction, which the reader may have opened before the merge (each merge is
    //   one rename and a few removals);
    // - a gap: a listing taken while the writer creates segments may leave out files created
    //   during it yet return later ones (a directory is read in its hash order, not in the
    //   order its files were made), so a reader saw a gap that was never on disk
    //   (`recovery_regressions.rs`). A gap in every listing is damage, and reported.
    let mut tries = 0;
    loop {
        match discover_once(storage, access) {
            Err(Error::Io { source, .. })
                if access == Access::Read
                    && source.kind() == std::io::ErrorKind::NotFound
                    && tries < 8 =>
            {
                tries += 1;
            }
            Err(Error::Corruption {
                kind: CorruptionKind::SegmentGap { .. },
                ..
            }) if access == Access::Read && tries < 8 => {
                tries += 1;
            }
            other => return other,
        }
    }
}

fn discover_once(storage: &dyn Storage, access: Access) -> Result<Discovered> {
    let lsns = segment_lsns(storage)?;
    let mut out = Discovered::default();
    let kept = judge(
        storage,
        access,
        &lsns,
        None,
        Newest::Last,
        &mut out.strays,
        Vec::new(),
    )?;
    out.segments = into_segments(kept, Sealing::LastOpen);
    Ok(out)
}

/// The newest segments an open judges at once; the older ones wait for their first use
/// ([`judge_older`]).
const JUDGED_AT_OPEN: usize = 2;

/// An open's listing: every segment file's name, but only the newest [`JUDGED_AT_OPEN`]
/// opened and judged — from further back when the first of them is compacted, from the
/// nearest segment appends wrote ([`plain_from`]: a merge's leftover can only be told by the
/// segments before it); the older ones are left to [`judge_older`] at their first use
/// (`SegmentList`), so an open does not grow with the history (`docs/DESIGN.md` §3.6).
/// Everything is judged now when the store holds few segments — and, for a read-only view,
/// when the storage does not list each file's identity or the identities it lists are not
/// those of the files opened (a view can then not tell a file replaced later), or when the
/// listing raced a writer (judged again whole, as [`discover`] retries).
///
/// # Errors
/// As [`discover`].
pub(crate) fn discover_newest(storage: &dyn Storage, access: Access) -> Result<Discovered> {
    let listing = segment_listing(storage)?;
    let newest = listing.len().saturating_sub(JUDGED_AT_OPEN);
    // A read-only view pins what it leaves by the identities listed: none listed, none left.
    let unpinned = access == Access::Read && listing.iter().any(|&(_, id)| id.is_none());
    if newest == 0 || unpinned {
        return discover(storage, access);
    }
    let judged = plain_from(storage, access, &listing, newest)
        .and_then(|(split, opened)| judge_newest(storage, access, &listing, split, opened));
    match judged {
        Ok(Window::Judged(out)) => Ok(out),
        Ok(Window::All) => discover(storage, access),
        // Beside a writer: judged whole, with `discover`'s retries.
        Err(Error::Overtaken { .. }) if access == Access::Read => discover(storage, access),
        Err(e) if access == Access::Read && raced(&e) => discover(storage, access),
        Err(e) => Err(e),
    }
}

/// Where the judged segments start: at `newest` when its segment is one appends wrote, else
/// at the nearest such segment before it, or at the first (a merge's leftover is compacted,
/// and told only by the segments before it; no segment appends wrote is one). Returns the
/// split and the files opened on the way back (each once, in the listing's order, checked
/// against its listed identity for a read-only view); a header that does not read stops
/// the walk there, for the judging to report.
fn plain_from(
    storage: &dyn Storage,
    access: Access,
    listing: &[(u64, Option<u64>)],
    newest: usize,
) -> Result<(usize, Vec<Box<dyn StorageFile>>)> {
    let mut opened = Vec::new();
    let mut at = newest;
    while let Some(&(lsn, id)) = listing.get(at) {
        let id = match access {
            Access::Write => None,
            Access::Read => Some(id),
        };
        let file = open_listed(storage, access, lsn, id)?;
        let head = read_head(&*file, &segment_path(lsn))?;
        opened.push(file);
        let compacted = SegmentHeader::decode(&head).is_ok_and(|h| h.compacted);
        if !compacted || at == 0 {
            break;
        }
        at -= 1;
    }
    opened.reverse();
    Ok((at, opened))
}

/// What judging the newest segments gave.
enum Window {
    /// Judged; the older ones wait (or none is left).
    Judged(Discovered),
    /// Judge every segment now ([`discover`]).
    All,
}

/// Judges the segments of `listing` from `split` on, the older ones left to their first use;
/// `opened` holds the first of them, opened already ([`plain_from`]).
fn judge_newest(
    storage: &dyn Storage,
    access: Access,
    listing: &[(u64, Option<u64>)],
    split: usize,
    opened: Vec<Box<dyn StorageFile>>,
) -> Result<Window> {
    let (older, newest) = listing.split_at(split);
    let Some(&(before, _)) = newest.first() else {
        return Ok(Window::All);
    };
    let pinned = match access {
        Access::Write => Pinned::Lock,
        Access::Read => {
            let ids: Option<Vec<(u64, u64)>> =
                older.iter().map(|&(l, id)| id.map(|id| (l, id))).collect();
            match ids {
                Some(ids) => Pinned::Listed(ids),
                None => return Ok(Window::All),
            }
        }
    };
    let lsns: Vec<u64> = newest.iter().map(|&(l, _)| l).collect();
    // A read-only view holds the newest files' identities to what the listing said: where
    // they differ, the listing's identities cannot pin the older ones either.
    let ids: Option<Vec<u64>> = match access {
        Access::Write => None,
        Access::Read => match newest.iter().map(|&(_, id)| id).collect() {
            Some(ids) => Some(ids),
            None => return Ok(Window::All),
        },
    };
    let mut out = Discovered::default();
    let kept = judge(
        storage,
        access,
        &lsns,
        ids.as_deref(),
        Newest::Last,
        &mut out.strays,
        opened,
    )?;
    match kept.first() {
        None => Ok(Window::All),
        // Judged from the first segment: nothing waits.
        Some(_) if split == 0 => {
            out.segments = into_segments(kept, Sealing::LastOpen);
            Ok(Window::Judged(out))
        }
        // Where the first one judged is compacted after all (its header read otherwise on
        // the way back: the file changed), judged whole.
        Some(first) if first.compacted.is_some() => Ok(Window::All),
        Some(_) => {
            out.segments = into_segments(kept, Sealing::LastOpen);
            out.pending = Some(Pending { before, pinned });
            Ok(Window::Judged(out))
        }
    }
}

/// Whether a read-only listing may have raced a writer (`discover` lists again).
fn raced(e: &Error) -> bool {
    match e {
        Error::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        Error::Corruption { kind, .. } => matches!(kind, CorruptionKind::SegmentGap { .. }),
        _ => false,
    }
}

/// The segments older than `pending.before` an open left unjudged ([`discover_newest`]),
/// listed, opened and judged now, each continuing the one before it; `next` is the first
/// segment judged at open, which must continue the last of them. All are sealed.
///
/// # Errors
/// As [`discover`]: damage in these files is found here, at their first use.
/// [`Error::Overtaken`] when the open's listing pinned them ([`Pinned::Listed`]) and they are
/// no longer the files it listed.
pub(crate) fn judge_older(
    storage: &dyn Storage,
    access: Access,
    pending: &Pending,
    next: &Segment,
    strays: &mut Strays,
) -> Result<Vec<Arc<Segment>>> {
    let before = pending.before;
    let older: Vec<(u64, Option<u64>)> = segment_listing(storage)?
        .into_iter()
        .filter(|&(l, _)| l < before)
        .collect();
    let lsns: Vec<u64> = older.iter().map(|&(l, _)| l).collect();
    let ids = match &pending.pinned {
        Pinned::Lock => None,
        Pinned::Listed(listed) => {
            // The names the open listed, each file the one it listed; else the first name
            // that differs is reported.
            let then: Vec<(u64, Option<u64>)> =
                listed.iter().map(|&(l, id)| (l, Some(id))).collect();
            if older != then {
                let lsn = (0..older.len().max(then.len()))
                    .find(|&i| older.get(i) != then.get(i))
                    .and_then(|i| {
                        let now = older.get(i).map(|o| o.0);
                        now.into_iter().chain(then.get(i).map(|t| t.0)).min()
                    })
                    .unwrap_or(before);
                return Err(Error::Overtaken {
                    segment: segment_path(lsn),
                });
            }
            Some(listed.iter().map(|&(_, id)| id).collect::<Vec<u64>>())
        }
    };
    let kept = judge(
        storage,
        access,
        &lsns,
        ids.as_deref(),
        Newest::Later,
        strays,
        Vec::new(),
    )?;
    let prev = kept.last().map(Found::as_prev);
    // `next` was written by appends (a compacted one is judged at open with all the rest),
    // so it continues the last one kept or leaves a gap: never a merge's leftover.
    debug_assert!(!next.is_compacted(), "{}: judged at open", next.path);
    if let Continuation::Gap { expected } = continuation(prev, next.first_lsn, None) {
        return Err(Error::corruption(
            &next.path,
            0,
            CorruptionKind::SegmentGap { expected },
        ));
    }
    Ok(into_segments(kept, Sealing::AllSealed))
}

/// Whether the last segment of a batch judged is the log's newest (an interrupted creation
/// can only be that one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Newest {
    Last,
    Later,
}

/// Which segments of a batch become sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sealing {
    /// All but the last, which appends may continue.
    LastOpen,
    /// All of them: newer segments follow.
    AllSealed,
}

/// Opens the segments at `lsns` — the first of them already opened as `opened` holds them,
/// in order ([`plain_from`]) — checks each header and that each continues the one before it;
/// returns those kept, oldest first, and notes the strays. With `ids` (one a segment, as
/// listed), each file opened must be the one listed: else, or when it is gone,
/// [`Error::Overtaken`] — before its bytes are judged, so a file a writer replaced is never
/// taken for damage ([`open_listed`]).
fn judge(
    storage: &dyn Storage,
    access: Access,
    lsns: &[u64],
    ids: Option<&[u64]>,
    newest_at: Newest,
    strays: &mut Strays,
    opened: Vec<Box<dyn StorageFile>>,
) -> Result<Vec<Found>> {
    debug_assert!(
        ids.is_none_or(|ids| ids.len() == lsns.len()),
        "an identity for each segment"
    );
    debug_assert!(
        opened.len() <= lsns.len(),
        "opened files are of the listing"
    );
    let mut kept: Vec<Found> = Vec::new();
    let count = lsns.len();
    let mut opened = opened.into_iter();
    for (i, &lsn) in lsns.iter().enumerate() {
        let newest = newest_at == Newest::Last && i + 1 == count;
        let path = segment_path(lsn);
        let file = match opened.next() {
            Some(file) => file,
            None => open_listed(storage, access, lsn, ids.map(|ids| ids.get(i).copied()))?,
        };
        let len = file.at(&path).len()?;
        let head = read_head_of(&*file, &path, len)?;
        let header = match judge_header(lsn, &head, || rest_is_zero(&*file, &path), newest)? {
            HeaderVerdict::Valid(header) => header,
            HeaderVerdict::Interrupted => {
                strays.interrupted = Some(path);
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
        };
        let compacted = compacted_footer(&*file, &path, &header, len)?;
        let prev = kept.last().map(Found::as_prev);
        match continuation(prev, lsn, compacted.as_ref().map(|(f, _)| f.end_lsn)) {
            Continuation::Continues => {}
            Continuation::MergeLeftover => {
                strays.leftovers.push(path);
                continue;
            }
            Continuation::Gap { expected } => {
                return Err(Error::corruption(
                    &path,
                    0,
                    CorruptionKind::SegmentGap { expected },
                ));
            }
        }
        kept.push(Found {
            lsn,
            file,
            len,
            frames: header.frame_layout(),
            compacted,
        });
    }
    Ok(kept)
}

/// Opens the segment at `lsn`; with `id` (the identity its listing gave, `Some(None)` when
/// it gave none), the file opened must be that one — else, or when it is gone,
/// [`Error::Overtaken`], before a byte of it is read, so a file a writer replaced is never
/// taken for damage.
fn open_listed(
    storage: &dyn Storage,
    access: Access,
    lsn: u64,
    id: Option<Option<u64>>,
) -> Result<Box<dyn StorageFile>> {
    let mode = match access {
        Access::Read => OpenMode::Read,
        Access::Write => OpenMode::ReadWrite,
    };
    let path = segment_path(lsn);
    let overtaken = || Error::Overtaken {
        segment: segment_path(lsn),
    };
    let file = match (storage.open_file(&path, mode), id) {
        (Err(Error::Io { source, .. }), Some(_))
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            return Err(overtaken());
        }
        (opened, _) => opened?,
    };
    match id {
        Some(id) if id != file.identity().map(|(_, id)| id) => Err(overtaken()),
        _ => Ok(file),
    }
}

/// The segments kept, as the list holds them.
fn into_segments(kept: Vec<Found>, sealing: Sealing) -> Vec<Arc<Segment>> {
    let n = kept.len();
    kept.into_iter()
        .enumerate()
        .map(
            |(
                i,
                Found {
                    lsn,
                    file,
                    len,
                    frames,
                    compacted,
                },
            )| {
                let sealed = sealing == Sealing::AllSealed || i + 1 < n;
                Arc::new(match compacted {
                    Some((f, at)) => Segment::compacted(lsn, Arc::from(file), f, len, at),
                    None => Segment::new(lsn, Arc::from(file), sealed, frames),
                })
            },
        )
        .collect()
}

/// A compacted segment's footer, checked (`None` for a segment appends wrote); its run table
/// is read the first time the segment's LSNs are mapped.
///
/// # Errors
/// `Corruption` (`RunTable`) for a damaged footer, I/O errors.
fn compacted_footer(
    file: &dyn StorageFile,
    path: &str,
    header: &SegmentHeader,
    len: u64,
) -> Result<Option<(Footer, i64)>> {
    if !header.compacted {
        return Ok(None);
    }
    let created_ms = header.created_ms;
    let mut bytes = [0u8; FOOTER_LEN];
    let at = len.checked_sub(FOOTER_LEN as u64);
    if let Some(at) = at {
        file.at(path).read_at(&mut bytes, at)?;
    }
    let footer = at
        .ok_or("the footer is cut short")
        .and_then(|_| Footer::decode(&bytes, len));
    footer
        .map(|f| Some((f, created_ms)))
        .map_err(|why| Error::corruption(path, len, CorruptionKind::RunTable(why)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_segment_list_judge_decides_every_case_once() {
        let compacted = Prev {
            lsn: 100,
            end_lsn: 500,
            compacted: true,
        };
        let plain = Prev {
            compacted: false,
            ..compacted
        };
        // The first segment, and one starting where the previous one ends.
        assert_eq!(continuation(None, 7, None), Continuation::Continues);
        assert_eq!(
            continuation(Some(plain), 500, None),
            Continuation::Continues
        );
        assert_eq!(
            continuation(Some(compacted), 500, Some(900)),
            Continuation::Continues
        );
        // A compacted file wholly inside the compacted one before it: a merge's leftover.
        assert_eq!(
            continuation(Some(compacted), 300, Some(500)),
            Continuation::MergeLeftover
        );
        // Anything else that does not start at the end is a gap: past the previous end, a
        // plain predecessor, a file appends wrote, one reaching past the predecessor.
        let gap = Continuation::Gap { expected: 500 };
        for (prev, lsn, end) in [
            (compacted, 300, Some(501)),
            (compacted, 100, Some(400)),
            (compacted, 300, None),
            (plain, 300, Some(400)),
            (compacted, 600, Some(700)),
        ] {
            assert_eq!(
                continuation(Some(prev), lsn, end),
                gap,
                "{prev:?} {lsn} {end:?}"
            );
        }
    }
}
