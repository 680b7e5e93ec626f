//! Sealing one record: its payload encoded after room for the frame header, into the tail's
//! reused buffer, then the frame written at the tail (`docs/FORMAT.md` §3). A failed write
//! poisons the store.

use super::Writer;
use super::tail::Tail;
use crate::codec::frame::{RecordKind, begin_frame, payload_len, payload_offset};
use crate::codec::record::{BodyRef, encode_into};
use crate::limits::Now;
use crate::storage::Storage;
use crate::store::log::segments::SegmentList;
use crate::{Error, Result};

/// A record written at the tail: where it starts and where the log ends after it. The
/// events' `(offset, len)` in its payload are in the tail (`Tail::push_locations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub(crate) lsn: u64,
    pub(crate) end: u64,
}

/// Where a record is written: the store's files and segment list, and its size limit.
#[derive(Clone, Copy)]
pub(crate) struct Target<'a> {
    pub(crate) storage: &'a dyn Storage,
    pub(crate) segments: &'a SegmentList,
    pub(crate) record_bytes_max: u32,
}

impl Writer {
    /// Encodes and writes one record under the tail lock the caller holds.
    pub(crate) fn seal(
        &self,
        tail: &mut Tail,
        to: Target<'_>,
        body: &BodyRef<'_>,
        now: &Now<'_>,
    ) -> Result<Sealed> {
        self.with_frame(tail, |tail, frame| {
            let kind = encode(tail, to, body, frame)?;
            match tail.write_frame(to.storage, to.segments, kind, frame, now) {
                Ok(lsn) => Ok(self.sealed(tail, lsn)),
                Err(e) => self.poison(e),
            }
        })
    }

    /// [`Writer::seal`] when the record goes into the log at once (`Tail::try_write_frame`:
    /// no roll, no new segment, no space to allocate); `None`, nothing written, otherwise.
    pub(crate) fn try_seal(
        &self,
        tail: &mut Tail,
        to: Target<'_>,
        body: &BodyRef<'_>,
    ) -> Result<Option<Sealed>> {
        self.with_frame(tail, |tail, frame| {
            let kind = encode(tail, to, body, frame)?;
            match tail.try_write_frame(kind, frame) {
                Ok(lsn) => Ok(lsn.map(|lsn| self.sealed(tail, lsn))),
                Err(e) => self.poison(e),
            }
        })
    }

    /// Runs `seal` with the tail's reused frame buffer, begun.
    #[inline]
    fn with_frame<T>(
        &self,
        tail: &mut Tail,
        seal: impl FnOnce(&mut Tail, &mut Vec<u8>) -> Result<T>,
    ) -> Result<T> {
        // Checked under the tail lock: an append that waited for it while another write
        // failed must not write after that failure (a failed roll left the tail behind).
        self.check_poison()?;
        let mut frame = std::mem::take(&mut tail.frame);
        begin_frame(&mut frame);
        tail.offsets.clear();
        let result = seal(tail, &mut frame);
        // A huge record's buffer is not kept for the records after it.
        if frame.capacity() <= 1 << 20 {
            tail.frame = frame;
        }
        result
    }

    /// The record written at `lsn`: the log end (and, after a roll, the active file)
    /// published for group commit.
    #[inline]
    fn sealed(&self, tail: &Tail, lsn: u64) -> Sealed {
        self.publish(tail);
        Sealed {
            lsn,
            end: tail.next_lsn,
        }
    }
}

/// Encodes `body` into `frame` after its header's room; the events' offsets into the tail.
#[inline]
fn encode(
    tail: &mut Tail,
    to: Target<'_>,
    body: &BodyRef<'_>,
    frame: &mut Vec<u8>,
) -> Result<RecordKind> {
    let too_large = |frame: &Vec<u8>| Error::RecordTooLarge {
        bytes: payload_len(frame),
        limit: to.record_bytes_max,
    };
    // Only a part past its 4 GiB length field fails to encode.
    let kind = encode_into(body, frame, &mut tail.offsets).map_err(|_| too_large(frame))?;
    if payload_len(frame) > to.record_bytes_max as usize {
        return Err(too_large(frame));
    }
    for (o, _) in &mut tail.offsets {
        *o = payload_offset(*o);
    }
    Ok(kind)
}

impl std::fmt::Debug for Target<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("record_bytes_max", &self.record_bytes_max)
            .finish_non_exhaustive()
    }
}
