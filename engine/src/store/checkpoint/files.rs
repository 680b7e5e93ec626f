//! Checkpoint files and the catalog (`docs/DESIGN.md` §3.5): which sessions and locations a
//! checkpoint holds, how a chain of them rebuilds the catalog, and the files themselves
//! (listed, read whole and checked, replaced atomically). The bytes are `codec::checkpoint`'s.

use std::sync::Arc;

use crate::codec::CorruptionKind;
use crate::codec::checkpoint::arrays::{
    ArrayOut, ArrayRef, ArraysOut, HeldArrays, decode_values, encode_values,
};
use crate::codec::checkpoint::indexed::{IndexedWriter, Regions, RunRef, Slot};
use crate::codec::checkpoint::{
    Body, BodyLayout, CHECKPOINT_HEADER_LEN, CHECKPOINTS_DIR, CheckpointHeader, CheckpointMeta,
    SessionRef, SessionSnap, checked_part, checkpoint_path, decode_body, decode_header,
    parse_checkpoint_name,
};
use crate::model::{SessionHeader, SessionState};
use crate::storage::Checked;
use crate::storage::{OpenMode, Replacement, Storage, StorageFile};
use crate::store::catalog::cold::{Cold, ColdFile};
use crate::store::catalog::entries::Entries;
use crate::store::catalog::entries::{ArrayPrefixes, Persisted, SessionEntry};
use crate::store::catalog::locations::{Locations, MappedRun};
use crate::store::checkpoint::pages;
use crate::store::checkpoint::view::BodyView;
use crate::{Error, Result};

/// Why [`apply`] could not put a checkpoint body into the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RestoreError {
    /// A location run had to be decoded and failed its CRC: damage of the checkpoint, after
    /// which the open replays the whole log instead.
    RunDamaged,
    /// The body does not fit the chain it is applied on.
    Inconsistent(&'static str),
}

impl RestoreError {
    /// The corruption kind an open reports for it.
    pub(crate) fn kind(self) -> CorruptionKind {
        match self {
            RestoreError::RunDamaged => CorruptionKind::CheckpointLocations,
            RestoreError::Inconsistent(why) => CorruptionKind::Inconsistent(why),
        }
    }
}

impl From<&'static str> for RestoreError {
    fn from(why: &'static str) -> Self {
        RestoreError::Inconsistent(why)
    }
}

/// A checkpoint body as an open uses it, and the file bytes it is in.
#[derive(Debug)]
pub(crate) struct LoadedBody {
    pub(crate) generation: u64,
    /// The body layout its header names.
    pub(crate) layout: BodyLayout,
    pub(crate) parts: BodyParts,
    pub(crate) view: BodyView,
    pub(crate) path: Arc<str>,
}

/// What was read of a body, by its layout.
#[derive(Debug)]
pub(crate) enum BodyParts {
    /// Layout 2: the table, decoded.
    Table(Body),
    /// Layout 3: where the index, entries and runs are (nothing decoded).
    Indexed(Regions),
}

/// What a body's read checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyCheck {
    /// The table or index against the header's CRC: the body whose index is used.
    Whole,
    /// The regions only: an earlier link of a layout-3 or layout-4 chain, whose pages,
    /// entries and runs the newest index names (each checked against its own CRC when read).
    Regions,
}

/// What a checkpoint holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CheckpointKind {
    /// The sessions changed since the previous checkpoint and the index of every one: a link
    /// of the chain (or a full one, when the chain says one is due).
    Delta,
    /// Every session, naming no earlier checkpoint: what a compaction writes first.
    Full,
}

/// An encoded body (layout 5) and where each session written into it now persists.
pub(crate) struct Encoded {
    pub(crate) body: Vec<u8>,
    /// Sessions whose entry this body holds, with their slot and runs.
    pub(crate) written: Vec<(String, Persisted)>,
}

