//! Body layouts 3 and 4 (`docs/FORMAT.md` §5.2): an **index** by session id, then the
//! **entries**, then the **location runs**. The header's body CRC covers the index's prefix
//! and its block CRCs (3) or page table (4); each block or page, entry and run carries its own
//! CRC, checked when it is read. An index is complete — every live session has a slot — and a
//! slot names the file of the chain that holds its entry, so a checkpoint writes the sessions
//! that changed plus the index, and an open reads the index's prefix alone. Layout 4 puts the
//! slots in pages any file of the chain may hold (`pages.rs`), so a delta rewrites only the
//! pages that changed; layout 3 (read, no longer written) has every slot in the newest file.

use super::arrays::{
    ArrayOut, ArrayRef, ArraySource, ArraysOut, EntryArrays, INLINE_MAX, VALUE_LEN, decode_values,
    put_array, read_array, skip_array,
};
use super::{
    BodyLayout, Head, LocRun, SessionRef, TOO_LARGE, put_head, put_repair, read_head, read_repair,
    read_state,
};
use crate::codec::location::EventLoc;
use crate::codec::reader::{ByteReader, Decoded};
use crate::model::SessionState;

/// Bytes of one index slot.
pub const SLOT_LEN: usize = 64;
pub use super::runs::{RUN_REF_LEN, RunRef};
/// Layout 3's prefix before the block CRCs: the checked length, the slot count, the entries'
/// length.
const PREFIX_LEN: usize = 24;
/// Layout 4's prefix before the page table: the checked length, the slot count, the page
/// count, the pages region's length, the entries region's length.
const PAGED_PREFIX_LEN: usize = 40;
/// Slots per block of the index: each block has its own CRC, checked when a slot of it is
/// first read, so an open reads no slot.
pub const SLOTS_PER_BLOCK: usize = 64;
/// Bytes of one page reference in layout 4's page table (`pages.rs`).
pub const PAGE_REF_LEN: usize = 40;
/// `last time` of a slot whose session has no events.
const NO_TIME: i64 = i64::MIN;

/// The index's key for a session id: 64-bit FNV-1a of its UTF-8 bytes, or 1 where that is 0
/// (0 stands for "no parent" in a slot). Specified (not the process's hasher) because it is on
/// disk.
pub fn id_hash(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h.max(1)
}

/// The first of `slots` slots (read through `slot`) whose id hash is not below `hash`: a
/// binary search, the index being sorted by it.
///
/// # Errors
/// The first error `slot` gives.
pub fn lower_bound<E>(
    slots: usize,
    hash: u64,
    slot: impl Fn(usize) -> Result<Slot, E>,
) -> Result<usize, E> {
    let (mut lo, mut hi) = (0, slots);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if slot(mid)?.id_hash < hash {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// One session's slot in an index: where its entry is, and what a listing orders by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// [`id_hash`] of the session id.
    pub id_hash: u64,
    /// The checkpoint file (of this chain) whose entries region holds the entry.
    pub generation: u64,
    /// The entry's offset from the start of that file's entries region.
    pub entry_at: u64,
    /// The entry's length.
    pub entry_len: u32,
    /// CRC-32 of the entry's bytes.
    pub entry_crc: u32,
    /// The header's `createdAt`.
    pub created_at: i64,
    /// The last event's time, if any.
    pub last_time: Option<i64>,
    /// The number of events.
    pub next_seq: u64,
    /// [`id_hash`] of a fork's parent, 0 for a session that is not a fork: a deletion finds
    /// the forks that share the deleted session's locations by it.
    pub parent_hash: u64,
}

impl Slot {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.id_hash.to_le_bytes());
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.entry_at.to_le_bytes());
        out.extend_from_slice(&self.entry_len.to_le_bytes());
        out.extend_from_slice(&self.entry_crc.to_le_bytes());
        out.extend_from_slice(&self.created_at.to_le_bytes());
        out.extend_from_slice(&self.last_time.unwrap_or(NO_TIME).to_le_bytes());
        out.extend_from_slice(&self.next_seq.to_le_bytes());
        out.extend_from_slice(&self.parent_hash.to_le_bytes());
    }

    pub(super) fn decode(bytes: &[u8]) -> Decoded<Slot> {
        let mut c = ByteReader::new(bytes);
        let slot = Slot {
            id_hash: c.u64("slot id hash")?,
            generation: c.u64("slot generation")?,
            entry_at: c.u64("slot entry offset")?,
            entry_len: c.u32("slot entry length")?,
            entry_crc: c.u32("slot entry CRC")?,
            created_at: c.i64("slot created at")?,
            last_time: Some(c.i64("slot last time")?).filter(|&t| t != NO_TIME),
            next_seq: c.u64("slot next seq")?,
            parent_hash: c.u64("slot parent hash")?,
        };
        c.finish(slot)
    }

    /// The key the index is sorted by.
    pub fn key(&self) -> (u64, u64, u64) {
        (self.id_hash, self.generation, self.entry_at)
    }
}

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
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_hash.to_le_bytes());
        out.extend_from_slice(&self.first_slot.to_le_bytes());
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.at.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    pub(super) fn decode(bytes: &[u8]) -> Decoded<PageRef> {
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

/// How an entry holds its surface and turn marks, by its file's body layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryForm {
    /// In the entry, each as a count and its values (layouts 3 and 4).
    Inline,
    /// In runs the entry names, as its locations are (layout 5, `arrays.rs`).
    Runs,
}

/// How an index's slots are placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexShape {
    /// Layout 3: every slot in this body, in blocks of [`SLOTS_PER_BLOCK`] whose CRCs precede
    /// them.
    Blocks,
    /// Layout 4: pages of slots in the pages regions of the chain's files, named by this
    /// body's page table (`pages.rs`).
    Pages,
}

/// The regions of a layout-3 or layout-4 body, from its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// How the slots are placed.
    pub shape: IndexShape,
    /// How its entries hold their arrays.
    pub entries: EntryForm,
    /// Slots in the index.
    pub slots: usize,
    /// Blocks of [`SLOTS_PER_BLOCK`] slots (layout 3; the last one may hold fewer), or pages
    /// in the page table (layout 4).
    pub blocks: usize,
    /// Where the block CRCs (3) or the page table (4) begin, from the start of the body.
    pub table_start: usize,
    /// Where this body's slots begin (3: the index's, after the block CRCs; 4: the pages this
    /// file holds, after the page table).
    pub slots_start: usize,
    /// Where the entries begin, from the start of the body.
    pub entries_start: usize,
    /// Where the runs begin, from the start of the body.
    pub runs_start: usize,
}

impl Regions {
    /// Reads a body's prefix and checks that the regions lie in its `body.len()` bytes.
    ///
    /// # Errors
    /// A prefix that does not fit the body, or a layout without an index.
    pub fn of(body: &[u8], layout: BodyLayout) -> Decoded<Regions> {
        Self::of_prefix(body, body.len(), layout)
    }

