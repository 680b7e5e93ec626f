//! The log cursor: the only frame loop of the store. It walks the bytes of one segment frame
//! by frame, and where the next frame is not a valid record it asks the decision table
//! (`store/recovery.rs`) what the bytes there are: the segment's end, a torn tail, a write
//! that may be in flight, or corruption of a named kind. Open, `refresh`, salvage and (through
//! open) `verify` read the log only through it.

use crate::codec::CorruptionKind;
use crate::codec::Decoded;
use crate::codec::frame::{
    Checks, FLAG_LAYOUT2, FRAME_HEADER_LEN, FrameCheck, OFF_FLAGS, RecordKind, check_frame_with,
};
use crate::codec::record::{RecordBody, decode, decode_checked};
use crate::store::log::map::LsnMap;
use crate::store::log::recovery::{Corrupt, FrameAction, FrameFacts, decide_row};

/// What is known of a segment as a whole when its bytes are read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SegmentFacts<'m> {
    /// How the segment's file offsets are LSNs.
    pub(crate) map: LsnMap<'m>,
    /// Sealed (synced whole before its successor was created) or the log's newest.
    pub(crate) place: Place,
    /// The furthest log position a checkpoint header vouches for.
    pub(crate) durable_lsn: u64,
    /// Whether a write may be in flight beside the reader.
    pub(crate) writers: Writers,
    /// The largest payload a valid frame has (`frame::MAX_PAYLOAD_BYTES`; smaller in tests).
    pub(crate) record_bytes_max: u32,
    /// How much of each frame is checked: every byte, but for compaction (`Checks::Frame`).
    pub(crate) checks: Checks,
}

/// Where a segment stands in the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Synced whole before its successor was created (or written whole by compaction).
    Sealed,
    /// The log's newest segment: its end may be torn.
    Newest,
}

/// Whether a write may be in flight beside a reader of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Writers {
    /// The reader holds the writer lock (the writer's open, salvage, compaction).
    Excluded,
    /// A writer may be appending beside it (a read-only open, `refresh`).
    Beside,
}

/// How a walk reads a segment's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// For the first time.
    First,
    /// Again at its base, after a [`StopAction::Reread`].
    Reread,
}

impl<'a> SegmentFacts<'a> {
    /// Every byte checked: how an open, `refresh` and salvage read a segment.
    pub(crate) fn checked(
        map: LsnMap<'a>,
        place: Place,
        durable_lsn: u64,
        writers: Writers,
    ) -> Self {
        Self {
            map,
            place,
            durable_lsn,
            writers,
            record_bytes_max: crate::codec::frame::MAX_PAYLOAD_BYTES,
            checks: Checks::Every,
        }
    }

    /// A sealed segment read under the writer lock, past every durable mark: what compaction
    /// reads (nothing is in flight, nothing is cut). Compaction uses only what a frame's own
    /// CRC covers and copies the events' bytes as they are: it checks the frame CRC alone
    /// (`docs/DESIGN.md` §3.7).
    pub(crate) fn sealed_under_lock(map: LsnMap<'a>) -> Self {
        Self {
            map,
            place: Place::Sealed,
            durable_lsn: 0,
            writers: Writers::Excluded,
            record_bytes_max: crate::codec::frame::MAX_PAYLOAD_BYTES,
            checks: Checks::Frame,
        }
    }
}

impl SegmentFacts<'_> {
    /// The LSN of a file offset of this segment (one the cursor reads: a record's start, or
    /// where the records end).
    pub(crate) fn lsn_of(&self, offset: usize) -> u64 {
        let lsn = self.map.lsn_of(offset as u64);
        debug_assert!(lsn.is_some(), "an offset outside the segment's records");
        lsn.unwrap_or(u64::MAX)
    }
}

/// A valid record frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame<'a> {
    /// Its file offset.
    pub(crate) offset: usize,
    /// Its LSN.
    pub(crate) lsn: u64,
    pub(crate) kind: RecordKind,
    /// The frame checksum (a checkpoint links to it).
    pub(crate) crc: u32,
    /// HeaderVerdict and payload.
    pub(crate) bytes: &'a [u8],
    /// Every event's own checksum was checked with the frame (layout 2, `Checks::Every`).
    pub(crate) events_checked: bool,
}