/// Encodes the body of checkpoint `generation`: every session (`full`), or the changed ones
/// with the locations added since the last checkpoint and the slots of the others carried
/// over (a delta).
pub(crate) fn encode(catalog: &Entries, kind: CheckpointKind, generation: u64) -> Result<Encoded> {
    let too_large = |why: &'static str| {
        Error::io(
            "encode checkpoint",
            CHECKPOINTS_DIR,
            std::io::Error::other(why),
        )
    };
    let mut w = IndexedWriter::new(generation);
    let mut written = Vec::new();
    let mut to_write: Vec<(&String, &SessionEntry, Option<&[_]>, ArrayPrefixes<'_>)> = Vec::new();
    // The slots of the index besides the old pages a delta names or merges into.
    let mut fresh: Vec<Slot> = Vec::new();
    let mut old = Vec::new();
    if let Some(cold) = catalog.cold() {
        // Sessions not decoded since the index was read are unchanged: a delta keeps their
        // slots (naming the pages they are in where they are), a full checkpoint copies their
        // entries and locations as bytes.
        match kind {
            CheckpointKind::Delta => {
                old = cold.old_pages()?;
                if old.is_empty() {
                    // An index without pages (layout 3: its chain's next checkpoint is full,
                    // so this is for safety): each slot kept on its own.
                    for i in cold.untaken() {
                        fresh.push(cold.slot(i)?);
                    }
                }
            }
            CheckpointKind::Full => {
                for i in cold.untaken() {
                    fresh.push(cold.copy_into(i, &mut w)?.map_err(too_large)?);
                }
            }
        }
    }
    for (id, e) in &catalog.sessions {
        let (earlier, arrays) = match (&e.persisted, kind) {
            (Some(p), CheckpointKind::Delta) if !e.dirty => {
                fresh.push(p.slot);
                continue;
            }
            (Some(p), CheckpointKind::Delta) => (
                p.runs_covering(e.checkpointed_locs),
                p.array_prefixes(&e.state),
            ),
            _ => (None, ArrayPrefixes::default()),
        };
        to_write.push((id, e, earlier, arrays));
    }
    // In creation order: the same catalog gives the same bytes (the map's order is random).
    to_write.sort_unstable_by_key(|(id, e, _, _)| (e.created_lsn, *id));
    for (id, e, earlier, prefixes) in to_write {
        let (slot, persisted) = write_entry(&mut w, catalog, id, e, earlier, prefixes)?;
        fresh.push(slot);
        written.push((id.clone(), persisted));
    }
    let read = |p| {
        catalog
            .cold()
            .map_or_else(|| Ok(Vec::new()), |c| c.page_slots(p))
    };
    pages::write_index(&mut w, old, fresh, read)?.map_err(too_large)?;
    Ok(Encoded {
        body: w.finish().map_err(too_large)?,
        written,
    })
}

/// Writes session `id`'s entry into `w`: its locations after the runs the chain holds
/// (`earlier`, when it names them), its arrays after the runs it names (`prefixes`).
fn write_entry(
    w: &mut IndexedWriter,
    catalog: &Entries,
    id: &str,
    e: &SessionEntry,
    earlier: Option<&[RunRef]>,
    prefixes: ArrayPrefixes<'_>,
) -> Result<(Slot, Persisted)> {
    let too_large = |why: &'static str| {
        Error::io(
            "encode checkpoint",
            CHECKPOINTS_DIR,
            std::io::Error::other(why),
        )
    };
    let inherited = e.parent.as_ref().map_or(0, |(_, n)| *n);
    // Without runs the chain holds, every own location is written here.
    let (runs, from) = match earlier {
        Some(runs) => (runs, e.checkpointed_locs.max(inherited)),
        None => (&[][..], inherited),
    };
    let header_json = e.header.to_json();
    let r = SessionRef {
        id,
        header_json: &header_json,
        created_lsn: e.created_lsn,
        parent: e.parent.as_ref().map(|(p, n)| (p.as_str(), *n)),
        loc_base: inherited,
        state: &e.state,
    };
    let (count, pieces) = e.locs.pieces_from(from)?;
    let pieces: Vec<&[u8]> = pieces.iter().map(|p| &**p).collect();
    // The arrays: the runs the chain holds of their first values, then the rest here.
    debug_assert!(
        prefixes_hold(catalog, &prefixes, &e.state),
        "{id}: the arrays' runs a delta names are the first values of its arrays"
    );
    let seqs = e.state.surface.seqs();
    let marks = e.state.turns.encoded();
    let surface_new = encode_values(seqs.get(held(prefixes.surface)..).unwrap_or_default());
    let turns_new = encode_values(marks.get(held(prefixes.turns)..).unwrap_or_default());
    let arrays = ArraysOut {
        surface: ArrayOut {
            earlier: prefixes.surface.map_or(&[], |a| &a.runs),
            pieces: &[&surface_new],
        },
        turns: ArrayOut {
            earlier: prefixes.turns.map_or(&[], |a| &a.runs),
            pieces: &[&turns_new],
        },
    };
    let (slot, runs, arrays) = w
        .entry(&r, e.header.created_at, runs, count, &pieces, arrays)
        .map_err(too_large)?;
    let persisted = Persisted {
        slot,
        runs,
        arrays: Some(HeldArrays {
            arrays,
            replace_generation: e.state.surface.replace_generation(),
        }),
    };
    Ok((slot, persisted))
}