    /// As [`Regions::of`], from the body's first bytes alone (at least [`Regions::PREFIX_MAX`]
    /// of them, or the whole body when shorter) and its length: what an open checks of an
    /// earlier file of a chain without mapping it.
    ///
    /// # Errors
    /// As [`Regions::of`].
    pub fn of_prefix(prefix: &[u8], body_len: usize, layout: BodyLayout) -> Decoded<Regions> {
        match layout {
            BodyLayout::Indexed => Self::of_blocks(prefix, body_len),
            BodyLayout::Paged => Self::of_pages(prefix, body_len, EntryForm::Inline),
            BodyLayout::Arrays => Self::of_pages(prefix, body_len, EntryForm::Runs),
            BodyLayout::Table => Err("a layout without an index"),
        }
    }

    /// The most bytes [`Regions::of_prefix`] reads.
    pub const PREFIX_MAX: usize = if PREFIX_LEN > PAGED_PREFIX_LEN {
        PREFIX_LEN
    } else {
        PAGED_PREFIX_LEN
    };

    fn of_blocks(body: &[u8], body_len: usize) -> Decoded<Regions> {
        let mut c = ByteReader::new(body);
        let checked = c.u64("index length")?;
        let slots = c.u64("slot count")?;
        let entries_len = c.u64("entries length")?;
        let slots = usize::try_from(slots).map_err(|_| "slot count")?;
        let blocks = slots.div_ceil(SLOTS_PER_BLOCK);
        let slots_start = PREFIX_LEN + 4 * blocks;
        if checked.checked_add(8) != Some(slots_start as u64) {
            return Err("index length does not match the slot count");
        }
        let index_len = slots
            .checked_mul(SLOT_LEN)
            .and_then(|n| n.checked_add(slots_start))
            .ok_or("slot count")?;
        let runs_start = usize::try_from(entries_len)
            .ok()
            .and_then(|n| n.checked_add(index_len))
            .filter(|&end| end <= body_len)
            .ok_or("entries past the body")?;
        Ok(Regions {
            shape: IndexShape::Blocks,
            entries: EntryForm::Inline,
            slots,
            blocks,
            table_start: PREFIX_LEN,
            slots_start,
            entries_start: index_len,
            runs_start,
        })
    }

    fn of_pages(body: &[u8], body_len: usize, entries: EntryForm) -> Decoded<Regions> {
        let mut c = ByteReader::new(body);
        let checked = c.u64("index length")?;
        let slots = c.u64("slot count")?;
        let pages = c.u64("page count")?;
        let pages_len = c.u64("pages length")?;
        let entries_len = c.u64("entries length")?;
        let slots = usize::try_from(slots).map_err(|_| "slot count")?;
        let pages = usize::try_from(pages).map_err(|_| "page count")?;
        let slots_start = pages
            .checked_mul(PAGE_REF_LEN)
            .and_then(|n| n.checked_add(PAGED_PREFIX_LEN))
            .ok_or("page count")?;
        if checked.checked_add(8) != Some(slots_start as u64) {
            return Err("index length does not match the page count");
        }
        if pages_len % SLOT_LEN as u64 != 0 {
            return Err("pages length");
        }
        let entries_start = usize::try_from(pages_len)
            .ok()
            .and_then(|n| n.checked_add(slots_start))
            .ok_or("pages length")?;
        let runs_start = usize::try_from(entries_len)
            .ok()
            .and_then(|n| n.checked_add(entries_start))
            .filter(|&end| end <= body_len)
            .ok_or("entries past the body")?;
        Ok(Regions {
            shape: IndexShape::Pages,
            entries,
            slots,
            blocks: pages,
            table_start: PAGED_PREFIX_LEN,
            slots_start,
            entries_start,
            runs_start,
        })
    }

    /// The bytes of block `b`'s slots.
    fn block<'a>(&self, body: &'a [u8], b: usize) -> Decoded<&'a [u8]> {
        let first = b.checked_mul(SLOTS_PER_BLOCK).ok_or("block")?;
        let end = first.saturating_add(SLOTS_PER_BLOCK).min(self.slots);
        if first >= end {
            return Err("block past the index");
        }
        body.get(self.slots_start + first * SLOT_LEN..self.slots_start + end * SLOT_LEN)
            .ok_or("block past the body")
    }

    /// Checks block `b` of the index against its CRC (in the part the header's CRC covers).
    ///
    /// # Errors
    /// The block is outside the index or fails its CRC.
    pub fn check_block(&self, body: &[u8], b: usize) -> Decoded<()> {
        if self.shape != IndexShape::Blocks {
            return Err("a paged index has no blocks");
        }
        let at = PREFIX_LEN + 4 * b;
        let want = body
            .get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map(u32::from_le_bytes)
            .ok_or("block CRC past the index")?;
        if crc32fast::hash(self.block(body, b)?) != want {
            return Err("an index block fails its checksum");
        }
        Ok(())
    }

    /// Slot `i`, its block checked first (stateless: a reader that keeps which blocks it
    /// checked reads [`Regions::slot`] after its own check).
    ///
    /// # Errors
    /// As [`Regions::check_block`] and [`Regions::slot`].
    pub fn slot_checked(&self, body: &[u8], i: usize) -> Decoded<Slot> {
        self.check_block(body, i / SLOTS_PER_BLOCK)?;
        self.slot(body, i)
    }

    /// Slot `i` of a layout-3 body's index, not checked: its block's CRC is checked by
    /// [`Regions::check_block`] (or [`Regions::slot_checked`]).
    ///
    /// # Errors
    /// `i` past the index or the body.
    pub fn slot(&self, body: &[u8], i: usize) -> Decoded<Slot> {
        if i >= self.slots || self.shape != IndexShape::Blocks {
            return Err("slot past the index");
        }
        let at = self.slots_start + i * SLOT_LEN;
        Slot::decode(body.get(at..at + SLOT_LEN).ok_or("slot past the body")?)
    }

    /// The first slot of a layout-3 index whose id hash is not below `hash` (binary search:
    /// the index is sorted), each block read checked.
    ///
    /// # Errors
    /// A slot past the body, or a block read that fails its CRC.
    pub fn lower_bound(&self, body: &[u8], hash: u64) -> Decoded<usize> {
        lower_bound(self.slots, hash, |i| self.slot_checked(body, i))
    }

    /// The bytes of an entry of this file, checked against the slot's CRC.
    ///
    /// # Errors
    /// The entry lies outside the entries region or fails its CRC.
    pub fn entry<'a>(&self, body: &'a [u8], slot: &Slot) -> Decoded<&'a [u8]> {
        let bytes = self.entry_place(body, slot)?;
        if crc32fast::hash(bytes) != slot.entry_crc {
            return Err("an entry fails its checksum");
        }
        Ok(bytes)
    }

    /// The bytes of an entry of this file, within the entries region, not checked against
    /// the slot's CRC: for a reader that checked them once already (the file never changes).
    ///
    /// # Errors
    /// The entry lies outside the entries region.
    pub fn entry_place<'a>(&self, body: &'a [u8], slot: &Slot) -> Decoded<&'a [u8]> {
        usize::try_from(slot.entry_at)
            .ok()
            .and_then(|at| at.checked_add(self.entries_start))
            .and_then(|at| Some((at, at.checked_add(slot.entry_len as usize)?)))
            .filter(|&(_, end)| end <= self.runs_start)
            .and_then(|(at, end)| body.get(at..end))
            .ok_or("an entry outside the entries region")
    }

    /// The bytes of a run of this file, checked against its CRC.
    ///
    /// # Errors
    /// The run lies outside the runs region or fails its CRC.
    pub fn run<'a>(&self, body: &'a [u8], run: &RunRef) -> Decoded<&'a [u8]> {
        let (start, _) = self.run_place(run)?;
        // The same check as a layout-2 run's, at its place in this body.
        LocRun {
            start,
            count: run.count,
            crc: run.crc,
        }
        .checked(body)
    }

    /// A run's first byte from the start of the body, and its length.
    ///
    /// # Errors
    /// A run whose place does not fit in memory.
    pub fn run_place(&self, run: &RunRef) -> Decoded<(usize, usize)> {
        self.place(run, EventLoc::ENCODED_LEN)
    }

    fn place(&self, run: &RunRef, unit: usize) -> Decoded<(usize, usize)> {
        let at = usize::try_from(run.start)
            .ok()
            .and_then(|s| s.checked_add(self.runs_start))
            .ok_or("run offset")?;
        let len = usize::try_from(run.count)
            .ok()
            .and_then(|n| n.checked_mul(unit))
            .ok_or("run count")?;
        Ok((at, len))
    }

    /// The bytes of an array's run of this file (layout 5: `count` values of 8 bytes), within
    /// the runs region and checked against its CRC.
    ///
    /// # Errors
    /// The run lies outside the runs region or fails its CRC.
    pub fn array_run<'a>(&self, body: &'a [u8], run: &RunRef) -> Decoded<&'a [u8]> {
        let (at, len) = self.place(run, VALUE_LEN)?;
        let bytes = at
            .checked_add(len)
            .and_then(|end| body.get(at..end))
            .ok_or("an array run past the body")?;
        if crc32fast::hash(bytes) != run.crc {
            return Err("an array run fails its checksum");
        }
        Ok(bytes)
    }
}

