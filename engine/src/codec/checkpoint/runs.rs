//! Where a run is: the 28-byte reference an entry holds for each run of its locations
//! (layouts 3 to 5) and of its surface and turn marks (layout 5), in the runs region of a
//! file of the chain.

use crate::codec::reader::{ByteReader, Decoded};

/// Bytes of one run reference in an entry.
pub const RUN_REF_LEN: usize = 28;

/// Where one run of locations is: in the runs region of a file of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRef {
    /// The checkpoint file holding it.
    pub generation: u64,
    /// Its first byte, from the start of that file's runs region.
    pub start: u64,
    /// Locations in it (values, in an array's run: layout 5).
    pub count: u64,
    /// CRC-32 of its `count` × 16 bytes (× 8 in an array's run).
    pub crc: u32,
}

impl RunRef {
    /// Its 28 bytes in an entry.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.start.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// Reads what [`RunRef::encode`] wrote.
    pub(crate) fn read(c: &mut ByteReader<'_>) -> Decoded<RunRef> {
        Ok(RunRef {
            generation: c.u64("run generation")?,
            start: c.u64("run offset")?,
            count: c.u64("run count")?,
            crc: c.u32("run CRC")?,
        })
    }
}