/// How many of an array's values the chain holds (none without a prefix named).
fn held(prefix: Option<&ArrayRef>) -> usize {
    prefix.map_or(0, |a| usize::try_from(a.len).unwrap_or(usize::MAX))
}

/// Whether the runs a delta is to name hold exactly the first values of `state`'s arrays
/// (read back from the chain; for `debug_assert!`: a change of the surface that kept its
/// replace generation would break the rule [`Persisted::array_prefixes`] relies on).
fn prefixes_hold(catalog: &Entries, prefixes: &ArrayPrefixes<'_>, state: &SessionState) -> bool {
    let Some(cold) = catalog.cold() else {
        return prefixes.surface.is_none() && prefixes.turns.is_none();
    };
    let holds = |prefix: Option<&ArrayRef>, now: &[u64]| {
        prefix.is_none_or(|a| {
            let bytes: Option<Vec<&[u8]>> = a.runs.iter().map(|r| cold.array_run(r).ok()).collect();
            bytes.is_some_and(|b| now.get(..held(prefix)) == Some(&decode_values(&b)[..]))
        })
    };
    holds(prefixes.surface, state.surface.seqs()) && holds(prefixes.turns, state.turns.encoded())
}

/// Puts a snapshot into the catalog (parents must be loaded first); its locations stay in
/// the file (`run`), checked and decoded on first use.
fn restore(
    snap: SessionSnap,
    run: MappedRun,
    catalog: &mut Entries,
) -> std::result::Result<(), RestoreError> {
    let header = SessionHeader::from_json(&snap.header_json)
        .map_err(|_| "a session header does not parse")?;
    let inherited = snap.parent.as_ref().map_or(0, |(_, n)| *n);
    let damaged = |_| RestoreError::RunDamaged;
    let mut locs = if snap.loc_base == inherited {
        // Every own location is here: start from the shared prefix, or from nothing.
        match &snap.parent {
            Some((parent, n)) => catalog
                .sessions
                .get_mut(parent)
                .ok_or("a fork's parent is missing")?
                .locs
                .share_prefix(*n)
                .map_err(damaged)?,
            None => Locations::default(),
        }
    } else {
        // A delta: the earlier checkpoints of the chain hold the first `loc_base`.
        let earlier = catalog
            .sessions
            .remove(&snap.id)
            .ok_or("a delta extends a session the chain does not hold")?;
        if earlier.locs.len() != snap.loc_base {
            return Err("a delta does not continue the session's locations".into());
        }
        earlier.locs
    };
    locs.append_run(run).map_err(damaged)?;
    if locs.len() != snap.state.next_seq() {
        return Err("a session's locations do not match its length".into());
    }
    let checkpointed_locs = locs.len();
    catalog.sessions.insert(
        snap.id,
        SessionEntry {
            header,
            state: snap.state,
            locs,
            parent: snap.parent,
            created_lsn: snap.created_lsn,
            checkpointed_locs,
            dirty: false,
            persisted: None,
            decoded_at: None,
        },
    );
    Ok(())
}

/// Applies a layout-2 body to the catalog: deletions, then sessions in creation order.
pub(super) fn apply_table(
    loaded: LoadedBody,
    catalog: &mut Entries,
) -> std::result::Result<(), RestoreError> {
    let LoadedBody {
        parts, view, path, ..
    } = loaded;
    let BodyParts::Table(body) = parts else {
        return Err("an indexed body in a layout-2 chain".into());
    };
    // A layout-2 body is always read whole, so mapped already.
    let view = view
        .view()
        .map_err(|_| RestoreError::Inconsistent("a layout-2 body not read"))?
        .clone();
    for id in &body.deleted {
        // Layout 2 is decoded whole: nothing to read from an index, so nothing to fail.
        catalog
            .delete(id)
            .map_err(|_| RestoreError::Inconsistent("a deletion in a layout-2 chain"))?;
    }
    let mut sessions = body.sessions;
    sessions.sort_by_key(|s| s.created_lsn);
    // Sized once: growing the map by doubling rehashed it a dozen times for 10k sessions.
    catalog.sessions.reserve(sessions.len());
    for snap in sessions {
        let run = MappedRun {
            view: view.clone(),
            body_at: CHECKPOINT_HEADER_LEN,
            run: snap.locs,
            path: Arc::clone(&path),
        };
        restore(snap, run, catalog)?;
    }
    Ok(())
}

