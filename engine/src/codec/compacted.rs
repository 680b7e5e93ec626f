//! A compacted segment's run table and footer (`docs/FORMAT.md` §2.1): what maps its LSNs to
//! file offsets once compaction has left out the records that were dead. The records kept
//! keep their LSNs, so the log's positions become sparse: a *run* is a stretch of records
//! that were contiguous in the log, stored at `offset`, its first byte at LSN `lsn`. Each
//! record left out leaves a *tombstone*: its LSN and frame checksum, no byte of its payload —
//! so that a consumer remembering a record (`Store::holds_record`) tells a log compaction
//! changed from another log.

use super::reader::ByteReader;
use super::segment::SEGMENT_HEADER_LEN;

/// The footer magic of a table of wide runs (versions 4, 5 and 7; version 8 when a run is
/// longer than a `u32`).
pub const FOOTER_MAGIC: [u8; 8] = *b"SESSDBRT";
/// The footer magic of a table of narrow runs (version 8).
pub const FOOTER_MAGIC_NARROW: [u8; 8] = *b"SESSDBRN";
/// Bytes in the footer.
pub const FOOTER_LEN: usize = 32;
/// Bytes in one wide run entry: `u64` LSN, `u64` file offset.
pub const RUN_LEN: usize = 16;
/// Bytes in one narrow run entry: `u64` LSN, `u32` length (its offset is where the one
/// before it ends).
pub const NARROW_RUN_LEN: usize = 12;

/// How a run table stores its runs (`docs/FORMAT.md` §2.1), named by the footer's magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunTable {
    /// LSN and file offset, 16 bytes a run.
    Wide,
    /// LSN and length, 12 bytes a run: under churn nearly every kept record is a run of its
    /// own, and the 4 bytes were most of what a compacted store kept beside its records.
    Narrow,
}

impl RunTable {
    /// Bytes in one run entry.
    pub fn run_len(self) -> usize {
        match self {
            Self::Wide => RUN_LEN,
            Self::Narrow => NARROW_RUN_LEN,
        }
    }

    fn magic(self) -> [u8; 8] {
        match self {
            Self::Wide => FOOTER_MAGIC,
            Self::Narrow => FOOTER_MAGIC_NARROW,
        }
    }
}
/// Bytes in one tombstone entry.
pub const TOMBSTONE_LEN: usize = 12;

/// A record compaction left out: its LSN and its frame's checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tombstone {
    /// The record's LSN.
    pub lsn: u64,
    /// Its frame CRC (`docs/FORMAT.md` §3).
    pub crc: u32,
}

/// One run: the LSN of its first byte and the file offset it is stored at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The LSN of the run's first byte.
    pub lsn: u64,
    /// Its file offset.
    pub offset: u64,
}

/// The footer: the segment's end in the log and its tables' sizes and checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The LSN just past the segment: where the next segment starts.
    pub end_lsn: u64,
    /// Entries in the run table.
    pub runs: u64,
    /// Entries in the tombstone table (0 in a version 4 segment).
    pub tombstones: u64,
    /// CRC-32 of the run table and the tombstone table.
    pub runs_crc: u32,
    /// How the run table stores its runs (the footer's magic).
    pub table: RunTable,
}

/// What is wrong with a compacted segment's footer or run table.
pub type MapError = &'static str;

impl Footer {
    /// The 32 footer bytes.
    pub fn encode(&self) -> [u8; FOOTER_LEN] {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        v.extend_from_slice(&self.table.magic());
        v.extend_from_slice(&self.end_lsn.to_le_bytes());
        // Two u32 counts where version 4 had one u64: a version 4 footer (no tombstones)
        // reads the same.
        v.extend_from_slice(&u32::try_from(self.runs).unwrap_or(u32::MAX).to_le_bytes());
        v.extend_from_slice(
            &u32::try_from(self.tombstones)
                .unwrap_or(u32::MAX)
                .to_le_bytes(),
        );
        v.extend_from_slice(&self.runs_crc.to_le_bytes());
        let crc = crc32fast::hash(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        let mut b = [0u8; FOOTER_LEN];
        b.copy_from_slice(&v);
        b
    }

    /// Decodes the last [`FOOTER_LEN`] bytes of a file of `file_len` bytes.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn decode(bytes: &[u8], file_len: u64) -> Result<Self, MapError> {
        let b = bytes.get(..FOOTER_LEN).ok_or("the footer is cut short")?;
        let (covered, crc) = b.split_at(FOOTER_LEN - 4);
        let mut c = ByteReader::new(covered);
        let table = match c.take(FOOTER_MAGIC.len(), "magic")? {
            m if m == FOOTER_MAGIC => RunTable::Wide,
            m if m == FOOTER_MAGIC_NARROW => RunTable::Narrow,
            _ => return Err("the footer's magic is wrong"),
        };
        if ByteReader::new(crc).u32("crc")? != crc32fast::hash(covered) {
            return Err("the footer's checksum does not match");
        }
        let f = Self {
            end_lsn: c.u64("end LSN")?,
            runs: u64::from(c.u32("run count")?),
            tombstones: u64::from(c.u32("tombstone count")?),
            runs_crc: c.u32("run table CRC")?,
            table,
        };
        let trailer = f
            .table_len()
            .checked_add((SEGMENT_HEADER_LEN + FOOTER_LEN) as u64);
        if trailer.is_none_or(|t| t > file_len) {
            return Err("the run table is longer than the file");
        }
        Ok(f)
    }