/// One entry, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The session id.
    pub id: String,
    /// The header as its DSH JSON line.
    pub header_json: Vec<u8>,
    /// LSN of the record that created the session.
    pub created_lsn: u64,
    /// The parent whose first `n` locations a fork shares.
    pub parent: Option<(String, u64)>,
    /// The index of the first location the runs hold (a fork's inherited count, else 0).
    pub loc_base: u64,
    /// The runs holding locations `loc_base..`, in order.
    pub runs: Vec<RunRef>,
    /// The derived state.
    pub state: SessionState,
    /// The runs holding its surface and turn marks (layout 5; `None` where they are inline).
    pub arrays: Option<EntryArrays>,
}

/// Decodes an entry's bytes (already checked against its slot) of the form its file's layout
/// gives; `run` reads an array's run (layout 5), from whichever file of the chain holds it.
///
/// # Errors
/// The first field that is short or malformed, or the first error of `run`.
pub fn decode_entry<'a>(
    form: EntryForm,
    bytes: &[u8],
    mut run: impl FnMut(&RunRef) -> Decoded<&'a [u8]>,
) -> Decoded<Entry> {
    let (loc_base, runs, core) = split_entry(bytes)?;
    let mut c = ByteReader::new(core);
    let head: Head = read_head(&mut c)?;
    let (state, arrays) = match form {
        EntryForm::Inline => (read_state(&mut c, &head)?, None),
        EntryForm::Runs => {
            let surface = read_array(&mut c, "surface")?;
            let turns = read_array(&mut c, "turn marks")?;
            let mut values = |a: &ArraySource<'_>| -> Decoded<Vec<u64>> {
                match a {
                    ArraySource::Values(v) => Ok(decode_values(&[v])),
                    ArraySource::Runs(a) => {
                        let bytes = a.runs.iter().map(&mut run).collect::<Decoded<Vec<_>>>()?;
                        Ok(decode_values(&bytes))
                    }
                }
            };
            let arrays = EntryArrays {
                surface: surface.held(),
                turns: turns.held(),
            };
            let (surface, turns) = (values(&surface)?, values(&turns)?);
            let repair = read_repair(&mut c)?;
            (head.state(surface, turns, repair), Some(arrays))
        }
    };
    c.finish(Entry {
        id: head.id,
        header_json: head.header_json,
        created_lsn: head.created_lsn,
        parent: head.parent,
        loc_base,
        runs,
        state,
        arrays,
    })
}

/// An entry's fields after its location runs, in parts: what a full checkpoint copies without
/// decoding (the head and the repair state as bytes, the arrays' values written again).
#[derive(Debug)]
pub struct CoreParts<'a> {
    /// The fields from the session id to the replace generation.
    pub head: &'a [u8],
    /// The surface.
    pub surface: ArraySource<'a>,
    /// The turn marks.
    pub turns: ArraySource<'a>,
    /// The repair state.
    pub repair: &'a [u8],
}

impl CoreParts<'_> {
    /// What the entry names of its arrays (layout 5; in layouts 3 and 4 both are inline).
    pub fn arrays(&self) -> EntryArrays {
        EntryArrays {
            surface: self.surface.held(),
            turns: self.turns.held(),
        }
    }
}

/// Splits the `core` of an entry ([`split_entry`]) of `form` into its parts.
///
/// # Errors
/// A short or malformed core.
pub fn split_core(form: EntryForm, core: &[u8]) -> Decoded<CoreParts<'_>> {
    let mut c = ByteReader::new(core);
    skip_head(&mut c)?;
    let head = core.get(..c.pos()).ok_or("entry")?;
    let (surface, turns) = match form {
        EntryForm::Inline => {
            let mut inline = |what| -> Decoded<ArraySource<'_>> {
                let n = c.u64(what)?;
                let n = c.count(n, VALUE_LEN, what)?;
                Ok(ArraySource::Values(c.take(n * VALUE_LEN, what)?))
            };
            (inline("surface")?, inline("turn marks")?)
        }
        EntryForm::Runs => (
            read_array(&mut c, "surface")?,
            read_array(&mut c, "turn marks")?,
        ),
    };
    // The rest as it is: a copy keeps its bytes (checked against the entry's CRC), as a copy
    // of a layout-4 entry kept the whole core.
    let repair = core.get(c.pos()..).ok_or("entry")?;
    Ok(CoreParts {
        head,
        surface,
        turns,
        repair,
    })
}