/// The index of the chain whose files are `generations` (its newest last), mapped: what the
/// catalog holds as its sessions not decoded after a checkpoint.
///
/// # Errors
/// I/O errors opening or mapping a file, or one that does not check out.
pub(crate) fn chain_index(
    storage: &dyn Storage,
    generations: std::ops::RangeInclusive<u64>,
) -> Result<Cold> {
    let newest = *generations.end();
    let mut files = std::collections::BTreeMap::new();
    for g in generations {
        let unusable = |u: Unusable| {
            Error::io(
                "map a checkpoint",
                checkpoint_path(g),
                std::io::Error::other(u.why),
            )
        };
        let opened = open_header(storage, g).map_err(unusable)?;
        let check = if g == newest {
            BodyCheck::Whole
        } else {
            BodyCheck::Regions
        };
        let loaded = opened.body(check).map_err(unusable)?;
        if let BodyParts::Indexed(regions) = loaded.parts {
            files.insert(
                g,
                ColdFile {
                    view: loaded.view,
                    path: loaded.path,
                    regions,
                },
            );
        }
    }
    Cold::new(files).map_err(|why| {
        Error::io(
            "map a checkpoint",
            checkpoint_path(newest),
            std::io::Error::other(why),
        )
    })
}

/// Writes a checkpoint atomically and durably.
pub(crate) fn write(storage: &dyn Storage, meta: &CheckpointMeta, body: &[u8]) -> Result<()> {
    let layout = BodyLayout::CURRENT;
    let path = checkpoint_path(meta.generation);
    let io = |op: &'static str| move |e| Error::io(op, checkpoint_path(meta.generation), e);
    let file = Replacement::create(storage, &path).map_err(io("create"))?;
    let written = file
        .file()
        .write_at(&meta.encode_header(layout, body), 0)
        .and_then(|()| file.file().write_at(body, CHECKPOINT_HEADER_LEN as u64));
    if let Err(e) = written {
        // The temp file removed first, so that the figure of free space is true.
        drop(file);
        let needed = (CHECKPOINT_HEADER_LEN + body.len()) as u64;
        return Err(Error::write_failed(
            storage,
            "write a checkpoint",
            path,
            e,
            needed,
        ));
    }
    file.commit().map_err(io("replace"))
}

/// Which checkpoint files [`remove`] removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Older {
    /// Those of a generation below this one.
    Than(u64),
    /// Every one.
    All,
}

/// Removes checkpoint files (`which`), then syncs their directory: the one way checkpoints go.
/// Whether a failure matters is the caller's: compaction's and salvage's must go (they may hold
/// what was erased or cut), a chain's obsolete links need not. Returns how many went.
///
/// # Errors
/// I/O errors of listing, removing or syncing (the files before the failure are gone).
pub(crate) fn remove(storage: &dyn Storage, which: Older) -> Result<u64> {
    let mut removed = 0;
    for generation in list(storage)?.into_iter().filter(|&g| match which {
        Older::Than(keep_from) => g < keep_from,
        Older::All => true,
    }) {
        let path = checkpoint_path(generation);
        storage.remove_file(&path)?;
        removed += 1;
    }
    storage.sync_directory(CHECKPOINTS_DIR)?;
    Ok(removed)
}

/// Generations present, oldest first.
pub(crate) fn list(storage: &dyn Storage) -> Result<Vec<u64>> {
    let names = storage.list_dir(CHECKPOINTS_DIR)?;
    let mut gens: Vec<u64> = names
        .iter()
        .filter_map(|n| parse_checkpoint_name(n))
        .collect();
    gens.sort_unstable();
    Ok(gens)
}

/// Why a checkpoint file is unusable.
#[derive(Debug)]
pub(crate) struct Unusable {
    pub(crate) why: String,
    /// The file was gone when read: retention removed it after it was listed (a reader beside
    /// a live writer). Not damage.
    pub(crate) gone: bool,
}

/// A checkpoint file whose header checks out; its body is read only if its chain is used.
pub(crate) struct Opened {
    pub(crate) header: CheckpointHeader,
    file: Arc<dyn StorageFile>,
    /// The file's length when its header was read.
    len: u64,
    path: String,
}

