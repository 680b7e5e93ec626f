//! The sessions the catalog has not decoded (`docs/DESIGN.md` §3.5): the index of the
//! checkpoint the open loaded, mapped, over the files of its chain that hold the entries and
//! runs it names. A session leaves it (is *taken*) when it is first read or written — then
//! the catalog holds it decoded — or deleted; an open costs the index, not the sessions.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::codec::CorruptionKind;
use crate::codec::checkpoint::arrays::{ArraySource, HeldArrays};
use crate::codec::checkpoint::indexed::{
    Entry, EntryForm, IndexShape, IndexedWriter, Regions, RunRef, SLOT_LEN, SLOTS_PER_BLOCK, Slot,
    decode_entry, entry_id, id_hash, lower_bound, split_core, split_entry,
};
use crate::codec::checkpoint::pages::{PageRef, page_slot};
use crate::codec::checkpoint::{CHECKPOINT_HEADER_LEN, LocRun};
use crate::codec::reader::ByteReader;
use crate::store::catalog::locations::MappedRun;
use crate::store::checkpoint::view::BodyView;
use crate::{Error, Result};

/// One checkpoint file of the chain, mapped.
#[derive(Debug)]
pub(crate) struct ColdFile {
    /// Mapped at open for the newest file of the chain, on first read for the others.
    pub(crate) view: BodyView,
    pub(crate) path: Arc<str>,
    pub(crate) regions: Regions,
}

impl ColdFile {
    /// The body's bytes (the file mapped now if not yet).
    ///
    /// # Errors
    /// I/O errors of the map.
    fn body(&self) -> Result<&[u8]> {
        Ok(self
            .view
            .view()?
            .get(CHECKPOINT_HEADER_LEN..)
            .unwrap_or_default())
    }

    fn index_damaged(&self, body_offset: usize) -> Error {
        Error::corruption(
            &self.path,
            (body_offset + CHECKPOINT_HEADER_LEN) as u64,
            CorruptionKind::CheckpointIndex,
        )
    }

    fn damaged(&self, body_offset: u64) -> Error {
        Error::corruption(
            &self.path,
            body_offset.saturating_add(CHECKPOINT_HEADER_LEN as u64),
            CorruptionKind::CheckpointEntry,
        )
    }
}

/// The sessions of a checkpoint's index not taken into the catalog yet.
#[derive(Debug)]
pub(crate) struct Cold {
    /// The chain's files by generation; the newest holds the index.
    files: BTreeMap<u64, ColdFile>,
    newest: u64,
    /// How every file of the chain holds its entries' arrays (a chain is of one layout).
    form: EntryForm,
    slots: usize,
    /// One bit per slot: its session was taken (decoded into the catalog, or deleted).
    taken: Vec<u64>,
    taken_count: usize,
    /// The slots of forks by their parent's id hash, built at the first deletion that asks.
    forks: Option<HashMap<u64, Vec<usize>>>,
    /// One bit per index block (layout 3) or page (4): checked against its CRC (readers set
    /// them under a shared lock; a block checked twice costs time, not correctness).
    checked: Vec<AtomicU64>,
    /// One bit per slot: its entry checked against its CRC. A checkpoint file never changes
    /// once in place, so a listing after the first reads each entry without hashing it again
    /// (the CRCs were 37 % of a listing of 100,000 sessions, `docs/PERFORMANCE.md`).
    entries_checked: Vec<AtomicU64>,
    /// The page the last slot read was in (layouts 4 and 5): a walk over the slots finds each one's
    /// page without a search.
    last_page: AtomicUsize,
}

/// An old page as a delta's index plan sees it: whether every slot of it is untouched.
#[derive(Debug)]
pub(crate) struct OldPage {
    pub(crate) page: PageRef,
    /// `None`: every slot untaken (the page can be named where it is); else the untaken ones.
    pub(crate) kept: Option<Vec<Slot>>,
}