impl<'a> Frame<'a> {
    /// The payload.
    pub(crate) fn payload(&self) -> &'a [u8] {
        self.bytes.get(FRAME_HEADER_LEN..).unwrap_or_default()
    }

    /// The payload decoded, its events' checksums checked unless the frame's check did.
    pub(crate) fn decode(&self) -> Decoded<RecordBody> {
        if self.events_checked {
            decode_checked(self.kind, self.payload())
        } else {
            decode(self.kind, self.payload())
        }
    }
}

/// Where the cursor stopped before the end, and what the table says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stop {
    /// The file offset.
    pub(crate) offset: usize,
    /// Its LSN.
    pub(crate) lsn: u64,
    /// The table row that decided.
    pub(crate) row: &'static str,
    pub(crate) action: StopAction,
}

/// What to do where the cursor stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StopAction {
    /// A torn tail from here to the segment's end.
    Truncate,
    /// A write may be in flight here: read the bytes from here again (then the position is
    /// settled) and go on with a new cursor.
    Reread,
    /// Corruption of this kind.
    Corrupt(CorruptionKind),
}

/// One step of the cursor.
#[derive(Debug)]
pub(crate) enum Step<'a> {
    /// A valid record; the cursor is past it.
    Record(Frame<'a>),
    /// The end of the segment's records (the cursor stays there).
    End,
    /// Not a record and not the end (the cursor stays there).
    Stop(Stop),
}

/// A cursor over the bytes of one segment from some offset to the segment's end (as far as
/// the reader's view of the file goes).
#[derive(Debug)]
pub(crate) struct LogCursor<'a> {
    facts: SegmentFacts<'a>,
    /// File offset of `bytes[0]`.
    base: usize,
    bytes: &'a [u8],
    /// File offset of the next frame.
    pos: usize,
    /// An offset whose bytes were read again after later bytes had been seen: settled.
    reread_at: Option<usize>,
    /// The end of the run the last step was in (a compacted segment), kept while the cursor
    /// stays before it: one lookup per run, not per frame.
    run_ends_at: usize,
}

/// Whether `b` holds only zeros. Compared 32 bytes at a time: the end of the active segment
/// is up to a preallocated MiB of zeros, read at every open, and a byte-at-a-time loop over
/// it was most of a read-only open's time (`perf`, `--profile-open --big`).
pub(crate) fn zeros(b: &[u8]) -> bool {
    let (blocks, rest) = b.as_chunks::<32>();
    blocks.iter().all(|c| *c == [0u8; 32]) && rest.iter().all(|&x| x == 0)
}

impl<'a> LogCursor<'a> {
    /// A cursor at file offset `base`, which `bytes[0]` is, on its `pass` over them.
    pub(crate) fn new(facts: SegmentFacts<'a>, base: usize, bytes: &'a [u8], pass: Pass) -> Self {
        Self {
            facts,
            base,
            bytes,
            pos: base,
            reread_at: (pass == Pass::Reread).then_some(base),
            run_ends_at: 0,
        }
    }

    /// The file offset of the next frame.
    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    /// The LSN of the next frame.
    pub(crate) fn lsn(&self) -> u64 {
        self.facts.lsn_of(self.pos)
    }

    /// The file offset just past the bytes this cursor reads.
    pub(crate) fn end(&self) -> usize {
        self.base + self.bytes.len()
    }