/// An entry's location base, its runs, and its bytes after them (what a full checkpoint copies
/// as they are).
///
/// # Errors
/// A short or malformed entry.
pub fn split_entry(bytes: &[u8]) -> Decoded<(u64, Vec<RunRef>, &[u8])> {
    let mut c = ByteReader::new(bytes);
    let loc_base = c.u64("location base")?;
    let n = c.u32("run count")?;
    let n = c.count(u64::from(n), RUN_REF_LEN, "run count")?;
    let mut runs = Vec::with_capacity(n);
    for _ in 0..n {
        runs.push(RunRef::read(&mut c)?);
    }
    let core = bytes.get(c.pos()..).ok_or("entry")?;
    Ok((loc_base, runs, core))
}

/// What a listing shows of an entry, read without building its state: the header line, the
/// created LSN, the surface's length and whether a turn is open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryRow<'a> {
    /// The header as its DSH JSON line.
    pub header_json: &'a [u8],
    /// LSN of the record that created the session.
    pub created_lsn: u64,
    /// Entries of the surface.
    pub surface_len: usize,
    /// Whether the last turn is open.
    pub turn_open: bool,
}

/// Moves `c` past an entry's fields from the session id to the replace generation (nothing
/// allocated), returning the header line and the created LSN.
fn skip_head<'a>(c: &mut ByteReader<'a>) -> Decoded<(&'a [u8], u64)> {
    c.str16_ref("session id")?;
    let header_json = c.bytes32("session header")?;
    let created_lsn = c.u64("created LSN")?;
    match c.u8("parent tag")? {
        0 => {}
        1 => {
            c.str16_ref("parent id")?;
            c.u64("inherited count")?;
        }
        _ => return Err("parent tag"),
    }
    c.u64("next seq")?;
    match c.u8("last time tag")? {
        0 => {}
        1 => {
            c.i64("last time")?;
        }
        _ => return Err("last time tag"),
    }
    c.u64("replace generation")?;
    Ok((header_json, created_lsn))
}

/// An entry's [`EntryRow`] (the surface and turn-mark arrays skipped, not read), of the form
/// its file's layout gives.
///
/// # Errors
/// A short or malformed entry.
pub fn entry_row(form: EntryForm, bytes: &[u8]) -> Decoded<EntryRow<'_>> {
    let mut c = ByteReader::new(bytes);
    skip_runs(&mut c)?;
    let (header_json, created_lsn) = skip_head(&mut c)?;
    let surface_len = match form {
        EntryForm::Inline => {
            let surface = c.u64("surface")?;
            let surface_len = c.count(surface, 8, "surface")?;
            c.take(surface_len * 8, "surface")?;
            let turns = c.u64("turn marks")?;
            let turns = c.count(turns, 8, "turn marks")?;
            c.take(turns * 8, "turn marks")?;
            surface_len
        }
        EntryForm::Runs => {
            let surface = skip_array(&mut c, "surface")?;
            skip_array(&mut c, "turn marks")?;
            usize::try_from(surface).map_err(|_| "surface")?
        }
    };
    let turn_open = match c.u8("open turn tag")? {
        0 => false,
        1 => true,
        _ => return Err("open turn tag"),
    };
    Ok(EntryRow {
        header_json,
        created_lsn,
        surface_len,
        turn_open,
    })
}

/// The session id of an entry's bytes, decoding nothing else (a hash shared by two ids is told
/// apart by it).
///
/// # Errors
/// A short or malformed entry.
pub fn entry_id(bytes: &[u8]) -> Decoded<&str> {
    let mut c = ByteReader::new(bytes);
    skip_runs(&mut c)?;
    c.str16_ref("session id")
}

/// Moves `c` past an entry's location base and runs (nothing allocated: a listing reads
/// every entry's row).
fn skip_runs(c: &mut ByteReader<'_>) -> Decoded<()> {
    let _ = c.u64("location base")?;
    let n = c.u32("run count")?;
    let n = c.count(u64::from(n), RUN_REF_LEN, "run count")?;
    c.take(n * RUN_REF_LEN, "runs")?;
    Ok(())
}

/// Test equipment: entries written and read with their arrays in the same body.
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;
    use crate::codec::checkpoint::arrays::encode_values;

    /// [`IndexedWriter::entry`] with `s.state`'s arrays written whole in this file.
    pub(crate) fn entry_whole(
        w: &mut IndexedWriter,
        s: &SessionRef<'_>,
        created_at: i64,
        earlier: &[RunRef],
        count: u64,
        pieces: &[&[u8]],
    ) -> Decoded<(Slot, Vec<RunRef>, EntryArrays)> {
        let surface = encode_values(s.state.surface.seqs());
        let turns = encode_values(s.state.turns.encoded());
        w.entry(
            s,
            created_at,
            earlier,
            count,
            pieces,
            ArraysOut {
                surface: ArrayOut {
                    earlier: &[],
                    pieces: &[&surface],
                },
                turns: ArrayOut {
                    earlier: &[],
                    pieces: &[&turns],
                },
            },
        )
    }

    /// Decodes an entry of `body` (whose regions are `regions`), its arrays' runs read from
    /// the same body.
    pub(crate) fn decode_in(regions: &Regions, body: &[u8], bytes: &[u8]) -> Decoded<Entry> {
        decode_entry(regions.entries, bytes, |run| regions.array_run(body, run))
    }
}

#[cfg(test)]
mod inline_tests {
    use super::test_support::decode_in;
    use super::*;
    use crate::codec::checkpoint::arrays::encode_values;
    use crate::model::{SurfaceManager, TurnMarks};

    /// An entry of `surface` seqs and `marks` turn marks, each after `earlier` runs (their
    /// first values, in generation 1) when given: what it names of its arrays, and its state
    /// read back (the earlier runs read as zeros).
    fn written(surface: u64, marks: u64, earlier: Option<u64>) -> (EntryArrays, SessionState) {
        let state = SessionState {
            surface: SurfaceManager::from_parts((0..surface).collect(), 0),
            turns: TurnMarks::from_encoded((0..marks).collect()),
            ..SessionState::new()
        };
        let r = SessionRef {
            id: "s",
            header_json: b"{}",
            created_lsn: 0,
            parent: None,
            loc_base: 0,
            state: &state,
        };
        let zeros = encode_values(&[0; 4]);
        let first = [RunRef {
            generation: 1,
            start: 0,
            count: earlier.unwrap_or(0),
            crc: crc32fast::hash(&zeros[..earlier.unwrap_or(0) as usize * 8]),
        }];
        let from = earlier.unwrap_or(0) as usize;
        let s_new = encode_values(&state.surface.seqs()[from..]);
        let t_new = encode_values(&state.turns.encoded()[from..]);
        let earlier: &[RunRef] = if earlier.is_some() { &first } else { &[] };
        let mut w = IndexedWriter::new(2);
        let (slot, _, arrays) = w
            .entry(
                &r,
                0,
                &[],
                0,
                &[],
                ArraysOut {
                    surface: ArrayOut {
                        earlier,
                        pieces: &[&s_new],
                    },
                    turns: ArrayOut {
                        earlier,
                        pieces: &[&t_new],
                    },
                },
            )
            .unwrap();
        let body = w.finish().unwrap();
        let regions = Regions::of(&body, BodyLayout::CURRENT).unwrap();
        let bytes = regions.entry(&body, &slot).unwrap();
        let e = decode_entry(regions.entries, bytes, |run| {
            if run.generation == 1 {
                Ok(&zeros[..run.count as usize * 8])
            } else {
                regions.array_run(&body, run)
            }
        })
        .unwrap();
        assert_eq!(e.arrays.as_ref(), Some(&arrays));
        assert_eq!(
            decode_in(&regions, &body, bytes).is_ok(),
            earlier.is_empty()
        );
        (arrays, e.state)
    }