/// Which slots a search by id looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Taken {
    /// The sessions still only in the index.
    No,
    /// The sessions decoded from it (or deleted since).
    Yes,
}

impl Cold {
    /// The index of the newest of `files` over them all.
    ///
    /// # Errors
    /// No files, files of two index layouts, or a page table that does not describe one index.
    pub(crate) fn new(files: BTreeMap<u64, ColdFile>) -> std::result::Result<Self, &'static str> {
        let (&newest, file) = files.iter().next_back().ok_or("an empty chain")?;
        if files.values().any(|f| {
            (f.regions.shape, f.regions.entries) != (file.regions.shape, file.regions.entries)
        }) {
            return Err("a chain of two index layouts");
        }
        // The newest file is mapped at open (its index checked whole).
        let body = file
            .body()
            .map_err(|_| "the newest file of a chain not mapped")?;
        file.regions.check_pages(body)?;
        let slots = file.regions.slots;
        Ok(Self {
            newest,
            slots,
            taken: vec![0; slots.div_ceil(64)],
            taken_count: 0,
            forks: None,
            checked: (0..file.regions.blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            entries_checked: (0..slots.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            last_page: AtomicUsize::new(0),
            form: file.regions.entries,
            files,
        })
    }

    fn index(&self) -> Result<&ColdFile> {
        self.files
            .get(&self.newest)
            .ok_or_else(|| Error::corruption("checkpoints", 0, CorruptionKind::CheckpointEntry))
    }

    fn file(&self, generation: u64) -> Result<&ColdFile> {
        self.files.get(&generation).ok_or_else(|| {
            Error::corruption(
                &crate::codec::checkpoint::checkpoint_path(generation),
                0,
                CorruptionKind::Inconsistent("a checkpoint names a file outside its chain"),
            )
        })
    }

    /// How the chain's entries hold their arrays.
    pub(crate) fn form(&self) -> EntryForm {
        self.form
    }

    /// The checked bytes of an array's run (layout 5), in whichever file of the chain holds it.
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`, naming the run's place) when the run is outside its
    /// file's runs region or fails its CRC.
    pub(crate) fn array_run(&self, run: &RunRef) -> Result<&[u8]> {
        let holder = self.file(run.generation)?;
        let at = usize::try_from(run.start)
            .ok()
            .and_then(|s| s.checked_add(holder.regions.runs_start))
            .unwrap_or(usize::MAX);
        holder
            .regions
            .array_run(holder.body()?, run)
            .map_err(|_| holder.damaged(at as u64))
    }

    /// The bytes of an array's values: in its entry (put in `one`), or its runs' (each
    /// checked, put in `many`).
    ///
    /// # Errors
    /// As [`Cold::array_run`].
    fn pieces<'a, 'b>(
        &'a self,
        a: &ArraySource<'a>,
        one: &'b mut [&'a [u8]; 1],
        many: &'b mut Vec<&'a [u8]>,
    ) -> Result<&'b [&'a [u8]]> {
        match a {
            ArraySource::Values(v) => {
                one[0] = v;
                Ok(&one[..])
            }
            ArraySource::Runs(a) => {
                for r in &a.runs {
                    many.push(self.array_run(r)?);
                }
                Ok(&many[..])
            }
        }
    }

    /// Sessions not taken.
    pub(crate) fn len(&self) -> usize {
        self.slots - self.taken_count
    }

    /// Whether slot `i` is there and not taken.
    pub(crate) fn is_untaken(&self, i: usize) -> bool {
        i < self.slots && !self.is_taken(i)
    }

    fn is_taken(&self, i: usize) -> bool {
        self.taken
            .get(i / 64)
            .is_none_or(|w| w & (1 << (i % 64)) != 0)
    }

    /// Marks slot `i` taken (`true`) or not.
    pub(crate) fn set_taken(&mut self, i: usize, taken: bool) {
        if i >= self.slots || self.is_taken(i) == taken {
            return;
        }
        if let Some(w) = self.taken.get_mut(i / 64) {
            *w ^= 1 << (i % 64);
        }
        if taken {
            self.taken_count += 1;
        } else {
            self.taken_count -= 1;
        }
    }

    /// The slots not taken.
    pub(crate) fn untaken(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.slots).filter(|&i| !self.is_taken(i))
    }

    /// Calls `f` with each slot not taken and its number, in the index's order: a page's
    /// reference read once for its slots (a walk of a million slots by [`Cold::slot`] looked
    /// each one's page up).
    ///
    /// # Errors
    /// `Corruption` for a damaged block or page; `f`'s.
    pub(crate) fn each_untaken(&self, mut f: impl FnMut(usize, Slot) -> Result<()>) -> Result<()> {
        if self.pages() == 0 {
            for i in self.untaken() {
                f(i, self.slot(i)?)?;
            }
            return Ok(());
        }
        let index = self.index()?;
        for p in 0..self.pages() {
            let page = self.page(p)?;
            let first = crate::width::index(page.first_slot);
            let range = first..first + page.count as usize;
            if range.clone().all(|i| self.is_taken(i)) {
                continue;
            }
            let bytes = self.page_bytes(p, &page)?;
            for (k, i) in range.enumerate() {
                if !self.is_taken(i) {
                    let slot = page_slot(bytes, k)
                        .map_err(|_| index.index_damaged(index.regions.table_start))?;
                    f(i, slot)?;
                }
            }
        }
        Ok(())
    }

    /// Slot `i` of the index.
    ///
    /// # Errors
    /// `Corruption` for a slot past the index or a block or page that fails its CRC.
    pub(crate) fn slot(&self, i: usize) -> Result<Slot> {
        let index = self.index()?;
        match index.regions.shape {
            IndexShape::Blocks => {
                let block = i / SLOTS_PER_BLOCK;
                if !self.is_checked(block) {
                    index
                        .regions
                        .check_block(index.body()?, block)
                        .map_err(|_| {
                            index.index_damaged(
                                index.regions.slots_start + block * SLOTS_PER_BLOCK * SLOT_LEN,
                            )
                        })?;
                    self.set_checked(block);
                }
                index
                    .regions
                    .slot(index.body()?, i)
                    .map_err(|_| index.damaged((i * SLOT_LEN) as u64))
            }
            IndexShape::Pages => {
                let (p, page) = self.page_of(i)?;
                let bytes = self.page_bytes(p, &page)?;
                let k = i - crate::width::index(page.first_slot);
                page_slot(bytes, k).map_err(|_| index.index_damaged(index.regions.table_start))
            }
        }
    }

    fn is_checked(&self, b: usize) -> bool {
        self.checked
            .get(b / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (b % 64)) != 0)
    }

    fn set_checked(&self, b: usize) {
        if let Some(w) = self.checked.get(b / 64) {
            w.fetch_or(1 << (b % 64), Ordering::Relaxed);
        }
    }

    /// Pages in the index (layouts 4 and 5; 0 for layout 3).
    pub(crate) fn pages(&self) -> usize {
        self.index().map_or(0, |f| match f.regions.shape {
            IndexShape::Pages => f.regions.blocks,
            IndexShape::Blocks => 0,
        })
    }

    /// Entry `p` of the page table.
    ///
    /// # Errors
    /// `Corruption` for a page past the table.
    pub(crate) fn page(&self, p: usize) -> Result<PageRef> {
        let index = self.index()?;
        index
            .regions
            .page(index.body()?, p)
            .map_err(|_| index.index_damaged(index.regions.table_start))
    }

    /// The page holding slot `i`, and its reference.
    fn page_of(&self, i: usize) -> Result<(usize, PageRef)> {
        let hint = self.last_page.load(Ordering::Relaxed);
        if let Ok(page) = self.page(hint)
            && page.holds(i)
        {
            return Ok((hint, page));
        }
        let index = self.index()?;
        let p = index
            .regions
            .page_of_slot(index.body()?, i)
            .map_err(|_| index.index_damaged(index.regions.table_start))?;
        self.last_page.store(p, Ordering::Relaxed);
        Ok((p, self.page(p)?))
    }

    /// The bytes of page `p` in the file that holds it, checked once against its CRC.
    fn page_bytes(&self, p: usize, page: &PageRef) -> Result<&[u8]> {
        let holder = self.file(page.generation)?;
        let damaged = || holder.index_damaged(holder.regions.slots_start);
        if self.is_checked(p) {
            let at = holder.regions.slots_start + crate::width::index(page.at);
            holder
                .body()?
                .get(at..at + page.count as usize * SLOT_LEN)
                .ok_or_else(damaged)
        } else {
            let bytes = holder
                .regions
                .page_bytes(holder.body()?, page)
                .map_err(|_| damaged())?;
            self.set_checked(p);
            Ok(bytes)
        }
    }

    /// The slots of page `p`.
    ///
    /// # Errors
    /// `Corruption` for a damaged page.
    pub(crate) fn page_slots(&self, p: usize) -> Result<Vec<Slot>> {
        let page = self.page(p)?;
        let bytes = self.page_bytes(p, &page)?;
        (0..page.count as usize)
            .map(|k| {
                page_slot(bytes, k).map_err(|_| {
                    self.index()
                        .map_or_else(|e| e, |f| f.index_damaged(f.regions.table_start))
                })
            })
            .collect()
    }

    /// The pages of the index as a delta plans its own: each with whether every slot of it is
    /// untaken, or else the untaken ones (read, checked).
    ///
    /// # Errors
    /// `Corruption` for a damaged page.
    pub(crate) fn old_pages(&self) -> Result<Vec<OldPage>> {
        (0..self.pages())
            .map(|p| {
                let page = self.page(p)?;
                let first = crate::width::index(page.first_slot);
                let range = first..first + page.count as usize;
                let kept = if range.clone().all(|i| !self.is_taken(i)) {
                    None
                } else {
                    let slots = self.page_slots(p)?;
                    Some(
                        range
                            .zip(slots)
                            .filter(|(i, _)| !self.is_taken(*i))
                            .map(|(_, s)| s)
                            .collect(),
                    )
                };
                Ok(OldPage { page, kept })
            })
            .collect()
    }

    /// The first slot whose id hash is not below `hash`.
    fn lower_bound(&self, hash: u64) -> Result<usize> {
        let index = self.index()?;
        match index.regions.shape {
            IndexShape::Blocks => lower_bound(self.slots, hash, |i| self.slot(i)),
            IndexShape::Pages => {
                if self.slots == 0 {
                    return Ok(0);
                }
                let p = index
                    .regions
                    .page_for_hash(index.body()?, hash)
                    .map_err(|_| index.index_damaged(index.regions.table_start))?;
                let page = self.page(p)?;
                let first = crate::width::index(page.first_slot);
                let k = lower_bound(page.count as usize, hash, |k| self.slot(first + k))?;
                Ok(first + k)
            }
        }
    }

    /// The checked bytes of the entry `slot` names.
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`) when the entry is damaged.
    pub(crate) fn entry_bytes(&self, slot: &Slot) -> Result<&[u8]> {
        let file = self.file(slot.generation)?;
        file.regions
            .entry(file.body()?, slot)
            .map_err(|_| file.damaged(slot.entry_at))
    }