    /// The bytes from file offset `at` to the end.
    pub(crate) fn bytes_from(&self, at: usize) -> &'a [u8] {
        self.bytes
            .get(at.saturating_sub(self.base)..)
            .unwrap_or_default()
    }

    /// Where the run holding the cursor's position ends in a compacted segment (no record
    /// crosses it), else the end of the bytes read.
    fn run_end(&mut self) -> usize {
        if self.pos >= self.run_ends_at {
            self.run_ends_at = self
                .facts
                .map
                .run_end(self.pos as u64)
                .map_or(usize::MAX, crate::width::index);
        }
        self.run_ends_at.min(self.end())
    }

    /// The next step.
    pub(crate) fn step(&mut self) -> Step<'a> {
        let rest = self.bytes_from(self.pos);
        let mut check = check_frame_with(rest, self.facts.record_bytes_max, self.facts.checks);
        // A frame running past its run in a compacted segment is no record of it: the bytes
        // after the run's end are another stretch of the log (found by fuzzing: a salvage
        // had voided damage across a run's end).
        if let FrameCheck::Valid { frame_len, .. } = check
            && self.pos + frame_len > self.run_end()
        {
            check = FrameCheck::BadLength;
        }
        if let FrameCheck::Valid {
            kind,
            frame_len,
            crc,
        } = check
        {
            let frame = Frame {
                offset: self.pos,
                lsn: self.lsn(),
                kind,
                crc,
                bytes: rest.get(..frame_len).unwrap_or_default(),
                events_checked: self.facts.checks == Checks::Every
                    && rest.get(OFF_FLAGS) == Some(&FLAG_LAYOUT2),
            };
            self.pos += frame_len;
            return Step::Record(frame);
        }
        let after = match check {
            FrameCheck::BadLength => FRAME_HEADER_LEN,
            FrameCheck::BadChecksum { frame_len } | FrameCheck::UnknownKind { frame_len, .. } => {
                frame_len
            }
            _ => rest.len(),
        };
        let lsn = self.lsn();
        let tail_zeros = zeros(rest.get(after..).unwrap_or_default());
        let facts = FrameFacts::from_check(
            &check,
            [
                self.facts.place == Place::Sealed,
                lsn < self.facts.durable_lsn,
                self.facts.writers == Writers::Excluded || self.reread_at == Some(self.pos),
            ],
            tail_zeros,
            tail_zeros && zeros(rest.get(..after).unwrap_or(rest)),
        );
        let (row, action) = match decide_row(facts) {
            Ok(decided) => decided,
            // The cursor never produces such facts (the table's tests prove it total).
            Err(_) => ("impossible facts", FrameAction::Corrupt(Corrupt::AsFound)),
        };
        let action = match action {
            FrameAction::End => return Step::End,
            // Only a valid frame is accepted, and that was replayed above.
            FrameAction::Accept => StopAction::Corrupt(CorruptionKind::Inconsistent(
                "the recovery table accepted a damaged frame",
            )),
            FrameAction::Truncate => StopAction::Truncate,
            FrameAction::Reread => StopAction::Reread,
            FrameAction::Corrupt(why) => StopAction::Corrupt(match why {
                Corrupt::DataAfterDamage => CorruptionKind::DataAfterDamage,
                Corrupt::MissingRecords => CorruptionKind::MissingRecords {
                    vouched_to: self.facts.durable_lsn,
                },
                Corrupt::AsFound => found(&check),
            }),
        };
        Step::Stop(Stop {
            offset: self.pos,
            lsn,
            row,
            action,
        })
    }

    /// Salvage: moves past damage at the cursor to the next offset where a valid frame starts
    /// (or the end); returns that offset.
    pub(crate) fn resync(&mut self) -> usize {
        let max = self.facts.record_bytes_max;
        // Not past the run's end in a compacted segment: a record starts there.
        let limit = self.run_end();
        let next = (self.pos + FRAME_HEADER_LEN..limit)
            .find(|&q| {
                matches!(
                    check_frame_with(self.bytes_from(q), max, self.facts.checks),
                    FrameCheck::Valid { .. }
                )
            })
            .unwrap_or(limit);
        self.pos = next.max(self.pos);
        self.pos
    }
}

