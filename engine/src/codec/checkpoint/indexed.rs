//! Body layout 3 (`docs/FORMAT.md` §5.2): an **index** by session id, then the **entries**,
//! then the **location runs**. The header's body CRC covers the index alone; each entry and
//! each run carries its own CRC, checked when it is read. A delta's index is complete — every
//! live session has a slot — and a slot names the file of the chain that holds its entry, so
//! a checkpoint writes the sessions that changed plus the index, and an open reads the index
//! alone.

use super::{Head, LocRun, SessionRef, TOO_LARGE, put_head, put_state, read_head, read_state};
use crate::codec::location::EventLoc;
use crate::codec::reader::{ByteReader, Decoded};
use crate::model::SessionState;

/// Bytes of one index slot.
pub const SLOT_LEN: usize = 64;
/// Bytes of one run reference in an entry.
pub const RUN_REF_LEN: usize = 28;
/// The body's prefix before the block CRCs: the checked length, the slot count, the entries'
/// length.
const PREFIX_LEN: usize = 24;
/// Slots per block of the index: each block has its own CRC, checked when a slot of it is
/// first read, so an open reads no slot.
pub const SLOTS_PER_BLOCK: usize = 64;
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

    fn decode(bytes: &[u8]) -> Decoded<Slot> {
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
    fn key(&self) -> (u64, u64, u64) {
        (self.id_hash, self.generation, self.entry_at)
    }
}

/// Where one run of locations is: in the runs region of a file of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunRef {
    /// The checkpoint file holding it.
    pub generation: u64,
    /// Its first byte, from the start of that file's runs region.
    pub start: u64,
    /// Locations in it.
    pub count: u64,
    /// CRC-32 of its `count` × 16 bytes.
    pub crc: u32,
}