    /// The checked bytes of the entry of slot `i` (whose slot is `slot`): hashed against its
    /// CRC the first time only.
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`) when the entry is damaged.
    pub(crate) fn entry_bytes_at(&self, i: usize, slot: &Slot) -> Result<&[u8]> {
        let bit = |w: &AtomicU64| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0;
        let word = self.entries_checked.get(i / 64);
        if word.is_some_and(bit) {
            let file = self.file(slot.generation)?;
            return file
                .regions
                .entry_place(file.body()?, slot)
                .map_err(|_| file.damaged(slot.entry_at));
        }
        let bytes = self.entry_bytes(slot)?;
        if let Some(w) = word {
            w.fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
        Ok(bytes)
    }

    /// The id of slot `i`'s session (its entry checked, nothing else decoded).
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`) when the entry is damaged.
    pub(crate) fn id(&self, i: usize) -> Result<&str> {
        let slot = self.slot(i)?;
        let bytes = self.entry_bytes_at(i, &slot)?;
        entry_id(bytes).map_err(|_| {
            self.file(slot.generation)
                .map_or_else(|e| e, |f| f.damaged(slot.entry_at))
        })
    }

    /// The slot not taken that holds session `id`.
    ///
    /// # Errors
    /// `Corruption` when an entry of the same id hash is damaged.
    pub(crate) fn find(&self, id: &str) -> Result<Option<usize>> {
        self.find_in(id, Taken::No)
    }

    /// The taken slot that holds session `id`: where a decoded session came from.
    ///
    /// # Errors
    /// As [`Cold::find`].
    pub(crate) fn find_taken(&self, id: &str) -> Result<Option<usize>> {
        self.find_in(id, Taken::Yes)
    }

    fn find_in(&self, id: &str, taken: Taken) -> Result<Option<usize>> {
        let hash = id_hash(id);
        let mut i = self.lower_bound(hash)?;
        while i < self.slots && self.slot(i)?.id_hash == hash {
            if self.is_taken(i) == (taken == Taken::Yes) && self.id(i)? == id {
                return Ok(Some(i));
            }
            i += 1;
        }
        Ok(None)
    }

    /// Slot `i` and its entry's bytes, checked against the slot's CRC (nothing decoded).
    ///
    /// # Errors
    /// `Corruption` for a damaged block or entry.
    pub(crate) fn entry_bytes_of(&self, i: usize) -> Result<(Slot, &[u8])> {
        let slot = self.slot(i)?;
        Ok((slot, self.entry_bytes_at(i, &slot)?))
    }

    /// Slot `i` and its entry, checked (CRC, id hash, length) and decoded.
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`) when the entry is damaged.
    pub(crate) fn entry(&self, i: usize) -> Result<(Slot, Entry)> {
        let slot = self.slot(i)?;
        let file = self.file(slot.generation)?;
        let damaged = || file.damaged(slot.entry_at);
        // An array run's own damage is named at its place; anything else at the entry's.
        let mut run_failed = None;
        let entry = decode_entry(self.form, self.entry_bytes(&slot)?, |run| {
            self.array_run(run).map_err(|e| {
                run_failed = Some(e);
                "an array run"
            })
        });
        let entry = match (entry, run_failed) {
            (_, Some(e)) => return Err(e),
            (decoded, None) => decoded.map_err(|_| damaged())?,
        };
        if id_hash(&entry.id) != slot.id_hash || entry.state.next_seq() != slot.next_seq {
            return Err(damaged());
        }
        Ok((slot, entry))
    }

    /// A run of the chain as the catalog keeps it: mapped, checked on first use.
    ///
    /// # Errors
    /// `Corruption` when the run names a file outside the chain or does not fit in memory.
    pub(crate) fn run(&self, run: &RunRef) -> Result<MappedRun> {
        let file = self.file(run.generation)?;
        let (start, _) = file
            .regions
            .run_place(run)
            .map_err(|_| file.damaged(run.start))?;
        Ok(MappedRun {
            view: file.view.view()?.clone(),
            body_at: CHECKPOINT_HEADER_LEN,
            run: LocRun {
                start,
                count: run.count,
                crc: run.crc,
            },
            path: Arc::clone(&file.path),
        })
    }

    /// Whether the file of `generation` is one of this index's chain.
    pub(crate) fn holds(&self, generation: u64) -> bool {
        self.files.contains_key(&generation)
    }

    /// Slot `i`, the location runs its entry names and, in layout 5, its arrays' runs with
    /// the surface's replace generation they hold (nothing else decoded).
    ///
    /// # Errors
    /// `Corruption` for a damaged entry.
    pub(crate) fn runs_of(&self, i: usize) -> Result<(Slot, Vec<RunRef>, Option<HeldArrays>)> {
        let slot = self.slot(i)?;
        let file = self.file(slot.generation)?;
        let damaged = || file.damaged(slot.entry_at);
        let (_, runs, core) = split_entry(self.entry_bytes(&slot)?).map_err(|_| damaged())?;
        let arrays = match self.form {
            EntryForm::Inline => None,
            EntryForm::Runs => {
                let arrays = split_core(self.form, core).map_err(|_| damaged())?.arrays();
                let head = crate::codec::checkpoint::read_head(&mut ByteReader::new(core))
                    .map_err(|_| damaged())?;
                Some(HeldArrays {
                    arrays,
                    replace_generation: head.replace_generation(),
                })
            }
        };
        Ok((slot, runs, arrays))
    }

    /// Writes slot `i`'s session into a full checkpoint without decoding it: its entry's
    /// fields as they are, its locations (each run checked) into one new run. Returns its new
    /// slot.
    ///
    /// # Errors
    /// `Corruption` for a damaged entry or run; the inner error is the writer's.
    pub(crate) fn copy_into(
        &self,
        i: usize,
        w: &mut IndexedWriter,
    ) -> Result<std::result::Result<Slot, &'static str>> {
        let slot = self.slot(i)?;
        let file = self.file(slot.generation)?;
        let (loc_base, runs, core) =
            split_entry(self.entry_bytes(&slot)?).map_err(|_| file.damaged(slot.entry_at))?;
        let parts = split_core(self.form, core).map_err(|_| file.damaged(slot.entry_at))?;
        // A short array's values are in the entry: one piece, no allocation (the usual case
        // of a full checkpoint of many sessions).
        let (mut held_s, mut held_t) = (Vec::new(), Vec::new());
        let (mut one_s, mut one_t) = ([&[][..]], [&[][..]]);
        let surface = self.pieces(&parts.surface, &mut one_s, &mut held_s)?;
        let turns = self.pieces(&parts.turns, &mut one_t, &mut held_t)?;
        let mut pieces = Vec::with_capacity(runs.len());
        let mut count = 0;
        for run in &runs {
            let holder = self.file(run.generation)?;
            let bytes = holder.regions.run(holder.body()?, run).map_err(|_| {
                Error::corruption(
                    &holder.path,
                    run.start.saturating_add(CHECKPOINT_HEADER_LEN as u64),
                    CorruptionKind::CheckpointLocations,
                )
            })?;
            pieces.push(bytes);
            count += run.count;
        }
        Ok(w.copy(&slot, loc_base, &parts, count, &pieces, surface, turns))
    }

    /// The slots not taken of the forks of `parent` (by its id hash: a fork of another parent
    /// of the same hash is among them).
    ///
    /// # Errors
    /// `Corruption` for a damaged slot.
    pub(crate) fn forks_of(&mut self, parent: &str) -> Result<Vec<usize>> {
        if self.forks.is_none() {
            // Every slot, taken or not (the bits change later; the filter below reads them).
            let mut forks: HashMap<u64, Vec<usize>> = HashMap::new();
            for i in 0..self.slots {
                let slot = self.slot(i)?;
                if slot.parent_hash != 0 {
                    forks.entry(slot.parent_hash).or_default().push(i);
                }
            }
            self.forks = Some(forks);
        }
        let hash = id_hash(parent);
        Ok(self
            .forks
            .as_ref()
            .and_then(|f| f.get(&hash))
            .map(|slots| {
                slots
                    .iter()
                    .copied()
                    .filter(|&i| !self.is_taken(i))
                    .collect()
            })
            .unwrap_or_default())
    }
}
