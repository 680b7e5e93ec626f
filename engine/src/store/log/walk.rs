//! The walk over a segment's frames: the one loop that drives the cursor. What to do at each
//! record, and at each place where the cursor stops before the end, is the consumer's: open's
//! scan replays records and ends the walk at a stop; salvage's plan replays or voids records
//! and resynchronises past damage; the count of a segment salvage removes resynchronises and
//! counts. A new consumer of the log (compaction) is one more closure, not another loop.

use crate::Result;
use crate::codec::CorruptionKind;
use crate::store::log::cursor::{Frame, LogCursor, SegmentFacts, Step, Stop, StopAction};
use crate::store::log::cursor::{Pass, Place, Writers};

/// What the walk meets.
pub(crate) enum Met<'c, 'a> {
    /// A valid record; the cursor is past it.
    Record(Frame<'a>),
    /// Not a record and not the end: the consumer may move the cursor on
    /// ([`LogCursor::resync`]) and go on, or finish the walk here.
    Stop(Stop, &'c mut LogCursor<'a>),
}

/// Whether the walk goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Go {
    /// On to the next step (after a stop: from where the consumer moved the cursor).
    On,
    /// The walk of this segment ends.
    Finish,
}

/// Walks `cursor` to the end of its bytes, handing each record and stop to `meet`; returns
/// the stop that finished the walk, or `None` when it reached the segment's end. A stop after
/// which the cursor did not move finishes the walk (it would meet the same stop again).
///
/// # Errors
/// What `meet` returns.
pub(crate) fn walk<'a>(
    cursor: &mut LogCursor<'a>,
    mut meet: impl FnMut(Met<'_, 'a>) -> Result<Go>,
) -> Result<Option<Stop>> {
    loop {
        match cursor.step() {
            Step::End => return Ok(None),
            Step::Record(frame) => {
                if meet(Met::Record(frame))? == Go::Finish {
                    return Ok(None);
                }
            }
            Step::Stop(stop) => {
                let at = cursor.offset();
                if meet(Met::Stop(stop, cursor))? == Go::Finish || cursor.offset() == at {
                    return Ok(Some(stop));
                }
            }
        }
    }
}

/// What the decision table says of a log with no segment holding records, under a durable
/// mark at `durable_lsn`: nothing (an empty log may be the end), or the corruption it is.
pub(crate) fn empty_log(durable_lsn: u64, writers: Writers) -> Option<CorruptionKind> {
    let facts = SegmentFacts::checked(
        crate::store::log::map::LsnMap::Plain { first_lsn: 0 },
        Place::Newest,
        durable_lsn,
        writers,
    );
    match LogCursor::new(facts, 0, &[], Pass::First).step() {
        Step::Stop(stop) => match stop.action {
            StopAction::Corrupt(kind) => Some(kind),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::frame::{RecordKind, encode_frame};
    use crate::codec::segment::SEGMENT_HEADER_LEN;

    fn facts() -> SegmentFacts<'static> {
        SegmentFacts::checked(
            crate::store::log::map::LsnMap::Plain { first_lsn: 0 },
            Place::Sealed,
            0,
            Writers::Excluded,
        )
    }

    #[test]
    fn records_and_stops_in_order_and_a_resync_goes_on() {
        let mut bytes = Vec::new();
        encode_frame(RecordKind::Void, &[0; 8], &mut bytes);
        let damaged_at = bytes.len();
        encode_frame(RecordKind::Void, &[0; 8], &mut bytes);
        bytes[damaged_at + 20] ^= 0xff;
        encode_frame(RecordKind::Void, &[1; 8], &mut bytes);
        let mut met = Vec::new();
        let mut cursor = LogCursor::new(facts(), SEGMENT_HEADER_LEN, &bytes, Pass::First);
        let end = walk(&mut cursor, |m| {
            Ok(match m {
                Met::Record(f) => {
                    met.push(("record", f.offset));
                    Go::On
                }
                Met::Stop(s, c) => {
                    met.push(("stop", s.offset));
                    c.resync();
                    Go::On
                }
            })
        })
        .unwrap();
        assert_eq!(end, None);
        let at = SEGMENT_HEADER_LEN;
        assert_eq!(
            met,
            vec![
                ("record", at),
                ("stop", at + damaged_at),
                ("record", at + 2 * damaged_at)
            ]
        );
        // A consumer that does not move on at a stop finishes there.
        let mut cursor = LogCursor::new(facts(), SEGMENT_HEADER_LEN, &bytes, Pass::First);
        let stop = walk(&mut cursor, |_| Ok(Go::On)).unwrap().unwrap();
        assert_eq!(stop.offset, at + damaged_at);
    }
}
