//! Loading a layout-3 chain (`docs/FORMAT.md` §5.2) into the catalog: the newest file's
//! index names every live session's entry, in whichever file of the chain holds it, and each
//! entry names the runs of its locations.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::codec::checkpoint::indexed::{Entry, Regions, Slot, decode_entry, id_hash};
use crate::codec::checkpoint::{CHECKPOINT_HEADER_LEN, LocRun};
use crate::model::SessionHeader;
use crate::storage::FileView;
use crate::store::catalog::entries::{Entries, Persisted, SessionEntry};
use crate::store::catalog::locations::{Locations, MappedRun};
use crate::store::checkpoint::files::{BodyParts, LoadedBody, RestoreError};

/// One file of the chain, mapped.
struct ChainFile<'a> {
    view: &'a FileView,
    path: &'a Arc<str>,
    regions: Regions,
}

impl ChainFile<'_> {
    fn body(&self) -> &[u8] {
        self.view.get(CHECKPOINT_HEADER_LEN..).unwrap_or_default()
    }

    /// A run of this file as the catalog keeps it: mapped, checked on first use.
    fn run(
        &self,
        run: &crate::codec::checkpoint::indexed::RunRef,
    ) -> Result<MappedRun, RestoreError> {
        let (start, _) = self.regions.run_place(run)?;
        Ok(MappedRun {
            view: self.view.clone(),
            body_at: CHECKPOINT_HEADER_LEN,
            run: LocRun {
                start,
                count: run.count,
                crc: run.crc,
            },
            path: Arc::clone(self.path),
        })
    }
}

/// The files of a chain, by generation.
struct Chain<'a>(BTreeMap<u64, ChainFile<'a>>);

impl Chain<'_> {
    fn file(&self, generation: u64) -> Result<&ChainFile<'_>, RestoreError> {
        self.0.get(&generation).ok_or(RestoreError::Inconsistent(
            "a checkpoint names a file outside its chain",
        ))
    }

    /// The entry a slot names, checked and decoded.
    fn entry(&self, slot: &Slot) -> Result<Entry, RestoreError> {
        let file = self.file(slot.generation)?;
        let damaged = |_| RestoreError::EntryDamaged;
        let entry = decode_entry(file.regions.entry(file.body(), slot).map_err(damaged)?)
            .map_err(damaged)?;
        if id_hash(&entry.id) != slot.id_hash || entry.state.next_seq() != slot.next_seq {
            return Err(RestoreError::EntryDamaged);
        }
        Ok(entry)
    }
}

/// Applies a layout-3 chain (`bodies` oldest first, every one layout 3) to an empty catalog.
pub(super) fn apply(bodies: &[LoadedBody], catalog: &mut Entries) -> Result<(), RestoreError> {
    let chain = Chain(
        bodies
            .iter()
            .filter_map(|b| match &b.parts {
                BodyParts::Indexed(regions) => Some((
                    b.generation,
                    ChainFile {
                        view: &b.view,
                        path: &b.path,
                        regions: *regions,
                    },
                )),
                BodyParts::Table(_) => None,
            })
            .collect(),
    );
    let newest = chain
        .0
        .values()
        .next_back()
        .ok_or(RestoreError::Inconsistent("an empty chain"))?;
    let mut entries = Vec::with_capacity(newest.regions.slots);
    for i in 0..newest.regions.slots {
        let slot = newest.regions.slot(newest.body(), i)?;
        entries.push((slot, chain.entry(&slot)?));
    }
    // Parents before their forks.
    entries.sort_by_key(|(_, e)| e.created_lsn);
    catalog.sessions.reserve(entries.len());
    for (slot, entry) in entries {
        restore(&chain, slot, entry, catalog)?;
    }
    Ok(())
}

/// Puts one entry into the catalog (its parent first); its locations stay in the files.
fn restore(
    chain: &Chain<'_>,
    slot: Slot,
    entry: Entry,
    catalog: &mut Entries,
) -> Result<(), RestoreError> {
    let header =
        SessionHeader::from_json(&entry.header_json).map_err(|_| RestoreError::EntryDamaged)?;
    let inherited = entry.parent.as_ref().map_or(0, |(_, n)| *n);
    if entry.loc_base != inherited || header.id != entry.id {
        return Err(RestoreError::EntryDamaged);
    }
    let damaged = |_| RestoreError::RunDamaged;
    let mut locs = match &entry.parent {
        Some((parent, n)) => catalog
            .sessions
            .get_mut(parent)
            .ok_or("a fork's parent is missing")?
            .locs
            .share_prefix(*n)
            .map_err(damaged)?,
        None => Locations::default(),
    };
    for run in &entry.runs {
        locs.append_run(chain.file(run.generation)?.run(run)?)
            .map_err(damaged)?;
    }
    if locs.len() != entry.state.next_seq() {
        return Err("a session's locations do not match its length".into());
    }
    if catalog.sessions.contains_key(&entry.id) {
        return Err("a session twice in an index".into());
    }
    let checkpointed_locs = locs.len();
    catalog.sessions.insert(
        entry.id,
        SessionEntry {
            header,
            state: entry.state,
            locs,
            parent: entry.parent,
            created_lsn: entry.created_lsn,
            checkpointed_locs,
            dirty: false,
            persisted: Some(Persisted {
                slot,
                runs: entry.runs,
            }),
        },
    );
    Ok(())
}
