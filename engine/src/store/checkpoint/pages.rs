//! The index a checkpoint writes (`docs/FORMAT.md` §5.3, body layouts 4 and 5): which pages of the
//! previous index it names where they are and which it writes. A page is named as it is when
//! every slot of it is untouched and no new slot falls in its range of id hashes; otherwise
//! its untouched slots and the new ones in its range are written (split in two or more when
//! past [`PAGE_MAX`]). A delta where 1 % of the sessions changed so writes the pages they fall
//! in, not every slot.

use crate::Result;
use crate::codec::checkpoint::indexed::{IndexedWriter, Slot};
use crate::codec::checkpoint::pages::{PAGE_FILL, PAGE_MAX};
use crate::store::catalog::cold::OldPage;

/// Writes the index into `w`: the `old` pages of the previous index (in its order), merged
/// with `fresh`, the slots of the sessions written or kept since (any order). Without old
/// pages (a full checkpoint) every slot is packed into pages of [`PAGE_FILL`]. `read` reads
/// the slots of an old page (by its place in the table) that new slots are merged into.
///
/// # Errors
/// `read`'s; the inner error is the writer's (a page too large for its count field).
pub(crate) fn write_index(
    w: &mut IndexedWriter,
    old: Vec<OldPage>,
    mut fresh: Vec<Slot>,
    read: impl Fn(usize) -> Result<Vec<Slot>>,
) -> Result<std::result::Result<(), &'static str>> {
    fresh.sort_unstable_by_key(Slot::key);
    if old.is_empty() {
        return Ok(write_packed(w, &fresh));
    }
    let mut rest = &fresh[..];
    let mut old = old.into_iter().enumerate().peekable();
    while let Some((p, page)) = old.next() {
        // A new slot goes into the last page whose first hash is not above its own (the
        // first page takes those below every page).
        let mine = match old.peek() {
            Some((_, next)) => rest.partition_point(|s| s.id_hash < next.page.first_hash),
            None => rest.len(),
        };
        let (here, after) = rest.split_at(mine);
        rest = after;
        match page.kept {
            None if here.is_empty() => w.carry_page(page.page),
            kept => {
                let mut slots = match kept {
                    Some(kept) => kept,
                    // Every slot kept: read them to merge the new ones in.
                    None => read(p)?,
                };
                slots.extend_from_slice(here);
                slots.sort_unstable_by_key(Slot::key);
                let written = if slots.len() > PAGE_MAX {
                    write_packed(w, &slots)
                } else if slots.is_empty() {
                    Ok(())
                } else {
                    w.write_page(&slots)
                };
                if written.is_err() {
                    return Ok(written);
                }
            }
        }
    }
    Ok(Ok(()))
}