/// The regions of a layout-3 body, from its 24-byte prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// Slots in the index.
    pub slots: usize,
    /// Blocks of [`SLOTS_PER_BLOCK`] slots (the last one may hold fewer).
    pub blocks: usize,
    /// Where the slots begin, from the start of the body (after the block CRCs).
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
    /// A prefix that does not fit the body.
    pub fn of(body: &[u8]) -> Decoded<Regions> {
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
            .filter(|&end| end <= body.len())
            .ok_or("entries past the body")?;
        Ok(Regions {
            slots,
            blocks,
            slots_start,
            entries_start: index_len,
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

    /// Slot `i` of `body`'s index, not checked: its block's CRC is checked by
    /// [`Regions::check_block`] (or [`Regions::slot_checked`]).
    ///
    /// # Errors
    /// `i` past the index or the body.
    pub fn slot(&self, body: &[u8], i: usize) -> Decoded<Slot> {
        if i >= self.slots {
            return Err("slot past the index");
        }
        let at = self.slots_start + i * SLOT_LEN;
        Slot::decode(body.get(at..at + SLOT_LEN).ok_or("slot past the body")?)
    }

    /// The first slot whose id hash is not below `hash` (binary search: the index is sorted),
    /// each block read checked.
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
        let bytes = usize::try_from(slot.entry_at)
            .ok()
            .and_then(|at| at.checked_add(self.entries_start))
            .and_then(|at| Some((at, at.checked_add(slot.entry_len as usize)?)))
            .filter(|&(_, end)| end <= self.runs_start)
            .and_then(|(at, end)| body.get(at..end))
            .ok_or("an entry outside the entries region")?;
        if crc32fast::hash(bytes) != slot.entry_crc {
            return Err("an entry fails its checksum");
        }
        Ok(bytes)
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
        let at = usize::try_from(run.start)
            .ok()
            .and_then(|s| s.checked_add(self.runs_start))
            .ok_or("location offset")?;
        let len = usize::try_from(run.count)
            .ok()
            .and_then(|n| n.checked_mul(EventLoc::ENCODED_LEN))
            .ok_or("location count")?;
        Ok((at, len))
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
}

/// Decodes an entry's bytes (already checked against its slot).
///
/// # Errors
/// The first field that is short or malformed.
pub fn decode_entry(bytes: &[u8]) -> Decoded<Entry> {
    let (loc_base, runs, core) = split_entry(bytes)?;
    let mut c = ByteReader::new(core);
    let head: Head = read_head(&mut c)?;
    let state = read_state(&mut c, &head)?;
    c.finish(Entry {
        id: head.id,
        header_json: head.header_json,
        created_lsn: head.created_lsn,
        parent: head.parent,
        loc_base,
        runs,
        state,
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
        runs.push(RunRef {
            generation: c.u64("run generation")?,
            start: c.u64("run offset")?,
            count: c.u64("run location count")?,
            crc: c.u32("run CRC")?,
        });
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

/// An entry's [`EntryRow`] (the surface and turn-mark arrays skipped, not read).
///
/// # Errors
/// A short or malformed entry.
pub fn entry_row(bytes: &[u8]) -> Decoded<EntryRow<'_>> {
    let (_, _, core) = split_entry(bytes)?;
    let mut c = ByteReader::new(core);
    c.str16_ref("session id")?;
    let header_json = c.bytes32("session header")?;
    let created_lsn = c.u64("created LSN")?;
    if c.u8("parent tag")? == 1 {
        c.str16_ref("parent id")?;
        c.u64("inherited count")?;
    }
    c.u64("next seq")?;
    if c.u8("last time tag")? == 1 {
        c.i64("last time")?;
    }
    c.u64("replace generation")?;
    let surface = c.u64("surface")?;
    let surface_len = c.count(surface, 8, "surface")?;
    c.take(surface_len * 8, "surface")?;
    let turns = c.u64("turn marks")?;
    let turns = c.count(turns, 8, "turn marks")?;
    c.take(turns * 8, "turn marks")?;
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
    let _ = c.u64("location base")?;
    let n = c.u32("run count")?;
    let n = c.count(u64::from(n), RUN_REF_LEN, "run count")?;
    c.take(n * RUN_REF_LEN, "runs")?;
    c.str16_ref("session id")
}

#[cfg(test)]
mod copy_tests {
    use super::*;
    use crate::model::SessionState;

    #[test]
    fn a_copied_entry_decodes_as_the_original_with_its_locations_in_one_run() {
        let state = SessionState::new();
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
        let (slot, _) = first.entry(&r, 5, &earlier, 0, &[]).unwrap();
        let body = first.finish().unwrap();
        let regions = Regions::of(&body).unwrap();
        let bytes = regions.entry(&body, &slot).unwrap();
        let (loc_base, runs, core) = split_entry(bytes).unwrap();
        assert_eq!((loc_base, runs.as_slice()), (2, &earlier[..]));
        let loc = [0x11u8; 16];
        let mut second = IndexedWriter::new(3);
        let moved = second.copy(&slot, loc_base, core, 1, &[&loc]).unwrap();
        let body2 = second.finish().unwrap();
        let regions2 = Regions::of(&body2).unwrap();
        let copied = decode_entry(regions2.entry(&body2, &moved).unwrap()).unwrap();
        let original = decode_entry(bytes).unwrap();
        assert_eq!(copied.id, original.id);
        assert_eq!(copied.state, original.state);
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

/// Writes a layout-3 body: entries written here, slots carried over from the previous index,
/// then [`IndexedWriter::finish`].
#[derive(Debug)]
pub struct IndexedWriter {
    generation: u64,
    entries: Vec<u8>,
    runs: Vec<u8>,
    /// Slots of the entries written here.
    slots: Vec<Slot>,
    /// Slots carried over, in the order given (an earlier index's: sorted already).
    carried: Vec<Slot>,
}

impl IndexedWriter {
    /// An empty body of the checkpoint `generation`.
    pub fn new(generation: u64) -> Self {
        Self {
            generation,
            entries: Vec::new(),
            runs: Vec::new(),
            slots: Vec::new(),
            carried: Vec::new(),
        }
    }

    /// Writes one session's entry: its locations from `s.loc_base` are the runs `earlier`
    /// (in files of the chain, this one's excepted) followed by `count` new locations given as
    /// their encoded bytes (`pieces`, concatenated, are `count` × 16 bytes), written here.
    /// Returns its slot and every run it names.
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
    ) -> Decoded<(Slot, Vec<RunRef>)> {
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        if bytes as u64 != count.saturating_mul(EventLoc::ENCODED_LEN as u64) {
            return Err("raw locations of another length than their count");
        }
        let runs = self.with_new_run(earlier, count, pieces);
        let mut core = Vec::new();
        put_head(&mut core, s)?;
        put_state(&mut core, s.state)?;
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
        )?;
        Ok((slot, runs))
    }

    /// Copies an untouched session's entry from an earlier file of the chain without decoding
    /// it: its fields after the runs (`core`, from [`split_entry`]) as they are, its locations
    /// (`pieces`, `count` × 16 bytes, read from the runs it named) into one new run here.
    /// Returns its new slot.
    ///
    /// # Errors
    /// Pieces of another length than `count`, or an entry too long for its length field.
    pub fn copy(
        &mut self,
        slot: &Slot,
        loc_base: u64,
        core: &[u8],
        count: u64,
        pieces: &[&[u8]],
    ) -> Decoded<Slot> {
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        if bytes as u64 != count.saturating_mul(EventLoc::ENCODED_LEN as u64) {
            return Err("raw locations of another length than their count");
        }
        let runs = self.with_new_run(&[], count, pieces);
        let moved = Slot {
            generation: self.generation,
            ..*slot
        };
        self.put_entry(moved, loc_base, &runs, core)
    }

    /// `earlier` and, when there are any, the `count` locations of `pieces` written here as
    /// one new run.
    fn with_new_run(&mut self, earlier: &[RunRef], count: u64, pieces: &[&[u8]]) -> Vec<RunRef> {
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
            out.extend_from_slice(&r.generation.to_le_bytes());
            out.extend_from_slice(&r.start.to_le_bytes());
            out.extend_from_slice(&r.count.to_le_bytes());
            out.extend_from_slice(&r.crc.to_le_bytes());
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
        self.slots.push(slot);
        Ok(slot)
    }

    /// Keeps an untouched session's slot: its entry stays where an earlier file of the chain
    /// has it.
    pub fn carry(&mut self, slot: Slot) {
        debug_assert!(
            slot.generation < self.generation,
            "a carried slot of this file"
        );
        self.carried.push(slot);
    }

    /// The body: the prefix, the block CRCs, the slots sorted by id hash, the entries, the
    /// runs.
    ///
    /// # Errors
    /// None on 64-bit targets; kept for lengths past a field.
    pub fn finish(mut self) -> Decoded<Vec<u8>> {
        // The written slots sorted, then merged with the carried ones: a delta costs a sort
        // of what changed, not of every session.
        self.slots.sort_unstable_by_key(Slot::key);
        if !self.carried.is_sorted_by_key(Slot::key) {
            self.carried.sort_unstable_by_key(Slot::key);
        }
        let total = self.slots.len() + self.carried.len();
        let mut slots = Vec::with_capacity(total * SLOT_LEN);
        let (mut a, mut b) = (self.slots.iter().peekable(), self.carried.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.key() <= y.key() => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => break,
            };
            if let Some(slot) = next {
                slot.encode(&mut slots);
            }
        }
        let blocks = total.div_ceil(SLOTS_PER_BLOCK);
        let slots_start = PREFIX_LEN + 4 * blocks;
        let mut body =
            Vec::with_capacity(slots_start + slots.len() + self.entries.len() + self.runs.len());
        body.extend_from_slice(&(slots_start as u64 - 8).to_le_bytes());
        body.extend_from_slice(&(total as u64).to_le_bytes());
        body.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for block in slots.chunks(SLOTS_PER_BLOCK * SLOT_LEN) {
            body.extend_from_slice(&crc32fast::hash(block).to_le_bytes());
        }
        body.extend_from_slice(&slots);
        body.extend_from_slice(&self.entries);
        body.extend_from_slice(&self.runs);
        debug_assert_eq!(Regions::of(&body).map(|r| r.slots), Ok(total));
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
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
    /// earlier run of 2 in generation 4), and `carried` slots of generation 4.
    fn body(seeds: &[(u64, u64)], carried: &[Slot]) -> (Vec<u8>, Vec<(Slot, Vec<RunRef>)>) {
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
            written.push(w.entry(&r, -3, &earlier, n, &[&bytes]).unwrap());
        }
        for s in carried {
            w.carry(*s);
        }
        (w.finish().unwrap(), written)
    }

    proptest! {
        #[test]
        fn bodies_round_trip(seeds in proptest::collection::btree_map(0u64..1000, 0u64..9, 0..8), carried in proptest::collection::vec(any::<(u64, u64, u32)>(), 0..5)) {
            let seeds: Vec<(u64, u64)> = seeds.into_iter().collect();
            let carried: Vec<Slot> = carried.iter().map(|&(h, at, crc)| Slot {
                id_hash: h, generation: 4, entry_at: at, entry_len: 1, entry_crc: crc,
                created_at: 0, last_time: None, next_seq: 0, parent_hash: 0,
            }).collect();
            let (bytes, written) = body(&seeds, &carried);
            let regions = Regions::of(&bytes).unwrap();
            prop_assert_eq!(regions.slots, seeds.len() + carried.len());
            let slots: Vec<Slot> = (0..regions.slots).map(|i| regions.slot_checked(&bytes, i).unwrap()).collect();
            prop_assert!(slots.windows(2).all(|w| w[0].key() <= w[1].key()), "sorted");
            for c in &carried {
                prop_assert!(slots.contains(c));
            }
            for (&(seed, n), (slot, runs)) in seeds.iter().zip(&written) {
                prop_assert!(slots.contains(slot));
                let i = regions.lower_bound(&bytes, id_hash(&format!("s{seed}"))).unwrap();
                prop_assert_eq!(regions.slot(&bytes, i).unwrap().id_hash, slot.id_hash);
                let raw = regions.entry(&bytes, slot).unwrap();
                let e = decode_entry(raw).unwrap();
                prop_assert_eq!(entry_id(raw).unwrap(), e.id.as_str());
                let row = entry_row(raw).unwrap();
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
            if let Ok(r) = Regions::of(&bytes) {
                for i in 0..r.slots.min(8) {
                    let Ok(s) = r.slot(&bytes, i) else { continue };
                    let Ok(e) = r.entry(&bytes, &s) else { continue };
                    let _ = entry_id(e);
                    let _ = entry_row(e);
                    for run in decode_entry(e).map(|e| e.runs).unwrap_or_default() {
                        let _ = r.run(&bytes, &run);
                    }
                }
            }
            let _ = decode_entry(&bytes);
        }
    }

    #[test]
    fn the_header_checks_the_block_crcs_and_each_block_entry_and_run_checks_itself() {
        let (bytes, written) = body(&[(1, 3), (2, 4)], &[]);
        let regions = Regions::of(&bytes).unwrap();
        assert_eq!(checked_part(&bytes), &bytes[..regions.slots_start]);
        for b in 0..regions.blocks {
            regions.check_block(&bytes, b).unwrap();
        }
        // A flipped byte in a slot: its block refuses, the header's part is unchanged.
        for i in regions.slots_start..regions.entries_start {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(checked_part(&bad), checked_part(&bytes));
            let block = (i - regions.slots_start) / SLOT_LEN / SLOTS_PER_BLOCK;
            assert!(regions.check_block(&bad, block).is_err(), "byte {i}");
        }
        for i in regions.entries_start..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(checked_part(&bad), checked_part(&bytes));
            let entries_hit = written
                .iter()
                .filter(|(s, _)| regions.entry(&bad, s).is_err())
                .count();
            let runs_hit = written
                .iter()
                .filter(|(_, r)| r.get(1).is_some_and(|r| regions.run(&bad, r).is_err()))
                .count();
            assert_eq!(entries_hit + runs_hit, 1, "byte {i}");
        }
    }

    #[test]
    fn an_index_of_many_blocks_finds_every_session() {
        let seeds: Vec<(u64, u64)> = (0..300).map(|i| (i, i % 3)).collect();
        let (bytes, written) = body(&seeds, &[]);
        let regions = Regions::of(&bytes).unwrap();
        assert_eq!(regions.blocks, 300usize.div_ceil(SLOTS_PER_BLOCK));
        for ((seed, _), (slot, _)) in seeds.iter().zip(&written) {
            let i = regions
                .lower_bound(&bytes, id_hash(&format!("s{seed}")))
                .unwrap();
            assert_eq!(regions.slot_checked(&bytes, i).unwrap(), *slot);
        }
    }

    #[test]
    fn every_truncation_of_a_body_is_an_error_somewhere() {
        let (bytes, written) = body(&[(1, 3), (2, 0)], &[]);
        for cut in 0..bytes.len() {
            let cut = &bytes[..cut];
            let whole = Regions::of(cut).is_ok_and(|r| {
                written.iter().all(|(s, runs)| {
                    r.entry(cut, s).is_ok() && runs[1..].iter().all(|run| r.run(cut, run).is_ok())
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
