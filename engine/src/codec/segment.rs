//! The segment file header and file names (`docs/FORMAT.md` §2).

use super::file_names::{numbered_path, parse_numbered};
use super::reader::ByteReader;

/// The segment magic: identifies a sessdb log segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"SESSDBLG";
/// The segment format version this code writes: frames of either layout (`docs/FORMAT.md`
/// §3.1). A release that reads only layout 1 refuses it rather than misread its frames.
pub const SEGMENT_FORMAT_VERSION: u16 = 6;
/// The previous segment format, read: frames of layout 1 only, and appended to in layout 1.
pub const SEGMENT_FORMAT_V3: u16 = 3;
/// The version of a segment compaction writes: the records it kept (either layout), then a
/// run table (narrow, unless a run is too long for it: the footer's magic says), a tombstone
/// table and a footer (`docs/FORMAT.md` §2.1). A release that reads only wide run tables
/// refuses it rather than take its footer for damage.
pub const SEGMENT_COMPACTED_VERSION: u16 = 8;
/// The previous compacted format, read: as version 8, its run table wide.
pub const SEGMENT_COMPACTED_V7: u16 = 7;
/// An older compacted format, read: as version 7, frames of layout 1 only.
pub const SEGMENT_COMPACTED_V5: u16 = 5;
/// The first compacted layout: no tombstones (its footer reads as version 5's with none).
pub const SEGMENT_COMPACTED_V4: u16 = 4;
/// Bytes in a segment header.
pub const SEGMENT_HEADER_LEN: usize = 40;
/// Offset of the format version (u16).
pub const OFF_VERSION: usize = 8;
/// Offset of the header length (u16).
pub const OFF_HEADER_LEN: usize = OFF_VERSION + 2;
/// Offset of a reserved u32 (zero).
pub const OFF_RESERVED: usize = OFF_HEADER_LEN + 2;
/// Offset of the first LSN (u64): the segment id.
pub const OFF_FIRST_LSN: usize = OFF_RESERVED + 4;
/// Offset of the creation time (i64, Unix epoch ms).
pub const OFF_CREATED: usize = OFF_FIRST_LSN + 8;
/// Offset of a reserved u32 (zero).
pub const OFF_RESERVED2: usize = OFF_CREATED + 8;
/// Offset of the CRC-32 of bytes `0..36` (u32).
pub const OFF_HEADER_CRC: usize = OFF_RESERVED2 + 4;
const _: () = assert!(OFF_HEADER_CRC + 4 == SEGMENT_HEADER_LEN);
/// The header length as its `u16` field holds it.
const HEADER_LEN_FIELD: u16 = 40;
const _: () = assert!(HEADER_LEN_FIELD as usize == SEGMENT_HEADER_LEN);

/// A decoded segment header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// The LSN of the segment's first record byte; also its id and file name.
    pub first_lsn: u64,
    /// Creation time, Unix epoch milliseconds.
    pub created_ms: i64,
    /// Written by compaction: a run table maps its LSNs (version 4, 5, 7 or 8).
    pub compacted: bool,
    /// The format version its header names.
    pub version: u16,
}

pub use crate::corruption::SegmentHeaderError;

impl SegmentHeader {
    /// The header this code writes: format 6, or 7 for a segment compaction writes.
    pub fn new(first_lsn: u64, created_ms: i64, compacted: bool) -> Self {
        Self {
            first_lsn,
            created_ms,
            compacted,
            version: if compacted {
                SEGMENT_COMPACTED_VERSION
            } else {
                SEGMENT_FORMAT_VERSION
            },
        }
    }

    /// Whether frames of layout 2 may be appended to it (formats 6 and 7): a release that
    /// reads formats 3 and 5 only would take them for damage.
    pub fn split_frames(&self) -> bool {
        matches!(
            self.version,
            SEGMENT_FORMAT_VERSION | SEGMENT_COMPACTED_VERSION | SEGMENT_COMPACTED_V7
        )
    }

    /// The layout of the frames appended to a segment with this header (`split_frames`).
    pub fn frame_layout(&self) -> super::frame::FrameLayout {
        if self.split_frames() {
            super::frame::FrameLayout::Split
        } else {
            super::frame::FrameLayout::Whole
        }
    }