/// The kind of damage a frame check found.
fn found(check: &FrameCheck) -> CorruptionKind {
    match check {
        FrameCheck::ShortHeader | FrameCheck::End => CorruptionKind::ShortHeader,
        FrameCheck::BadLength => CorruptionKind::BadLength,
        FrameCheck::Incomplete { .. } => CorruptionKind::Incomplete,
        FrameCheck::BadChecksum { .. } => CorruptionKind::ChecksumMismatch,
        FrameCheck::UnknownKind { kind, .. } => CorruptionKind::UnknownKind(*kind),
        FrameCheck::Valid { .. } => CorruptionKind::Inconsistent("a valid frame reported"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_sees_every_nonzero_byte_at_every_length() {
        for len in 0..100 {
            assert!(zeros(&vec![0u8; len]), "{len}");
            for at in 0..len {
                let mut b = vec![0u8; len];
                b[at] = 1 << (at % 8);
                assert!(!zeros(&b), "{len} {at}");
            }
        }
    }
    use crate::codec::frame::encode_frame;

    fn facts(sealed: bool, durable_lsn: u64, locked: bool) -> SegmentFacts<'static> {
        SegmentFacts::checked(
            LsnMap::Plain { first_lsn: 0 },
            if sealed { Place::Sealed } else { Place::Newest },
            durable_lsn,
            if locked {
                Writers::Excluded
            } else {
                Writers::Beside
            },
        )
    }

    /// A segment's bytes from its first record: two frames, then `tail`.
    fn log(tail: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        encode_frame(RecordKind::Void, &[0; 4], &mut b);
        encode_frame(RecordKind::Void, &[0; 8], &mut b);
        b.extend_from_slice(tail);
        b
    }

    fn walk(c: &mut LogCursor<'_>) -> (usize, Step<'static>) {
        let mut records = 0;
        loop {
            match c.step() {
                Step::Record(_) => records += 1,
                Step::End => return (records, Step::End),
                Step::Stop(s) => return (records, Step::Stop(s)),
            }
        }
    }

    const H: usize = crate::codec::segment::SEGMENT_HEADER_LEN;

    /// An append record of one event in `layout`, its event's checksum changed when `bad`
    /// (the frame's checksum then sealed over that: a writer's slip, not a torn write).
    fn one_event(layout: crate::codec::frame::FrameLayout, bad: bool) -> Vec<u8> {
        use crate::codec::frame::{begin_frame, payload_offset, seal_frame};
        use crate::codec::record::{BodyRef, encode_into};
        let events = [crate::event::Event::new(
            "turn/start",
            0,
            1,
            &b"{\"turn\":1}"[..],
        )];
        let mut frame = Vec::new();
        begin_frame(&mut frame);
        let mut locs = Vec::new();
        let body = BodyRef::Append {
            session: "s",
            events: &events,
        };
        let kind = encode_into(&body, &mut frame, &mut locs).unwrap();
        if bad {
            let last = frame.len() - 1;
            frame[last] ^= 1;
        }
        for (o, _) in &mut locs {
            *o = payload_offset(*o);
        }
        seal_frame(kind, &mut frame, layout, &locs);
        frame
    }

    #[test]
    fn a_replayed_record_is_hashed_once_and_still_checked_whole() {
        use crate::codec::frame::FrameLayout;
        use crate::codec::record::EVENT_CHECKSUM;
        for (layout, checked) in [(FrameLayout::Split, true), (FrameLayout::Whole, false)] {
            let b = one_event(layout, false);
            let mut c = LogCursor::new(facts(true, 0, true), H, &b, Pass::First);
            let Step::Record(frame) = c.step() else {
                panic!("{layout:?}: no record");
            };
            // Layout 2 checked whole: its event's checksum was checked with the frame.
            assert_eq!(frame.events_checked, checked, "{layout:?}");
            assert!(frame.decode().is_ok(), "{layout:?}");
        }
        // A layout-1 frame whose checksum holds over an event whose own does not: the decode
        // still checks the event (the frame's check did not).
        let b = one_event(FrameLayout::Whole, true);
        let mut c = LogCursor::new(facts(true, 0, true), H, &b, Pass::First);
        let Step::Record(frame) = c.step() else {
            panic!("no record");
        };
        assert_eq!(frame.decode().unwrap_err(), EVENT_CHECKSUM);
        // In layout 2 the same slip is no valid frame at all.
        let b = one_event(FrameLayout::Split, true);
        let mut c = LogCursor::new(facts(true, 0, true), H, &b, Pass::First);
        assert!(matches!(c.step(), Step::Stop(_)));
        // Compaction's frame-only check leaves the events to the decode.
        let b = one_event(FrameLayout::Split, false);
        let mut compacting = facts(true, 0, true);
        compacting.checks = crate::codec::frame::Checks::Frame;
        let mut c = LogCursor::new(compacting, H, &b, Pass::First);
        let Step::Record(frame) = c.step() else {
            panic!("no record");
        };
        assert!(!frame.events_checked);
    }

    #[test]
    fn records_then_the_clean_end_or_zeros() {
        for tail in [&[][..], &[0; 100]] {
            let b = log(tail);
            let mut c = LogCursor::new(facts(false, 0, true), H, &b, Pass::First);
            assert!(matches!(walk(&mut c), (2, Step::End)));
            assert_eq!(c.offset(), H + 44);
        }
    }

    #[test]
    fn zeros_below_a_durable_mark_are_missing_records() {
        let b = log(&[0; 100]);
        let mut c = LogCursor::new(facts(false, 500, true), H, &b, Pass::First);
        let (n, step) = walk(&mut c);
        assert_eq!(n, 2);
        let Step::Stop(stop) = step else {
            panic!("{step:?}")
        };
        assert_eq!(
            stop.action,
            StopAction::Corrupt(CorruptionKind::MissingRecords { vouched_to: 500 })
        );
        // A sealed segment's exact end is its end; zeros in it are damage.
        let b = log(&[]);
        let mut c = LogCursor::new(facts(true, 500, true), H, &b, Pass::First);
        assert!(matches!(walk(&mut c), (2, Step::End)));
        let b = log(&[0; 20]);
        let mut c = LogCursor::new(facts(true, 0, true), H, &b, Pass::First);
        assert!(
            matches!(walk(&mut c), (2, Step::Stop(s)) if s.action == StopAction::Corrupt(CorruptionKind::BadLength))
        );
    }

    #[test]
    fn damage_with_data_after_is_read_again_by_a_view_without_the_lock() {
        let mut tail = vec![0u8; 30];
        tail[0] = 7; // a damaged header
        tail[29] = 1; // data after it
        let b = log(&tail);
        let mut c = LogCursor::new(facts(false, 0, false), H, &b, Pass::First);
        let (_, step) = walk(&mut c);
        let Step::Stop(stop) = step else {
            panic!("{step:?}")
        };
        assert_eq!(stop.action, StopAction::Reread);
        // Read again at that offset: now the decision is final.
        let at = stop.offset;
        let again = &b[at - H..];
        let mut c = LogCursor::new(facts(false, 0, false), at, again, Pass::Reread);
        assert!(
            matches!(c.step(), Step::Stop(s) if s.action == StopAction::Corrupt(CorruptionKind::DataAfterDamage))
        );
        // With the writer lock held it is final at once.
        let mut c = LogCursor::new(facts(false, 0, true), H, &b, Pass::First);
        assert!(
            matches!(walk(&mut c), (2, Step::Stop(s)) if s.action == StopAction::Corrupt(CorruptionKind::DataAfterDamage))
        );
    }

    #[test]
    fn resync_finds_the_next_valid_frame() {
        let mut b = vec![9u8; 24];
        let mut f = Vec::new();
        encode_frame(RecordKind::Void, &[0; 4], &mut f);
        b.extend_from_slice(&f);
        let mut c = LogCursor::new(facts(true, 0, true), H, &b, Pass::First);
        assert!(matches!(c.step(), Step::Stop(_)));
        assert_eq!(c.resync(), H + 24);
        assert!(matches!(c.step(), Step::Record(r) if r.lsn == 24));
        assert!(matches!(c.step(), Step::End));
    }
}