    #[test]
    fn a_short_array_is_held_inline_and_a_long_one_or_one_after_runs_in_runs() {
        let max = INLINE_MAX;
        let (a, st) = written(max, 0, None);
        assert_eq!((a.surface.in_runs(), a.turns.in_runs()), (false, false));
        assert_eq!(st.surface.seqs().len() as u64, max);
        let (a, st) = written(max + 1, max, None);
        assert_eq!((a.surface.in_runs(), a.turns.in_runs()), (true, false));
        assert_eq!(st.surface.seqs(), &(0..=max).collect::<Vec<_>>()[..]);
        // Two values after a run of two: runs, whatever the length.
        let (a, st) = written(4, 4, Some(2));
        assert_eq!((a.surface.runs.len(), a.turns.runs.len()), (2, 2));
        assert_eq!(st.surface.seqs(), &[0, 0, 2, 3]);
        assert_eq!(st.turns.encoded(), &[0, 0, 2, 3]);
    }
}

#[cfg(test)]
mod copy_tests {
    use super::test_support::{decode_in, entry_whole};
    use super::*;
    use crate::model::{SurfaceManager, TurnMarks};

    #[test]
    fn a_copied_entry_decodes_as_the_original_with_its_locations_in_one_run() {
        // A surface past what an entry holds inline (in a run), turn marks inline.
        let state = SessionState {
            next_seq: 2,
            surface: SurfaceManager::from_parts((0..40).collect(), 3),
            turns: TurnMarks::from_encoded(vec![1]),
            ..SessionState::new()
        };
        let r = SessionRef {
            id: "s",
            header_json: b"{}",
            created_lsn: 7,
            parent: Some(("p", 2)),
            loc_base: 2,
            state: &state,
        };
        let earlier = [RunRef {
            generation: 1,
            start: 0,
            count: 0,
            crc: 0,
        }];
        let mut first = IndexedWriter::new(2);
        let (slot, _, arrays) = entry_whole(&mut first, &r, 5, &earlier, 0, &[]).unwrap();
        assert_eq!((arrays.surface.len, arrays.turns.len), (40, 1));
        assert_eq!(
            (arrays.surface.in_runs(), arrays.turns.in_runs()),
            (true, false)
        );
        let body = first.finish().unwrap();
        let regions = Regions::of(&body, BodyLayout::CURRENT).unwrap();
        let bytes = regions.entry(&body, &slot).unwrap();
        let (loc_base, runs, core) = split_entry(bytes).unwrap();
        assert_eq!((loc_base, runs.as_slice()), (2, &earlier[..]));
        let parts = split_core(regions.entries, core).unwrap();
        assert_eq!(parts.arrays(), arrays);
        fn values<'a>(regions: &Regions, body: &'a [u8], a: &ArraySource<'a>) -> Vec<&'a [u8]> {
            match a {
                ArraySource::Values(v) => vec![*v],
                ArraySource::Runs(a) => a
                    .runs
                    .iter()
                    .map(|r| regions.array_run(body, r).unwrap())
                    .collect(),
            }
        }
        let loc = [0x11u8; 16];
        let mut second = IndexedWriter::new(3);
        let moved = second
            .copy(
                &slot,
                loc_base,
                &parts,
                1,
                &[&loc],
                &values(&regions, &body, &parts.surface),
                &values(&regions, &body, &parts.turns),
            )
            .unwrap();
        let body2 = second.finish().unwrap();
        let regions2 = Regions::of(&body2, BodyLayout::CURRENT).unwrap();
        let copied = decode_in(&regions2, &body2, regions2.entry(&body2, &moved).unwrap()).unwrap();
        let original = decode_in(&regions, &body, bytes).unwrap();
        assert_eq!(copied.id, original.id);
        assert_eq!(copied.state, original.state);
        assert_eq!(copied.state, state);
        let copied_arrays = copied.arrays.unwrap();
        assert!(
            copied_arrays
                .surface
                .runs
                .iter()
                .chain(&copied_arrays.turns.runs)
                .all(|r| r.generation == 3),
            "a copy names no earlier file"
        );
        assert_eq!(copied.parent, original.parent);
        assert_eq!(copied.runs.len(), 1);
        assert_eq!(copied.runs[0].generation, 3);
        assert_eq!(regions2.run(&body2, &copied.runs[0]).unwrap(), &loc[..]);
        assert_eq!(
            (
                moved.id_hash,
                moved.created_at,
                moved.next_seq,
                moved.parent_hash
            ),
            (
                slot.id_hash,
                slot.created_at,
                slot.next_seq,
                slot.parent_hash
            )
        );
    }
}

/// Writes a layout-4 body: entries written here ([`IndexedWriter::entry`],
/// [`IndexedWriter::copy`]), then the index in order of id hash — pages carried from earlier
/// files of the chain ([`IndexedWriter::carry_page`]) and pages written here
/// ([`IndexedWriter::write_page`]) — then [`IndexedWriter::finish`].
#[derive(Debug)]
pub struct IndexedWriter {
    generation: u64,
    entries: Vec<u8>,
    runs: Vec<u8>,
    /// The page table so far.
    table: Vec<u8>,
    /// The bytes of the pages written here.
    pages: Vec<u8>,
    page_count: u64,
    slot_count: u64,
    /// An entry's fields after its runs, as they are put together (reused: no allocation per
    /// entry).
    core: Vec<u8>,
    /// The first hash of the last page named (the table is in its order).
    last_first_hash: u64,
}

impl IndexedWriter {
    /// An empty body of the checkpoint `generation`.
    pub fn new(generation: u64) -> Self {
        Self {
            generation,
            entries: Vec::new(),
            runs: Vec::new(),
            table: Vec::new(),
            pages: Vec::new(),
            page_count: 0,
            slot_count: 0,
            core: Vec::new(),
            last_first_hash: 0,
        }
    }