/// `slots` (sorted) as pages of [`PAGE_FILL`] or fewer, of even size.
fn write_packed(w: &mut IndexedWriter, slots: &[Slot]) -> std::result::Result<(), &'static str> {
    let pages = slots.len().div_ceil(PAGE_FILL);
    for p in 0..pages {
        let (from, to) = (slots.len() * p / pages, slots.len() * (p + 1) / pages);
        w.write_page(&slots[from..to])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::checkpoint::BodyLayout;
    use crate::codec::checkpoint::indexed::Regions;
    use crate::codec::checkpoint::pages::{PageRef, page_slot};
    use proptest::prelude::*;

    fn slot(id_hash: u64, generation: u64, entry_at: u64) -> Slot {
        Slot {
            id_hash,
            generation,
            entry_at,
            entry_len: 1,
            entry_crc: 0,
            created_at: 0,
            last_time: None,
            next_seq: 0,
            parent_hash: 0,
        }
    }

    proptest! {
        /// The index written from old pages (some slots taken) and fresh slots holds exactly
        /// the untaken old slots and the fresh ones, in order of id hash, in pages of 1 to
        /// PAGE_MAX slots; every old page with nothing taken and nothing new in its range is
        /// named where it is.
        #[test]
        fn the_written_index_is_the_kept_slots_and_the_new_ones(
            hashes in proptest::collection::vec(0u64..2000, 0..300),
            sizes in proptest::collection::vec(1usize..=PAGE_MAX, 1..40),
            taken in proptest::collection::vec(any::<bool>(), 300),
            fresh in proptest::collection::vec(0u64..2000, 0..120),
        ) {
            let mut olds: Vec<Slot> = hashes.iter().enumerate().map(|(k, &h)| slot(h, 1, k as u64)).collect();
            olds.sort_unstable_by_key(Slot::key);
            // The old index in pages of the sizes given (the last takes the rest).
            let mut pages: Vec<Vec<Slot>> = Vec::new();
            let mut rest = &olds[..];
            for &n in &sizes {
                if rest.is_empty() { break; }
                let (page, after) = rest.split_at(n.min(rest.len()));
                pages.push(page.to_vec());
                rest = after;
            }
            if !rest.is_empty() {
                for chunk in rest.chunks(PAGE_MAX) { pages.push(chunk.to_vec()); }
            }
            let mut expected = Vec::new();
            let mut first = 0u64;
            let old: Vec<OldPage> = pages.iter().enumerate().map(|(p, slots)| {
                let is_taken = |k: usize| taken[(first as usize + k) % taken.len()];
                let kept_slots: Vec<Slot> = slots.iter().enumerate().filter(|(k, _)| !is_taken(*k)).map(|(_, s)| *s).collect();
                expected.extend_from_slice(&kept_slots);
                let page = PageRef {
                    first_hash: slots[0].id_hash, first_slot: first, generation: 1,
                    at: p as u64, count: slots.len() as u32, crc: 0,
                };
                first += slots.len() as u64;
                OldPage { page, kept: (kept_slots.len() < slots.len()).then_some(kept_slots) }
            }).collect();
            let fresh: Vec<Slot> = fresh.iter().enumerate().map(|(k, &h)| slot(h, 2, k as u64)).collect();
            expected.extend_from_slice(&fresh);
            expected.sort_unstable_by_key(Slot::key);
            let whole: Vec<bool> = old.iter().map(|o| o.kept.is_none()).collect();
            let mut w = IndexedWriter::new(3);
            write_index(&mut w, old, fresh.clone(), |p| Ok(pages[p].clone())).unwrap().unwrap();
            let body = w.finish().unwrap();
            let r = Regions::of(&body, BodyLayout::CURRENT).unwrap();
            r.check_pages(&body).unwrap();
            let mut got = Vec::new();
            let mut carried = Vec::new();
            for p in 0..r.blocks {
                let page = r.page(&body, p).unwrap();
                prop_assert!((1..=PAGE_MAX as u32).contains(&page.count));
                if page.generation == 1 {
                    carried.push(page.at as usize);
                    got.extend_from_slice(&pages[page.at as usize]);
                } else {
                    let bytes = r.page_bytes(&body, &page).unwrap();
                    got.extend((0..page.count as usize).map(|k| page_slot(bytes, k).unwrap()));
                }
            }
            prop_assert!(got.windows(2).all(|w| w[0].id_hash <= w[1].id_hash), "in order of id hash");
            let mut sorted = got.clone();
            sorted.sort_unstable_by_key(Slot::key);
            prop_assert_eq!(sorted, expected);
            // A carried page is one with nothing taken and no new slot in its range.
            for (p, slots) in pages.iter().enumerate() {
                let next = pages.get(p + 1).map_or(u64::MAX, |n| n[0].id_hash);
                let lower = if p == 0 { 0 } else { slots[0].id_hash };
                let untouched = whole[p]
                    && !fresh.iter().any(|s| (lower..next).contains(&s.id_hash) || (p == 0 && s.id_hash < slots[0].id_hash));
                prop_assert_eq!(carried.contains(&p), untouched, "page {}", p);
            }
        }
    }
}
