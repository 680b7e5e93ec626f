//! The index of body layouts 4 and 5 (`docs/FORMAT.md` §5.3): the slots in **pages** of up to
//! [`PAGE_MAX`], each page in the pages region of any file of the chain, named by a **page
//! table** the newest file holds (in the part its header's CRC covers: each page's first id
//! hash, first slot, file, place, slot count and CRC). A delta rewrites the pages a changed
//! session falls in and names the others where they are, so its index costs what changed
//! plus the table (40 bytes per page), not every slot.

use super::indexed::{IndexShape, Regions, SLOT_LEN};
pub use super::indexed::{PAGE_REF_LEN, PageRef, page_slot};
use crate::codec::reader::Decoded;

/// Slots a writer puts in a page it packs (a full checkpoint's, a split's).
pub const PAGE_FILL: usize = 32;
/// The most slots a writer leaves in one page: a page that grows past it is split.
pub const PAGE_MAX: usize = 64;

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
