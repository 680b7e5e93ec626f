//! Body layout 4's index (`docs/FORMAT.md` §5.2): the slots in **pages** of up to
//! [`PAGE_MAX`], each page in the pages region of any file of the chain, named by a **page
//! table** the newest file holds (in the part its header's CRC covers: each page's first id
//! hash, first slot, file, place, slot count and CRC). A delta rewrites the pages a changed
//! session falls in and names the others where they are, so its index costs what changed
//! plus the table (40 bytes per page), not every slot.

use super::indexed::{IndexShape, Regions, SLOT_LEN, Slot};
use crate::codec::reader::{ByteReader, Decoded};

/// Bytes of one page reference in the table.
pub const PAGE_REF_LEN: usize = 40;
/// Slots a writer puts in a page it packs (a full checkpoint's, a split's).
pub const PAGE_FILL: usize = 32;
/// The most slots a writer leaves in one page: a page that grows past it is split.
pub const PAGE_MAX: usize = 64;

/// Where one page of slots is, and what its first slot's key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRef {
    /// The id hash of its first slot.
    pub first_hash: u64,
    /// The index (in the whole index) of its first slot.
    pub first_slot: u64,
    /// The checkpoint file of the chain holding it.
    pub generation: u64,
    /// Its first byte, from the start of that file's pages region.
    pub at: u64,
    /// Slots in it (at least one).
    pub count: u32,
    /// CRC-32 of its `count` × 64 bytes.
    pub crc: u32,
}

impl PageRef {
    pub(super) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_hash.to_le_bytes());
        out.extend_from_slice(&self.first_slot.to_le_bytes());
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.at.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    fn decode(bytes: &[u8]) -> Decoded<PageRef> {
        let mut c = ByteReader::new(bytes);
        let page = PageRef {
            first_hash: c.u64("page first hash")?,
            first_slot: c.u64("page first slot")?,
            generation: c.u64("page file")?,
            at: c.u64("page offset")?,
            count: c.u32("page slot count")?,
            crc: c.u32("page CRC")?,
        };
        c.finish(page)
    }

    /// The index just past its last slot.
    pub fn end_slot(&self) -> u64 {
        self.first_slot.saturating_add(u64::from(self.count))
    }

    /// Whether slot `i` of the index is in it.
    pub fn holds(&self, i: usize) -> bool {
        (self.first_slot..self.end_slot()).contains(&(i as u64))
    }
}

/// Slot `k` of a page's bytes (already checked by [`Regions::page_bytes`]).
///
/// # Errors
/// `k` past the page.
pub fn page_slot(page: &[u8], k: usize) -> Decoded<Slot> {
    let at = k.checked_mul(SLOT_LEN).ok_or("slot in page")?;
    Slot::decode(page.get(at..at + SLOT_LEN).ok_or("slot past its page")?)
}

impl Regions {
    /// Entry `p` of a layout-4 body's page table.
    ///
    /// # Errors
    /// A body of layout 3, or `p` past the table.
    pub fn page(&self, body: &[u8], p: usize) -> Decoded<PageRef> {
        if self.shape != IndexShape::Pages || p >= self.blocks {
            return Err("page past the table");
        }
        let at = self.table_start + p * PAGE_REF_LEN;
        PageRef::decode(
            body.get(at..at + PAGE_REF_LEN)
                .ok_or("page past the body")?,
        )
    }

    /// Checks that the page table describes one index: pages of at least one slot, each
    /// starting where the one before ends, first hashes in order, `slots` in all. The table
    /// is in the part the header's CRC covers; this catches a writer's mistake, not damage.
    ///
    /// # Errors
    /// The first page that does not follow.
    pub fn check_pages(&self, body: &[u8]) -> Decoded<()> {
        if self.shape != IndexShape::Pages {
            return Ok(());
        }
        let (mut next, mut hash) = (0u64, 0u64);
        for p in 0..self.blocks {
            let page = self.page(body, p)?;
            if page.count == 0 || page.first_slot != next || page.first_hash < hash {
                return Err("a page table out of order");
            }
            next = page.end_slot();
            hash = page.first_hash;
        }
        if next != self.slots as u64 {
            return Err("a page table of another slot count");
        }
        Ok(())
    }

    /// The page holding slot `i` (a binary search of the table by first slot).
    ///
    /// # Errors
    /// `i` past the index, or a page past the body.
    pub fn page_of_slot(&self, body: &[u8], i: usize) -> Decoded<usize> {
        if i >= self.slots {
            return Err("slot past the index");
        }
        let (mut lo, mut hi) = (0, self.blocks);
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if self.page(body, mid)?.first_slot <= i as u64 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// The page where a search for `hash` starts: the last one whose first hash is below it
    /// (or the first page). The first slot not below `hash` is in it or is the next page's
    /// first.
    ///
    /// # Errors
    /// A page past the body.
    pub fn page_for_hash(&self, body: &[u8], hash: u64) -> Decoded<usize> {
        let (mut lo, mut hi) = (0, self.blocks);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.page(body, mid)?.first_hash < hash {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo.saturating_sub(1))
    }

    /// The bytes of `page`, which this body holds (its file is `page.generation`), checked
    /// against the page's CRC.
    ///
    /// # Errors
    /// The page lies outside this body's pages region or fails its CRC.
    pub fn page_bytes<'a>(&self, body: &'a [u8], page: &PageRef) -> Decoded<&'a [u8]> {
        let bytes = usize::try_from(page.at)
            .ok()
            .and_then(|at| at.checked_add(self.slots_start))
            .and_then(|at| {
                let len = (page.count as usize).checked_mul(SLOT_LEN)?;
                Some((at, at.checked_add(len)?))
            })
            .filter(|&(_, end)| end <= self.entries_start)
            .and_then(|(at, end)| body.get(at..end))
            .ok_or("a page outside the pages region")?;
        if crc32fast::hash(bytes) != page.crc {
            return Err("an index page fails its checksum");
        }
        Ok(bytes)
    }
}
