//! The sessions the catalog has not decoded (`docs/DESIGN.md` §3.5): the index of the
//! checkpoint the open loaded, mapped, over the files of its chain that hold the entries and
//! runs it names. A session leaves it (is *taken*) when it is first read or written — then
//! the catalog holds it decoded — or deleted; an open costs the index, not the sessions.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::codec::CorruptionKind;
use crate::codec::checkpoint::indexed::{
    Entry, IndexedWriter, Regions, RunRef, SLOT_LEN, SLOTS_PER_BLOCK, Slot, decode_entry, entry_id,
    id_hash, lower_bound, split_entry,
};
use crate::codec::checkpoint::{CHECKPOINT_HEADER_LEN, LocRun};
use crate::storage::FileView;
use crate::store::catalog::locations::MappedRun;
use crate::{Error, Result};

/// One checkpoint file of the chain, mapped.
#[derive(Debug)]
pub(crate) struct ColdFile {
    pub(crate) view: FileView,
    pub(crate) path: Arc<str>,
    pub(crate) regions: Regions,
}

impl ColdFile {
    fn body(&self) -> &[u8] {
        self.view.get(CHECKPOINT_HEADER_LEN..).unwrap_or_default()
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
    slots: usize,
    /// One bit per slot: its session was taken (decoded into the catalog, or deleted).
    taken: Vec<u64>,
    taken_count: usize,
    /// The slots of forks by their parent's id hash, built at the first deletion that asks.
    forks: Option<HashMap<u64, Vec<usize>>>,
    /// One bit per index block: checked against its CRC (readers set them under a shared
    /// lock; a block checked twice costs time, not correctness).
    checked: Vec<AtomicU64>,
}

impl Cold {
    /// The index of the newest of `files` over them all; `None` without files.
    pub(crate) fn new(files: BTreeMap<u64, ColdFile>) -> Option<Self> {
        let (&newest, file) = files.iter().next_back()?;
        let slots = file.regions.slots;
        Some(Self {
            newest,
            slots,
            taken: vec![0; slots.div_ceil(64)],
            taken_count: 0,
            forks: None,
            checked: (0..file.regions.blocks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
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

    /// Slot `i` of the index.
    ///
    /// # Errors
    /// `Corruption` for a slot past the index (the index's CRC was checked at open).
    pub(crate) fn slot(&self, i: usize) -> Result<Slot> {
        let index = self.index()?;
        let block = i / SLOTS_PER_BLOCK;
        let (word, bit) = (block / 64, 1u64 << (block % 64));
        let checked = self.checked.get(word);
        if checked.is_none_or(|w| w.load(Ordering::Relaxed) & bit == 0) {
            index
                .regions
                .check_block(index.body(), block)
                .map_err(|_| {
                    Error::corruption(
                        &index.path,
                        (CHECKPOINT_HEADER_LEN
                            + index.regions.slots_start
                            + block * SLOTS_PER_BLOCK * SLOT_LEN) as u64,
                        CorruptionKind::CheckpointIndex,
                    )
                })?;
            if let Some(w) = checked {
                w.fetch_or(bit, Ordering::Relaxed);
            }
        }
        index
            .regions
            .slot(index.body(), i)
            .map_err(|_| index.damaged((i * SLOT_LEN) as u64))
    }

    /// The checked bytes of slot `i`'s entry.
    fn entry_bytes(&self, slot: &Slot) -> Result<&[u8]> {
        let file = self.file(slot.generation)?;
        file.regions
            .entry(file.body(), slot)
            .map_err(|_| file.damaged(slot.entry_at))
    }

    /// The id of slot `i`'s session (its entry checked, nothing else decoded).
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`) when the entry is damaged.
    pub(crate) fn id(&self, i: usize) -> Result<&str> {
        let slot = self.slot(i)?;
        let bytes = self.entry_bytes(&slot)?;
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
        let hash = id_hash(id);
        let mut i = lower_bound(self.slots, hash, |i| self.slot(i))?;
        while i < self.slots && self.slot(i)?.id_hash == hash {
            if !self.is_taken(i) && self.id(i)? == id {
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
        Ok((slot, self.entry_bytes(&slot)?))
    }

    /// Slot `i` and its entry, checked (CRC, id hash, length) and decoded.
    ///
    /// # Errors
    /// `Corruption` (`CheckpointEntry`) when the entry is damaged.
    pub(crate) fn entry(&self, i: usize) -> Result<(Slot, Entry)> {
        let slot = self.slot(i)?;
        let file = self.file(slot.generation)?;
        let damaged = || file.damaged(slot.entry_at);
        let entry = decode_entry(self.entry_bytes(&slot)?).map_err(|_| damaged())?;
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
            view: file.view.clone(),
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

    /// Slot `i` and the runs its entry names (nothing else decoded).
    ///
    /// # Errors
    /// `Corruption` for a damaged entry.
    pub(crate) fn runs_of(&self, i: usize) -> Result<(Slot, Vec<RunRef>)> {
        let slot = self.slot(i)?;
        let file = self.file(slot.generation)?;
        let (_, runs, _) =
            split_entry(self.entry_bytes(&slot)?).map_err(|_| file.damaged(slot.entry_at))?;
        Ok((slot, runs))
    }

    /// Writes slot `i`'s session into a full checkpoint without decoding it: its entry's
    /// fields as they are, its locations (each run checked) into one new run.
    ///
    /// # Errors
    /// `Corruption` for a damaged entry or run; the inner error is the writer's.
    pub(crate) fn copy_into(
        &self,
        i: usize,
        w: &mut IndexedWriter,
    ) -> Result<std::result::Result<(), &'static str>> {
        let slot = self.slot(i)?;
        let file = self.file(slot.generation)?;
        let (loc_base, runs, core) =
            split_entry(self.entry_bytes(&slot)?).map_err(|_| file.damaged(slot.entry_at))?;
        let mut pieces = Vec::with_capacity(runs.len());
        let mut count = 0;
        for run in &runs {
            let holder = self.file(run.generation)?;
            let bytes = holder.regions.run(holder.body(), run).map_err(|_| {
                Error::corruption(
                    &holder.path,
                    run.start.saturating_add(CHECKPOINT_HEADER_LEN as u64),
                    CorruptionKind::CheckpointLocations,
                )
            })?;
            pieces.push(bytes);
            count += run.count;
        }
        Ok(w.copy(&slot, loc_base, core, count, &pieces).map(|_| ()))
    }

    /// The slots not taken of the forks of `parent` (by its id hash: a fork of another parent
    /// of the same hash is among them).
    ///
    /// # Errors
    /// `Corruption` for a damaged slot.
    pub(crate) fn forks_of(&mut self, parent: &str) -> Result<Vec<usize>> {
        if self.forks.is_none() {
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