    /// Writes one session's entry: its locations from `s.loc_base` are the runs `earlier`
    /// (in files of the chain, this one's excepted) followed by `count` new locations given as
    /// their encoded bytes (`pieces`, concatenated, are `count` × 16 bytes), written here; its
    /// surface and turn marks are `arrays` (earlier runs, then values written here), which
    /// must hold the state's. Returns its slot, every location run it names and its arrays.
    ///
    /// # Errors
    /// A part too long for its length field, or pieces of another length than `count`.
    pub fn entry(
        &mut self,
        s: &SessionRef<'_>,
        created_at: i64,
        earlier: &[RunRef],
        count: u64,
        pieces: &[&[u8]],
        arrays: ArraysOut<'_>,
    ) -> Decoded<(Slot, Vec<RunRef>, EntryArrays)> {
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        if bytes as u64 != count.saturating_mul(EventLoc::ENCODED_LEN as u64) {
            return Err("raw locations of another length than their count");
        }
        let runs = self.with_new_run(earlier, count, pieces);
        let mut core = std::mem::take(&mut self.core);
        core.clear();
        put_head(&mut core, s)?;
        let arrays = self.put_arrays(&mut core, arrays)?;
        debug_assert_eq!(
            (arrays.surface.len, arrays.turns.len),
            (
                s.state.surface.seqs().len() as u64,
                s.state.turns.encoded().len() as u64
            ),
            "{}: the arrays written hold the state's",
            s.id
        );
        put_repair(&mut core, &s.state.repair)?;
        let slot = self.put_entry(
            Slot {
                id_hash: id_hash(s.id),
                generation: self.generation,
                entry_at: 0,
                entry_len: 0,
                entry_crc: 0,
                created_at,
                last_time: s.state.last_time,
                next_seq: s.state.next_seq,
                parent_hash: s.parent.map_or(0, |(p, _)| id_hash(p)),
            },
            s.loc_base,
            &runs,
            &core,
        );
        self.core = core;
        Ok((slot?, runs, arrays))
    }