    /// The file offset where the records end and the run table starts, in a file of
    /// `file_len` bytes (checked by [`Footer::decode`]).
    pub fn records_end(&self, file_len: u64) -> u64 {
        file_len.saturating_sub(FOOTER_LEN as u64 + self.table_len())
    }

    /// Bytes of the run and tombstone tables (counts are u32: no overflow).
    pub fn table_len(&self) -> u64 {
        self.runs * self.table.run_len() as u64 + self.tombstones * TOMBSTONE_LEN as u64
    }
}

/// A segment's run table, checked: offsets from the first record on, each run after the
/// previous one in the file and in the log, none past the segment's end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runs {
    runs: Vec<Run>,
    tombstones: Vec<Tombstone>,
    first_lsn: u64,
    records_end: u64,
    end_lsn: u64,
}

impl Runs {
    /// Checks a run table.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn new(
        runs: Vec<Run>,
        first_lsn: u64,
        records_end: u64,
        end_lsn: u64,
    ) -> Result<Self, MapError> {
        let header = SEGMENT_HEADER_LEN as u64;
        match runs.first() {
            None if records_end != header => return Err("records but no run"),
            Some(r) if r.offset != header => return Err("the first run is not the first record"),
            Some(r) if r.lsn < first_lsn => return Err("a run before the segment's first LSN"),
            _ => {}
        }
        for (i, r) in runs.iter().enumerate() {
            let next_offset = runs.get(i + 1).map_or(records_end, |n| n.offset);
            let len = next_offset
                .checked_sub(r.offset)
                .filter(|&l| l > 0)
                .ok_or("runs out of order")?;
            let end = r.lsn.checked_add(len).ok_or("a run past the last LSN")?;
            if runs.get(i + 1).is_some_and(|n| n.lsn < end) || end > end_lsn {
                return Err("runs overlap in the log");
            }
        }
        if end_lsn < first_lsn {
            return Err("the segment ends before it starts");
        }
        // The records end where the segment does: a compaction that leaves out a segment's
        // last record writes a void in its place (`docs/FORMAT.md` §2.1), and a checkpoint
        // taken at the segment's end names the record that ends it.
        if let Some(last) = runs.last() {
            let end = last.lsn + (records_end - last.offset);
            if end != end_lsn {
                return Err("the records end before the segment does");
            }
        }
        Ok(Self {
            runs,
            tombstones: Vec::new(),
            first_lsn,
            records_end,
            end_lsn,
        })
    }

    /// The same runs with the tombstones of the records left out.
    ///
    /// # Errors
    /// A tombstone out of order, outside the segment, or where a run holds the bytes.
    pub fn with_tombstones(mut self, tombstones: Vec<Tombstone>) -> Result<Self, MapError> {
        // Both lists are in LSN order: one pass over each (a lookup per tombstone was most of
        // an open that confirmed a link into a segment of 3.3 M tombstones).
        let mut run = 0;
        for (i, t) in tombstones.iter().enumerate() {
            if tombstones.get(i + 1).is_some_and(|n| n.lsn <= t.lsn) {
                return Err("tombstones out of order");
            }
            if t.lsn < self.first_lsn || t.lsn >= self.end_lsn {
                return Err("a tombstone outside the segment");
            }
            while self.runs.get(run + 1).is_some_and(|n| n.lsn <= t.lsn) {
                run += 1;
            }
            let kept = self.runs.get(run).is_some_and(|r| {
                let end = self
                    .runs
                    .get(run + 1)
                    .map_or(self.records_end, |n| n.offset);
                r.lsn <= t.lsn && t.lsn - r.lsn < end - r.offset
            });
            if kept {
                return Err("a tombstone where a record is kept");
            }
        }
        self.tombstones = tombstones;
        Ok(self)
    }

    /// Decodes and checks the run table `bytes` that `footer` describes.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn decode(
        bytes: &[u8],
        footer: &Footer,
        first_lsn: u64,
        records_end: u64,
    ) -> Result<Self, MapError> {
        if crc32fast::hash(bytes) != footer.runs_crc {
            return Err("the run table's checksum does not match");
        }
        let mut c = ByteReader::new(bytes);
        let n = usize::try_from(footer.runs).map_err(|_| "too many runs")?;
        let t = usize::try_from(footer.tombstones).map_err(|_| "too many tombstones")?;
        if u64::try_from(c.remaining()) != Ok(footer.table_len()) {
            return Err("the run table's length is wrong");
        }
        let mut runs = Vec::with_capacity(n);
        let mut offset = SEGMENT_HEADER_LEN as u64;
        for _ in 0..n {
            let lsn = c.u64("run LSN")?;
            match footer.table {
                RunTable::Wide => offset = c.u64("run offset")?,
                RunTable::Narrow => {}
            }
            runs.push(Run { lsn, offset });
            if footer.table == RunTable::Narrow {
                // `Runs::new` checks the lengths add up to where the records end.
                offset = offset
                    .checked_add(u64::from(c.u32("run length")?))
                    .ok_or("a run past the file's end")?;
            }
        }
        if footer.table == RunTable::Narrow && offset != records_end {
            return Err("the runs' lengths do not end where the records do");
        }
        let mut tombstones = Vec::with_capacity(t);
        for _ in 0..t {
            tombstones.push(Tombstone {
                lsn: c.u64("tombstone LSN")?,
                crc: c.u32("tombstone CRC")?,
            });
        }
        Self::new(runs, first_lsn, records_end, footer.end_lsn)?.with_tombstones(tombstones)
    }

    /// The run table's bytes and the footer that follows them: narrow runs, or wide ones when
    /// a run is longer than a narrow length holds.
    pub fn encode(&self) -> Vec<u8> {
        let narrow = (0..self.runs.len()).all(|i| u32::try_from(self.run_len(i)).is_ok());
        self.encode_as(if narrow {
            RunTable::Narrow
        } else {
            RunTable::Wide
        })
    }

    /// The bytes of run `i` (to the next run, the last to where the records end).
    fn run_len(&self, i: usize) -> u64 {
        let end = self.runs.get(i + 1).map_or(self.records_end, |n| n.offset);
        self.runs.get(i).map_or(0, |r| end - r.offset)
    }

    /// [`Runs::encode`] with runs stored as `table` says (a wide table is what the previous
    /// releases wrote; a narrow one holds only lengths up to `u32::MAX`).
    pub fn encode_as(&self, table: RunTable) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            self.runs.len() * table.run_len() + self.tombstones.len() * TOMBSTONE_LEN + FOOTER_LEN,
        );
        for (i, r) in self.runs.iter().enumerate() {
            out.extend_from_slice(&r.lsn.to_le_bytes());
            match table {
                RunTable::Wide => out.extend_from_slice(&r.offset.to_le_bytes()),
                RunTable::Narrow => out.extend_from_slice(
                    &u32::try_from(self.run_len(i))
                        .unwrap_or(u32::MAX)
                        .to_le_bytes(),
                ),
            }
        }
        for t in &self.tombstones {
            out.extend_from_slice(&t.lsn.to_le_bytes());
            out.extend_from_slice(&t.crc.to_le_bytes());
        }
        let footer = Footer {
            end_lsn: self.end_lsn,
            runs: self.runs.len() as u64,
            tombstones: self.tombstones.len() as u64,
            runs_crc: crc32fast::hash(&out),
            table,
        };
        out.extend_from_slice(&footer.encode());
        out
    }

    /// The runs.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The tombstones of the records left out.
    pub fn tombstones(&self) -> &[Tombstone] {
        &self.tombstones
    }

    /// Whether compaction left out a record at `lsn` whose frame CRC was `crc`.
    pub fn left_out(&self, lsn: u64, crc: u32) -> bool {
        self.tombstones
            .binary_search_by_key(&lsn, |t| t.lsn)
            .is_ok_and(|i| self.tombstones.get(i).is_some_and(|t| t.crc == crc))
    }

    /// The file offset where the records end.
    pub fn records_end(&self) -> u64 {
        self.records_end
    }

    /// The LSN just past the segment.
    pub fn end_lsn(&self) -> u64 {
        self.end_lsn
    }

    /// The run holding file offset `at` and the offset where it ends.
    fn run_at(&self, at: u64) -> Option<(Run, u64)> {
        let i = self
            .runs
            .partition_point(|r| r.offset <= at)
            .checked_sub(1)?;
        let run = *self.runs.get(i)?;
        let end = self.runs.get(i + 1).map_or(self.records_end, |n| n.offset);
        (at < end).then_some((run, end))
    }

    /// The LSN of file offset `at`: inside a run, or the segment's end at the records' end.
    pub fn lsn_of(&self, at: u64) -> Option<u64> {
        if at >= self.records_end {
            return (at == self.records_end).then_some(self.end_lsn);
        }
        let (run, _) = self.run_at(at)?;
        Some(run.lsn + (at - run.offset))
    }

    /// The file offset where the run holding file offset `at` ends: the next run's first
    /// record, or the records' end. No record crosses it.
    pub fn run_end(&self, at: u64) -> u64 {
        let next = self.runs.partition_point(|r| r.offset <= at);
        self.runs.get(next).map_or(self.records_end, |r| r.offset)
    }

    /// The file offset of the byte at `lsn`, when a run holds it (`None` in a hole).
    pub fn offset_of(&self, lsn: u64) -> Option<u64> {
        let i = self.runs.partition_point(|r| r.lsn <= lsn).checked_sub(1)?;
        let run = *self.runs.get(i)?;
        let end = self.runs.get(i + 1).map_or(self.records_end, |n| n.offset);
        let at = run.offset.checked_add(lsn - run.lsn)?;
        (at < end).then_some(at)
    }

    /// The file offset of the first byte kept at or after log position `lsn` (the records'
    /// end when nothing is): where a reader starting at that position begins.
    pub fn offset_at_or_after(&self, lsn: u64) -> u64 {
        if let Some(at) = self.offset_of(lsn) {
            return at;
        }
        self.runs
            .iter()
            .find(|r| r.lsn >= lsn)
            .map_or(self.records_end, |r| r.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs() -> Runs {
        // Records at LSNs 100..160 (file 40..100) and 300..340 (file 100..140); the segment
        // spans 100..340.
        Runs::new(
            vec![
                Run {
                    lsn: 100,
                    offset: 40,
                },
                Run {
                    lsn: 300,
                    offset: 100,
                },
            ],
            100,
            140,
            340,
        )
        .unwrap()
    }

    #[test]
    fn maps_both_ways_and_holes_have_no_offset() {
        let r = runs();
        assert_eq!(r.offset_of(100), Some(40));
        assert_eq!(r.offset_of(159), Some(99));
        assert_eq!(r.offset_of(160), None);
        assert_eq!(r.offset_of(299), None);
        assert_eq!(r.offset_of(300), Some(100));
        assert_eq!(r.offset_of(340), None);
        assert_eq!(r.lsn_of(40), Some(100));
        assert_eq!(r.lsn_of(100), Some(300));
        assert_eq!(r.lsn_of(140), Some(340));
        assert_eq!(r.lsn_of(141), None);
        assert_eq!(r.offset_at_or_after(160), 100);
        assert_eq!(r.offset_at_or_after(340), 140);
    }

    #[test]
    fn round_trips_and_damage_is_refused() {
        let r = runs();
        let bytes = r.encode();
        let file_len = 140 + bytes.len() as u64;
        let (table, footer) = bytes.split_at(bytes.len() - FOOTER_LEN);
        let f = Footer::decode(footer, file_len).unwrap();
        assert_eq!(f.records_end(file_len), 140);
        assert_eq!(Runs::decode(table, &f, 100, 140).unwrap(), r);
        let mut bad = table.to_vec();
        bad[3] ^= 1;
        assert!(Runs::decode(&bad, &f, 100, 140).is_err());
        let mut bad = footer.to_vec();
        bad[9] ^= 1;
        assert!(Footer::decode(&bad, file_len).is_err());
        assert!(
            Footer::decode(footer, 80).is_err(),
            "a table longer than the file"
        );
    }

    #[test]
    fn tombstones_round_trip_and_name_only_holes() {
        let t = |lsn, crc| Tombstone { lsn, crc };
        let r = runs().with_tombstones(vec![t(160, 7), t(200, 9)]).unwrap();
        let bytes = r.encode();
        let file_len = 140 + bytes.len() as u64;
        let (table, footer) = bytes.split_at(bytes.len() - FOOTER_LEN);
        let f = Footer::decode(footer, file_len).unwrap();
        assert_eq!((f.runs, f.tombstones), (2, 2));
        assert_eq!(f.records_end(file_len), 140);
        let back = Runs::decode(table, &f, 100, 140).unwrap();
        assert_eq!(back, r);
        assert!(back.left_out(160, 7) && back.left_out(200, 9));
        assert!(!back.left_out(160, 8) && !back.left_out(170, 7));
        // Where a run keeps the bytes, out of order, or outside the segment: refused.
        assert!(runs().with_tombstones(vec![t(120, 1)]).is_err());
        assert!(runs().with_tombstones(vec![t(200, 1), t(160, 1)]).is_err());
        assert!(runs().with_tombstones(vec![t(340, 1)]).is_err());
        assert!(runs().with_tombstones(vec![t(90, 1)]).is_err());
    }

    /// This code writes narrow runs (12 bytes); a wide table (16 bytes: versions 4, 5, 7)
    /// reads as the same runs; narrow lengths that do not end where the records do are
    /// refused.
    #[test]
    fn narrow_tables_are_written_and_wide_ones_still_read() {
        let r = runs();
        let narrow = r.encode();
        let f = Footer::decode(&narrow[narrow.len() - FOOTER_LEN..], 1 << 20).unwrap();
        assert_eq!(f.table, RunTable::Narrow);
        assert_eq!(narrow.len(), 2 * NARROW_RUN_LEN + FOOTER_LEN);
        let mut wide = Vec::new();
        for run in r.runs() {
            wide.extend_from_slice(&run.lsn.to_le_bytes());
            wide.extend_from_slice(&run.offset.to_le_bytes());
        }
        let wf = Footer {
            runs_crc: crc32fast::hash(&wide),
            table: RunTable::Wide,
            ..f
        };
        let mut written = wide.clone();
        written.extend_from_slice(&wf.encode());
        assert_eq!(
            r.encode_as(RunTable::Wide),
            written,
            "a wide table as it was written"
        );
        let file_len = 140 + wide.len() as u64 + FOOTER_LEN as u64;
        let back = Footer::decode(&wf.encode(), file_len).unwrap();
        assert_eq!(back, wf);
        assert_eq!(back.records_end(file_len), 140);
        assert_eq!(Runs::decode(&wide, &back, 100, 140).unwrap(), r);
        // A narrow table whose last length overshoots the records (checksum made to match).
        let mut table = narrow[..narrow.len() - FOOTER_LEN].to_vec();
        table[2 * NARROW_RUN_LEN - 4] += 1;
        let bad = Footer {
            runs_crc: crc32fast::hash(&table),
            ..f
        };
        assert!(Runs::decode(&table, &bad, 100, 140).is_err());
    }

    #[test]
    fn a_version_4_footer_reads_as_one_without_tombstones() {
        // Version 4 wrote the run count as a u64: its high half is the tombstone count now.
        let r = runs();
        let bytes = r.encode();
        let footer = &bytes[bytes.len() - FOOTER_LEN..];
        assert_eq!(&footer[16..24], &2u64.to_le_bytes());
    }

    #[test]
    fn inconsistent_tables_are_refused() {
        let run = |lsn, offset| Run { lsn, offset };
        assert!(Runs::new(vec![run(100, 41)], 100, 60, 200).is_err());
        assert!(Runs::new(vec![run(100, 40), run(110, 60)], 100, 80, 200).is_err());
        assert!(Runs::new(vec![run(100, 40)], 100, 200, 150).is_err());
        assert!(Runs::new(vec![run(90, 40)], 100, 60, 200).is_err());
        assert!(Runs::new(vec![], 100, 40, 100).is_ok());
        assert!(Runs::new(vec![], 100, 41, 100).is_err());
    }

    proptest::proptest! {
        /// The one-pass check refuses a tombstone exactly where a run keeps the byte (the
        /// lookup it replaced, `offset_of`).
        #[test]
        fn a_tombstone_is_refused_exactly_where_a_run_keeps_bytes(
            shape in proptest::collection::vec((1u64..50, 1u64..50), 1..8),
            picks in proptest::collection::vec(proptest::prelude::any::<u16>(), 0..20),
        ) {
            let first = 100;
            let (mut lsn, mut offset, mut list) = (first, 40, Vec::new());
            for (hole, len) in &shape {
                lsn += hole;
                list.push(Run { lsn, offset });
                lsn += len;
                offset += len;
            }
            let runs = Runs::new(list, first, offset, lsn).unwrap();
            let mut at: Vec<u64> = picks.iter().map(|p| first + u64::from(*p) % (lsn - first)).collect();
            at.sort_unstable();
            at.dedup();
            let expected = at.iter().all(|&l| runs.offset_of(l).is_none());
            let tombstones = at.iter().map(|&l| Tombstone { lsn: l, crc: 0 }).collect();
            proptest::prop_assert_eq!(runs.clone().with_tombstones(tombstones).is_ok(), expected);
        }
    }
}
