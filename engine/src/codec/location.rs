//! Where one event's bytes are in the log: the resident index's entry and the raw element of
//! the checkpoint's location arrays.

/// Where one event's bytes are: the record's LSN and the event encoding inside its payload.
/// 16 bytes: the resident index costs this per event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventLoc {
    /// LSN of the record's frame.
    pub lsn: u64,
    /// Offset of the event encoding within the record payload.
    pub offset: u32,
    /// Length of the event encoding.
    pub len: u32,
}

const _: () = assert!(std::mem::size_of::<EventLoc>() == 16);

impl EventLoc {
    /// Bytes of one encoded location.
    pub const ENCODED_LEN: usize = 16;

    /// The file offset of the event's bytes in the segment whose first LSN is
    /// `segment_first_lsn`: past the segment header to the record's frame, then past the frame
    /// header to the event inside the payload (`docs/FORMAT.md` §2–§4).
    pub fn file_offset(&self, segment_first_lsn: u64) -> u64 {
        super::segment::SEGMENT_HEADER_LEN as u64
            + self.lsn.saturating_sub(segment_first_lsn)
            + super::frame::FRAME_HEADER_LEN as u64
            + u64::from(self.offset)
    }

    /// `lsn` (u64), `offset` (u32), `len` (u32), little-endian.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.lsn.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
    }

    /// The location in 16 encoded bytes.
    pub fn decode(b: &[u8; Self::ENCODED_LEN]) -> Self {
        let [
            l0,
            l1,
            l2,
            l3,
            l4,
            l5,
            l6,
            l7,
            o0,
            o1,
            o2,
            o3,
            n0,
            n1,
            n2,
            n3,
        ] = *b;
        Self {
            lsn: u64::from_le_bytes([l0, l1, l2, l3, l4, l5, l6, l7]),
            offset: u32::from_le_bytes([o0, o1, o2, o3]),
            len: u32::from_le_bytes([n0, n1, n2, n3]),
        }
    }
}