/// Opens one checkpoint file and checks its header (64 bytes read).
pub(crate) fn open_header(
    storage: &dyn Storage,
    generation: u64,
) -> std::result::Result<Opened, Unusable> {
    let path = checkpoint_path(generation);
    let no_header = |why: String| Unusable { why, gone: false };
    let file = storage.open(&path, OpenMode::Read).map_err(|e| Unusable {
        gone: e.kind() == std::io::ErrorKind::NotFound,
        ..no_header(format!("{path}: {e}"))
    })?;
    let mut head = [0u8; CHECKPOINT_HEADER_LEN];
    let len = file.len().map_err(|e| no_header(format!("{path}: {e}")))?;
    if len < CHECKPOINT_HEADER_LEN as u64 {
        return Err(no_header(format!("{path}: short header")));
    }
    file.read_at(&mut head, 0)
        .map_err(|e| no_header(format!("{path}: {e}")))?;
    let header = decode_header(&head).map_err(|why| no_header(format!("{path}: {why}")))?;
    if header.meta.generation != generation {
        return Err(no_header(format!(
            "{path}: generation {} in a file named {generation}",
            header.meta.generation
        )));
    }
    Ok(Opened {
        header,
        file: Arc::from(file),
        len,
        path,
    })
}

impl Opened {
    /// The body, checked against the header's length and (`BodyCheck::Whole`) its table or
    /// index against the CRC; a layout-2 table is decoded, a layout-3 or -4 body's regions read.
    /// The location runs and entries are not read (each is checked on first use). Read
    /// through the file's view (a map on real files: checkpoint files are never changed once
    /// renamed into place), so the raw bytes are not copied.
    pub(crate) fn body(&self, check: BodyCheck) -> std::result::Result<LoadedBody, Unusable> {
        if check == BodyCheck::Regions && self.header.layout != BodyLayout::Table {
            return self.regions_only();
        }
        let path = &self.path;
        let unusable = |why: String| Unusable { why, gone: false };
        let view = self
            .file
            .view()
            .map_err(|e| unusable(format!("{path}: {e}")))?;
        let body = view
            .get(CHECKPOINT_HEADER_LEN..)
            .filter(|b| b.len() as u64 == self.header.body_len)
            .ok_or_else(|| unusable(format!("{path}: body length mismatch")))?;
        let layout = self.header.layout;
        if (check == BodyCheck::Whole || layout == BodyLayout::Table)
            && crc32fast::hash(checked_part(body)) != self.header.body_crc
        {
            return Err(unusable(format!("{path}: body checksum mismatch")));
        }
        let parts = match layout {
            BodyLayout::Table => decode_body(body).map(BodyParts::Table),
            _ => Regions::of(body, layout).map(BodyParts::Indexed),
        }
        .map_err(|why| unusable(format!("{path}: body: {why}")))?;
        Ok(LoadedBody {
            generation: self.header.meta.generation,
            layout,
            parts,
            view: BodyView::mapped(view),
            path: Arc::from(path.as_str()),
        })
    }

    /// An earlier file of a layout-3 or -4 chain: its length and regions checked from the
    /// body's first bytes, read with one `pread`; the file mapped when an entry, page or run
    /// in it is first read (`BodyView`).
    fn regions_only(&self) -> std::result::Result<LoadedBody, Unusable> {
        let path = &self.path;
        let unusable = |why: String| Unusable { why, gone: false };
        let body_len = self
            .len
            .checked_sub(CHECKPOINT_HEADER_LEN as u64)
            .filter(|&n| n == self.header.body_len)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| unusable(format!("{path}: body length mismatch")))?;
        let mut prefix = [0u8; Regions::PREFIX_MAX];
        let prefix = &mut prefix[..body_len.min(Regions::PREFIX_MAX)];
        self.file
            .read_at(prefix, CHECKPOINT_HEADER_LEN as u64)
            .map_err(|e| unusable(format!("{path}: {e}")))?;
        let regions = Regions::of_prefix(prefix, body_len, self.header.layout)
            .map_err(|why| unusable(format!("{path}: body: {why}")))?;
        let path: Arc<str> = Arc::from(path.as_str());
        Ok(LoadedBody {
            generation: self.header.meta.generation,
            layout: self.header.layout,
            parts: BodyParts::Indexed(regions),
            view: BodyView::on_use(Arc::clone(&self.file), Arc::clone(&path)),
            path,
        })
    }
}
