//! The segment file header and file names (`docs/FORMAT.md` §2).

use super::file_names::{numbered_path, parse_numbered};
use super::reader::ByteReader;

/// The segment magic: identifies a sessdb log segment.
pub const SEGMENT_MAGIC: [u8; 8] = *b"SESSDBLG";
/// The segment format version this code writes and reads.
pub const SEGMENT_FORMAT_VERSION: u16 = 3;
/// The version of a segment compaction writes: the records it kept, then a run table, a
/// tombstone table and a footer (`docs/FORMAT.md` §2.1). A reader of version 3 alone refuses it.
pub const SEGMENT_COMPACTED_VERSION: u16 = 5;
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
    /// Written by compaction: a run table maps its LSNs (version 4).
    pub compacted: bool,
}

pub use crate::corruption::SegmentHeaderError;

impl SegmentHeader {
    /// The 40 header bytes.
    pub fn encode(&self) -> [u8; SEGMENT_HEADER_LEN] {
        let mut v = Vec::with_capacity(SEGMENT_HEADER_LEN);
        v.extend_from_slice(&SEGMENT_MAGIC);
        let version = if self.compacted {
            SEGMENT_COMPACTED_VERSION
        } else {
            SEGMENT_FORMAT_VERSION
        };
        v.extend_from_slice(&version.to_le_bytes());
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
        let compacted = version == SEGMENT_COMPACTED_VERSION || version == SEGMENT_COMPACTED_V4;
        if version != SEGMENT_FORMAT_VERSION && !compacted {
            return Err(SegmentHeaderError::UnsupportedVersion(version));
        }
        c.u16("header length").map_err(short)?;
        c.u32("reserved").map_err(short)?;
        Ok(Self {
            first_lsn: c.u64("first LSN").map_err(short)?,
            created_ms: c.i64("created").map_err(short)?,
            compacted,
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
        let h = SegmentHeader {
            first_lsn: 4096,
            created_ms: 1_767_225_600_000,
            compacted: false,
        };
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
        let c = SegmentHeader {
            compacted: true,
            ..h
        };
        assert_eq!(SegmentHeader::decode(&c.encode()), Ok(c));
    }

    #[test]
    fn names() {
        assert_eq!(segment_path(42), "segments/00000000000000000042.seg");
        assert_eq!(parse_segment_name("00000000000000000042.seg"), Some(42));
        assert_eq!(parse_segment_name("42.seg"), None);
        assert_eq!(parse_segment_name("0000000000000000004x.seg"), None);
    }
}