    /// Copies an untouched session's entry from an earlier file of the chain without decoding
    /// it: its head and repair state (`parts`, from [`split_core`]) as they are, its locations
    /// (`pieces`, `count` × 16 bytes, read from the runs it named) into one new run here, and
    /// each array's values (`surface`, `turns`: read from the entry or its runs) into one new
    /// run here. Returns its new slot.
    ///
    /// # Errors
    /// Pieces of another length than `count`, or an entry too long for its length field.
    #[allow(
        clippy::too_many_arguments,
        reason = "the parts of one entry, each read from another place"
    )]
    pub fn copy(
        &mut self,
        slot: &Slot,
        loc_base: u64,
        parts: &CoreParts<'_>,
        count: u64,
        pieces: &[&[u8]],
        surface: &[&[u8]],
        turns: &[&[u8]],
    ) -> Decoded<Slot> {
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        if bytes as u64 != count.saturating_mul(EventLoc::ENCODED_LEN as u64) {
            return Err("raw locations of another length than their count");
        }
        let runs = self.with_new_run(&[], count, pieces);
        let mut core = std::mem::take(&mut self.core);
        core.clear();
        core.extend_from_slice(parts.head);
        self.put_arrays(
            &mut core,
            ArraysOut {
                surface: ArrayOut {
                    earlier: &[],
                    pieces: surface,
                },
                turns: ArrayOut {
                    earlier: &[],
                    pieces: turns,
                },
            },
        )?;
        core.extend_from_slice(parts.repair);
        let moved = Slot {
            generation: self.generation,
            ..*slot
        };
        let slot = self.put_entry(moved, loc_base, &runs, &core);
        self.core = core;
        slot
    }

    /// Both arrays of an entry, into its `core`: each short one (no earlier runs, at most
    /// [`INLINE_MAX`] values) inline, each other its earlier runs and, when there are any, its
    /// new values written here as one run.
    fn put_arrays(&mut self, core: &mut Vec<u8>, a: ArraysOut<'_>) -> Decoded<EntryArrays> {
        Ok(EntryArrays {
            surface: self.put_array(core, a.surface)?,
            turns: self.put_array(core, a.turns)?,
        })
    }

    fn put_array(&mut self, core: &mut Vec<u8>, a: ArrayOut<'_>) -> Decoded<ArrayRef> {
        let bytes: usize = a.pieces.iter().map(|p| p.len()).sum();
        if !bytes.is_multiple_of(VALUE_LEN) {
            return Err("array values of a partial length");
        }
        let count = (bytes / VALUE_LEN) as u64;
        let array = if a.earlier.is_empty() && count <= INLINE_MAX {
            ArrayRef {
                len: count,
                runs: Vec::new(),
            }
        } else {
            let runs = self.runs_with(a.earlier, count, a.pieces);
            ArrayRef {
                len: runs.iter().map(|r| r.count).sum(),
                runs,
            }
        };
        put_array(core, &array, a.pieces)?;
        Ok(array)
    }

    /// `earlier` and, when there are any, the `count` locations of `pieces` written here as
    /// one new run.
    fn with_new_run(&mut self, earlier: &[RunRef], count: u64, pieces: &[&[u8]]) -> Vec<RunRef> {
        self.runs_with(earlier, count, pieces)
    }

    /// `earlier` and, when `count` > 0, `pieces` (`count` items) written here as one new run.
    fn runs_with(&mut self, earlier: &[RunRef], count: u64, pieces: &[&[u8]]) -> Vec<RunRef> {
        let mut runs = earlier.to_vec();
        if count > 0 {
            let at = self.runs.len();
            for p in pieces {
                self.runs.extend_from_slice(p);
            }
            runs.push(RunRef {
                generation: self.generation,
                start: at as u64,
                count,
                crc: crc32fast::hash(self.runs.get(at..).unwrap_or_default()),
            });
        }
        runs
    }

    /// Writes an entry (its runs, then `core`) and its slot: `slot`'s keys, placed here.
    fn put_entry(
        &mut self,
        slot: Slot,
        loc_base: u64,
        runs: &[RunRef],
        core: &[u8],
    ) -> Decoded<Slot> {
        let at = self.entries.len();
        let out = &mut self.entries;
        out.extend_from_slice(&loc_base.to_le_bytes());
        out.extend_from_slice(
            &u32::try_from(runs.len())
                .map_err(|_| TOO_LARGE)?
                .to_le_bytes(),
        );
        for r in runs {
            r.encode(out);
        }
        out.extend_from_slice(core);
        let entry = out.get(at..).unwrap_or_default();
        let slot = Slot {
            generation: self.generation,
            entry_at: at as u64,
            entry_len: u32::try_from(entry.len()).map_err(|_| TOO_LARGE)?,
            entry_crc: crc32fast::hash(entry),
            ..slot
        };
        Ok(slot)
    }

    /// Names a page an earlier file of the chain holds as the index's next page.
    pub fn carry_page(&mut self, page: PageRef) {
        debug_assert!(
            page.generation < self.generation,
            "a carried page of this file"
        );
        debug_assert!(page.count > 0, "an empty page");
        debug_assert!(
            page.first_hash >= self.last_first_hash,
            "pages out of order"
        );
        self.name_page(page);
    }

    /// Writes `slots` (sorted, at least one) here as the index's next page.
    ///
    /// # Errors
    /// No slots, or more than a page's count field holds.
    pub fn write_page(&mut self, slots: &[Slot]) -> Decoded<()> {
        let first = slots.first().ok_or("an empty page")?;
        debug_assert!(
            slots.is_sorted_by_key(Slot::key),
            "a page's slots out of order"
        );
        debug_assert!(first.id_hash >= self.last_first_hash, "pages out of order");
        let at = self.pages.len();
        for s in slots {
            s.encode(&mut self.pages);
        }
        let page = PageRef {
            first_hash: first.id_hash,
            first_slot: 0,
            generation: self.generation,
            at: at as u64,
            count: u32::try_from(slots.len()).map_err(|_| TOO_LARGE)?,
            crc: crc32fast::hash(self.pages.get(at..).unwrap_or_default()),
        };
        self.name_page(page);
        Ok(())
    }

    fn name_page(&mut self, page: PageRef) {
        let page = PageRef {
            first_slot: self.slot_count,
            ..page
        };
        page.encode(&mut self.table);
        self.slot_count += u64::from(page.count);
        self.page_count += 1;
        self.last_first_hash = page.first_hash;
    }

    /// The body: the prefix, the page table, the pages written here, the entries, the runs.
    ///
    /// # Errors
    /// None on 64-bit targets; kept for lengths past a field.
    pub fn finish(self) -> Decoded<Vec<u8>> {
        let table_end = PAGED_PREFIX_LEN + self.table.len();
        let mut body =
            Vec::with_capacity(table_end + self.pages.len() + self.entries.len() + self.runs.len());
        body.extend_from_slice(&(table_end as u64 - 8).to_le_bytes());
        body.extend_from_slice(&self.slot_count.to_le_bytes());
        body.extend_from_slice(&self.page_count.to_le_bytes());
        body.extend_from_slice(&(self.pages.len() as u64).to_le_bytes());
        body.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        body.extend_from_slice(&self.table);
        body.extend_from_slice(&self.pages);
        body.extend_from_slice(&self.entries);
        body.extend_from_slice(&self.runs);
        debug_assert_eq!(
            Regions::of(&body, BodyLayout::CURRENT).map(|r| (r.slots, r.blocks)),
            Ok((
                usize::try_from(self.slot_count).unwrap_or(usize::MAX),
                usize::try_from(self.page_count).unwrap_or(usize::MAX)
            ))
        );
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{decode_in, entry_whole};
    use super::*;
    use crate::codec::checkpoint::checked_part;
    use crate::model::{RepairState, SurfaceManager, TurnMarks};
    use proptest::prelude::*;

    fn state(seed: u64) -> SessionState {
        SessionState {
            next_seq: 2 + seed,
            last_time: seed.is_multiple_of(2).then_some(7 + seed as i64),
            surface: SurfaceManager::from_parts(vec![0, seed + 1], seed),
            repair: RepairState::default(),
            turns: TurnMarks::from_encoded(vec![1]),
        }
    }

    fn locs(n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        for i in 0..n {
            EventLoc {
                lsn: i * 11,
                offset: 3,
                len: 5,
            }
            .encode(&mut out);
        }
        out
    }

    /// A body of generation 5 with sessions `seeds` (each with `n` new locations after one
    /// earlier run of 2 in generation 4), their slots in pages of up to 3 written here, and
    /// `carried` pages of generation 4 named among them in order of first hash.
    #[allow(clippy::type_complexity, reason = "what each entry written names")]
    fn body(
        seeds: &[(u64, u64)],
        carried: &[PageRef],
    ) -> (Vec<u8>, Vec<(Slot, Vec<RunRef>, EntryArrays)>) {
        let mut w = IndexedWriter::new(5);
        let mut written = Vec::new();
        for &(seed, n) in seeds {
            let st = state(seed);
            let id = format!("s{seed}");
            let parent = format!("p{seed}");
            let r = SessionRef {
                id: &id,
                header_json: b"{}",
                created_lsn: seed,
                parent: (seed % 3 == 0).then_some((parent.as_str(), 1)),
                loc_base: 0,
                state: &st,
            };
            let earlier = [RunRef {
                generation: 4,
                start: 16,
                count: 2,
                crc: 9,
            }];
            let bytes = locs(n);
            written.push(entry_whole(&mut w, &r, -3, &earlier, n, &[&bytes]).unwrap());
        }
        let mut slots: Vec<Slot> = written.iter().map(|(s, _, _)| *s).collect();
        slots.sort_unstable_by_key(Slot::key);
        enum Part<'a> {
            Own(&'a [Slot]),
            Carried(PageRef),
        }
        let mut parts: Vec<(u64, Part<'_>)> = slots
            .chunks(3)
            .map(|c| (c[0].id_hash, Part::Own(c)))
            .chain(carried.iter().map(|p| (p.first_hash, Part::Carried(*p))))
            .collect();
        parts.sort_by_key(|(h, _)| *h);
        for (_, part) in parts {
            match part {
                Part::Own(c) => w.write_page(c).unwrap(),
                Part::Carried(p) => w.carry_page(p),
            }
        }
        (w.finish().unwrap(), written)
    }

    /// Every slot of the pages `bytes` holds itself, in order, each page checked.
    fn own_slots(bytes: &[u8], r: &Regions) -> Vec<Slot> {
        (0..r.blocks)
            .map(|p| r.page(bytes, p).unwrap())
            .filter(|p| p.generation == 5)
            .flat_map(|p| {
                let page = r.page_bytes(bytes, &p).unwrap();
                (0..p.count as usize).map(move |k| page_slot(page, k).unwrap())
            })
            .collect()
    }

    proptest! {
        #[test]
        fn bodies_round_trip(seeds in proptest::collection::btree_map(0u64..1000, 0u64..9, 0..8), carried in proptest::collection::vec(any::<(u64, u64, u32, u32)>(), 0..5)) {
            let seeds: Vec<(u64, u64)> = seeds.into_iter().collect();
            let carried: Vec<PageRef> = carried.iter().map(|&(h, at, n, crc)| PageRef {
                first_hash: h, first_slot: 0, generation: 4, at, count: 1 + n % 64, crc,
            }).collect();
            let (bytes, written) = body(&seeds, &carried);
            let regions = Regions::of(&bytes, BodyLayout::CURRENT).unwrap();
            prop_assert_eq!(regions.shape, IndexShape::Pages);
            regions.check_pages(&bytes).unwrap();
            let total: u64 = carried.iter().map(|p| u64::from(p.count)).sum::<u64>() + seeds.len() as u64;
            prop_assert_eq!(regions.slots as u64, total);
            let table: Vec<PageRef> = (0..regions.blocks).map(|p| regions.page(&bytes, p).unwrap()).collect();
            for c in &carried {
                let found = table.iter().any(|t| PageRef { first_slot: 0, ..*t } == *c);
                prop_assert!(found, "carried page {:?}", c);
            }
            for (p, page) in table.iter().enumerate() {
                prop_assert_eq!(regions.page_of_slot(&bytes, page.first_slot as usize).unwrap(), p);
                prop_assert_eq!(regions.page_of_slot(&bytes, page.end_slot() as usize - 1).unwrap(), p);
            }
            let slots = own_slots(&bytes, &regions);
            prop_assert!(slots.windows(2).all(|w| w[0].key() <= w[1].key()), "sorted");
            for (&(seed, n), (slot, runs, arrays)) in seeds.iter().zip(&written) {
                prop_assert!(slots.contains(slot));
                let p = regions.page_for_hash(&bytes, slot.id_hash).unwrap();
                prop_assert!(table[p].first_hash <= slot.id_hash || p == 0);
                let raw = regions.entry(&bytes, slot).unwrap();
                let e = decode_in(&regions, &bytes, raw).unwrap();
                prop_assert_eq!(e.arrays.as_ref(), Some(arrays));
                prop_assert_eq!(entry_id(raw).unwrap(), e.id.as_str());
                let row = entry_row(regions.entries, raw).unwrap();
                prop_assert_eq!(row.header_json, &e.header_json[..]);
                prop_assert_eq!(row.created_lsn, e.created_lsn);
                prop_assert_eq!(row.surface_len, e.state.surface().seqs().len());
                prop_assert_eq!(row.turn_open, e.state.repair().turn_is_open());
                prop_assert_eq!(&e.id, &format!("s{seed}"));
                prop_assert_eq!(&e.state, &state(seed));
                prop_assert_eq!(&e.runs, runs);
                prop_assert_eq!(e.runs.len(), if n > 0 { 2 } else { 1 });
                if let Some(new) = e.runs.get(1) {
                    prop_assert_eq!(regions.run(&bytes, new).unwrap(), &locs(n)[..]);
                }
            }
        }

        #[test]
        fn arbitrary_bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            for layout in [BodyLayout::Indexed, BodyLayout::Paged, BodyLayout::Arrays] {
                let Ok(r) = Regions::of(&bytes, layout) else { continue };
                let _ = r.check_pages(&bytes);
                let _ = r.page_for_hash(&bytes, 7);
                let mut slots = Vec::new();
                for i in 0..r.slots.min(8) {
                    let _ = r.page_of_slot(&bytes, i);
                    slots.extend(r.slot(&bytes, i));
                }
                for p in 0..r.blocks.min(8) {
                    let _ = r.check_block(&bytes, p);
                    if let Ok(page) = r.page(&bytes, p) && let Ok(b) = r.page_bytes(&bytes, &page) {
                        slots.extend((0..page.count as usize).map_while(|k| page_slot(b, k).ok()));
                    }
                }
                for s in slots.iter().take(8) {
                    let Ok(e) = r.entry(&bytes, s) else { continue };
                    let _ = entry_id(e);
                    let _ = entry_row(r.entries, e);
                    let _ = split_entry(e).map(|(_, _, core)| split_core(r.entries, core));
                    for run in decode_in(&r, &bytes, e).map(|e| e.runs).unwrap_or_default() {
                        let _ = r.run(&bytes, &run);
                    }
                }
            }
            for form in [EntryForm::Inline, EntryForm::Runs] {
                let _ = decode_entry(form, &bytes, |_| Ok(&[][..]));
                let _ = entry_row(form, &bytes);
            }
        }
    }

    #[test]
    fn the_header_checks_the_page_table_and_each_page_entry_and_run_checks_itself() {
        let (bytes, written) = body(&[(1, 3), (2, 4), (3, 0), (4, 1)], &[]);
        let regions = Regions::of(&bytes, BodyLayout::CURRENT).unwrap();
        assert_eq!(checked_part(&bytes), &bytes[..regions.slots_start]);
        let table: Vec<PageRef> = (0..regions.blocks)
            .map(|p| regions.page(&bytes, p).unwrap())
            .collect();
        assert_eq!(table.len(), 2);
        // A flipped byte in a page: that page refuses, the header's part is unchanged.
        for i in regions.slots_start..regions.entries_start {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(checked_part(&bad), checked_part(&bytes));
            let hit = table
                .iter()
                .filter(|p| regions.page_bytes(&bad, p).is_err())
                .count();
            assert_eq!(hit, 1, "byte {i}");
        }
        for i in regions.entries_start..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(checked_part(&bad), checked_part(&bytes));
            let entries_hit = written
                .iter()
                .filter(|(s, _, _)| regions.entry(&bad, s).is_err())
                .count();
            let runs_hit = written
                .iter()
                .filter(|(_, r, _)| r.get(1).is_some_and(|r| regions.run(&bad, r).is_err()))
                .count();
            let arrays_hit = written
                .iter()
                .flat_map(|(_, _, a)| a.surface.runs.iter().chain(&a.turns.runs))
                .filter(|r| regions.array_run(&bad, r).is_err())
                .count();
            assert_eq!(entries_hit + runs_hit + arrays_hit, 1, "byte {i}");
        }
    }

    #[test]
    fn an_index_of_many_pages_finds_every_session() {
        let seeds: Vec<(u64, u64)> = (0..300).map(|i| (i, i % 3)).collect();
        let (bytes, written) = body(&seeds, &[]);
        let regions = Regions::of(&bytes, BodyLayout::CURRENT).unwrap();
        assert_eq!(regions.blocks, 100);
        let slots = own_slots(&bytes, &regions);
        for (slot, _, _) in &written {
            let p = regions.page_for_hash(&bytes, slot.id_hash).unwrap();
            let page = regions.page(&bytes, p).unwrap();
            let b = regions.page_bytes(&bytes, &page).unwrap();
            let k = lower_bound(page.count as usize, slot.id_hash, |k| page_slot(b, k)).unwrap();
            let at = page.first_slot as usize + k;
            assert_eq!(slots[at], *slot);
        }
    }

    #[test]
    fn a_page_table_out_of_order_is_refused() {
        let (bytes, _) = body(&[(1, 3), (2, 4), (3, 0), (4, 1)], &[]);
        let regions = Regions::of(&bytes, BodyLayout::CURRENT).unwrap();
        // The second page's first slot moved by one.
        let mut bad = bytes.clone();
        bad[regions.table_start + PAGE_REF_LEN + 8] ^= 1;
        assert!(regions.check_pages(&bad).is_err());
        regions.check_pages(&bytes).unwrap();
    }

    #[test]
    fn every_truncation_of_a_body_is_an_error_somewhere() {
        let (bytes, written) = body(&[(1, 3), (2, 0)], &[]);
        for cut in 0..bytes.len() {
            let cut = &bytes[..cut];
            let whole = Regions::of(cut, BodyLayout::CURRENT).is_ok_and(|r| {
                r.check_pages(cut).is_ok()
                    && (0..r.blocks)
                        .all(|p| r.page(cut, p).is_ok_and(|p| r.page_bytes(cut, &p).is_ok()))
                    && written.iter().all(|(s, runs, a)| {
                        r.entry(cut, s).is_ok()
                            && runs[1..].iter().all(|run| r.run(cut, run).is_ok())
                            && a.surface
                                .runs
                                .iter()
                                .chain(&a.turns.runs)
                                .all(|run| r.array_run(cut, run).is_ok())
                    })
            });
            assert!(!whole, "cut at {}", cut.len());
        }
    }

    #[test]
    fn the_id_hash_is_fnv_1a() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(id_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(id_hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(id_hash("foobar"), 0x8594_4171_f739_67e8);
    }
}