    /// The 40 header bytes.
    pub fn encode(&self) -> [u8; SEGMENT_HEADER_LEN] {
        let mut v = Vec::with_capacity(SEGMENT_HEADER_LEN);
        v.extend_from_slice(&SEGMENT_MAGIC);
        v.extend_from_slice(&self.version.to_le_bytes());
        v.extend_from_slice(&HEADER_LEN_FIELD.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&self.first_lsn.to_le_bytes());
        v.extend_from_slice(&self.created_ms.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        let crc = crc32fast::hash(&v);
        v.extend_from_slice(&crc.to_le_bytes());
        let mut b = [0u8; SEGMENT_HEADER_LEN];
        b.copy_from_slice(&v);
        b
    }

    /// Decodes and checks a header.
    ///
    /// # Errors
    /// What is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<Self, SegmentHeaderError> {
        let b = bytes
            .get(..SEGMENT_HEADER_LEN)
            .ok_or(SegmentHeaderError::Short)?;
        let (covered, crc) = b.split_at(OFF_HEADER_CRC);
        let mut c = ByteReader::new(covered);
        let short = |_| SegmentHeaderError::Short;
        if c.take(SEGMENT_MAGIC.len(), "magic").map_err(short)? != SEGMENT_MAGIC {
            return Err(SegmentHeaderError::BadMagic);
        }
        if ByteReader::new(crc).u32("crc").map_err(short)? != crc32fast::hash(covered) {
            return Err(SegmentHeaderError::BadChecksum);
        }
        let version = c.u16("version").map_err(short)?;
        let compacted = matches!(
            version,
            SEGMENT_COMPACTED_VERSION
                | SEGMENT_COMPACTED_V7
                | SEGMENT_COMPACTED_V5
                | SEGMENT_COMPACTED_V4
        );
        if version != SEGMENT_FORMAT_VERSION && version != SEGMENT_FORMAT_V3 && !compacted {
            return Err(SegmentHeaderError::UnsupportedVersion(version));
        }
        c.u16("header length").map_err(short)?;
        c.u32("reserved").map_err(short)?;
        Ok(Self {
            first_lsn: c.u64("first LSN").map_err(short)?,
            created_ms: c.i64("created").map_err(short)?,
            compacted,
            version,
        })
    }
}

/// The directory holding the segments.
pub const SEGMENTS_DIR: &str = "segments";

/// `segments/<first-lsn, 20 digits>.seg`.
pub fn segment_path(first_lsn: u64) -> String {
    numbered_path(SEGMENTS_DIR, first_lsn, "seg")
}

/// The first LSN named by a segment file name, if it is one.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    parse_numbered(name, "seg")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_damage_is_named() {
        let h = SegmentHeader::new(4096, 1_767_225_600_000, false);
        assert_eq!(h.version, 6);
        assert!(h.split_frames());
        let b = h.encode();
        assert_eq!(SegmentHeader::decode(&b), Ok(h));
        assert_eq!(
            SegmentHeader::decode(&b[..39]),
            Err(SegmentHeaderError::Short)
        );
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(
            SegmentHeader::decode(&bad),
            Err(SegmentHeaderError::BadMagic)
        );
        let mut bad = b;
        bad[OFF_FIRST_LSN] ^= 1;
        assert_eq!(
            SegmentHeader::decode(&bad),
            Err(SegmentHeaderError::BadChecksum)
        );
        let c = SegmentHeader::new(4096, 1_767_225_600_000, true);
        assert_eq!(c.version, 8);
        assert_eq!(SegmentHeader::decode(&c.encode()), Ok(c));
        let v7 = SegmentHeader { version: 7, ..c };
        assert_eq!(SegmentHeader::decode(&v7.encode()), Ok(v7));
        assert!(v7.split_frames());
        for (version, compacted) in [(3, false), (4, true), (5, true)] {
            let old = SegmentHeader {
                version,
                compacted,
                ..h
            };
            assert_eq!(SegmentHeader::decode(&old.encode()), Ok(old));
            assert!(!old.split_frames(), "format {version} holds layout 1 only");
        }
        let unknown = SegmentHeader { version: 9, ..h };
        assert_eq!(
            SegmentHeader::decode(&unknown.encode()),
            Err(SegmentHeaderError::UnsupportedVersion(9))
        );
    }

    #[test]
    fn names() {
        assert_eq!(segment_path(42), "segments/00000000000000000042.seg");
        assert_eq!(parse_segment_name("00000000000000000042.seg"), Some(42));
        assert_eq!(parse_segment_name("42.seg"), None);
        assert_eq!(parse_segment_name("0000000000000000004x.seg"), None);
    }
}
