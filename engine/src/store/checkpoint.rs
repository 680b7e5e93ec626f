//! The persisted delta checkpoint (`docs/FORMAT.md` §5): every changed session's state and
//! locations as of a log position, so that open replays only the log after it.
//!
//! Files are `checkpoints/<generation, 20 digits>.ckpt`: a 64-byte header (magic, versions,
//! header checksum, generation, base generation, covered log position, the LSN and checksum of the last
//! record covered, body checksum and length) and a bincode body. A *full* checkpoint (base 0)
//! holds every session; a *delta* holds the sessions changed since its base and the ids
//! deleted since. Written as temp file, sync, rename, directory sync — and only after the
//! log is synced up to the position it covers, so it is never ahead of the durable log.

use serde::{Deserialize, Serialize};

use super::catalog::{Catalog, SessionEntry};
use super::segments::EventLoc;
use crate::model::{
    OpenStep, PendingCall, RepairState, SessionHeader, SessionState, SharedVec, SurfaceManager,
    TurnMarks,
};
use crate::storage::{OpenMode, Storage};
use crate::{Error, Result};

/// The checkpoint magic.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"SESSDBCP";
/// The checkpoint file format version.
pub const CHECKPOINT_FORMAT_VERSION: u16 = 1;
/// The layout version of the bincode body; a change of the body's types bumps it.
pub const CHECKPOINT_BODY_LAYOUT: u16 = 1;
/// Bytes in a checkpoint header.
pub const CHECKPOINT_HEADER_LEN: usize = 64;
/// The directory holding checkpoints.
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// `last_record_lsn` when the log was empty.
const NO_RECORD: u64 = u64::MAX;

/// What a checkpoint covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointMeta {
    /// Monotonic generation (also the file name).
    pub generation: u64,
    /// The generation this is a delta on; 0 for a full checkpoint.
    pub base: u64,
    /// The log position after the last record covered.
    pub covered_lsn: u64,
    /// LSN and frame checksum of the last record covered.
    pub last_record: Option<(u64, u32)>,
}

impl CheckpointMeta {
    /// The 64 header bytes for a body.
    pub fn encode_header(&self, body: &[u8]) -> [u8; CHECKPOINT_HEADER_LEN] {
        let mut h = [0u8; CHECKPOINT_HEADER_LEN];
        h[0..8].copy_from_slice(&CHECKPOINT_MAGIC);
        h[8..10].copy_from_slice(&CHECKPOINT_FORMAT_VERSION.to_le_bytes());
        h[10..12].copy_from_slice(&CHECKPOINT_BODY_LAYOUT.to_le_bytes());
        h[16..24].copy_from_slice(&self.generation.to_le_bytes());
        h[24..32].copy_from_slice(&self.base.to_le_bytes());
        h[32..40].copy_from_slice(&self.covered_lsn.to_le_bytes());
        let (lsn, crc) = self.last_record.unwrap_or((NO_RECORD, 0));
        h[40..48].copy_from_slice(&lsn.to_le_bytes());
        h[48..52].copy_from_slice(&crc.to_le_bytes());
        h[52..56].copy_from_slice(&crc32fast::hash(body).to_le_bytes());
        h[56..64].copy_from_slice(&(body.len() as u64).to_le_bytes());
        let crc = header_crc(&h);
        h[12..16].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

/// CRC-32 of the header without its own CRC field (bytes 12..16).
fn header_crc(h: &[u8]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&h[..12]);
    c.update(&h[16..CHECKPOINT_HEADER_LEN]);
    c.finalize()
}

/// The body of a checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Body {
    pub(crate) sessions: Vec<SessionSnap>,
    pub(crate) deleted: Vec<String>,
}

/// One session in a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SessionSnap {
    id: String,
    header_json: Vec<u8>,
    created_lsn: u64,
    parent: Option<(String, u64)>,
    own_locs: Vec<EventLoc>,
    next_seq: u64,
    last_time: Option<i64>,
    surface: Vec<u64>,
    replace_generation: u64,
    open_turn: Option<Option<String>>,
    open_step: Option<(Option<String>, Option<String>)>,
    pending: Vec<(String, Option<String>, Option<u64>)>,
    turns: Vec<u64>,
}

fn s(v: &Option<Box<str>>) -> Option<String> {
    v.as_deref().map(str::to_owned)
}

fn b(v: Option<String>) -> Option<Box<str>> {
    v.map(String::into_boxed_str)
}

/// The snapshot of one session.
pub(crate) fn snapshot(id: &str, e: &SessionEntry) -> SessionSnap {
    let shared = e.parent.as_ref().map_or(0, |(_, n)| *n);
    let r = &e.state.repair;
    SessionSnap {
        id: id.to_owned(),
        header_json: e.header.to_json(),
        created_lsn: e.created_lsn,
        parent: e.parent.clone(),
        own_locs: e.locs.suffix(shared),
        next_seq: e.state.next_seq,
        last_time: e.state.last_time,
        surface: e.state.surface.seqs().to_vec(),
        replace_generation: e.state.surface.replace_generation(),
        open_turn: r.open_turn.as_ref().map(s),
        open_step: r.open_step.as_ref().map(|o| (s(&o.turn), s(&o.step))),
        pending: r
            .pending
            .iter()
            .map(|p| (p.call_id.clone(), s(&p.step), p.tool_call_seq))
            .collect(),
        turns: e.state.turns.encoded().to_vec(),
    }
}

/// Puts a snapshot into the catalog (parents must be loaded first).
fn restore(snap: SessionSnap, catalog: &mut Catalog) -> std::result::Result<(), &'static str> {
    let header = SessionHeader::from_json(&snap.header_json)
        .map_err(|_| "a session header does not parse")?;
    let mut locs = match &snap.parent {
        Some((parent, n)) => catalog
            .sessions
            .get_mut(parent)
            .ok_or("a fork's parent is missing")?
            .locs
            .share_prefix(*n),
        None => SharedVec::default(),
    };
    for loc in snap.own_locs {
        locs.push(loc);
    }
    if locs.len() != snap.next_seq {
        return Err("a session's locations do not match its length");
    }
    let repair = RepairState {
        open_turn: snap.open_turn.map(b),
        open_step: snap.open_step.map(|(turn, step)| OpenStep {
            turn: b(turn),
            step: b(step),
        }),
        pending: snap
            .pending
            .into_iter()
            .map(|(call_id, step, tool_call_seq)| PendingCall {
                call_id,
                step: b(step),
                tool_call_seq,
            })
            .collect(),
    };
    let state = SessionState {
        next_seq: snap.next_seq,
        last_time: snap.last_time,
        surface: SurfaceManager::from_parts(snap.surface, snap.replace_generation),
        repair,
        turns: TurnMarks::from_encoded(snap.turns),
    };
    catalog.sessions.insert(
        snap.id,
        SessionEntry {
            header,
            state,
            locs,
            parent: snap.parent,
            created_lsn: snap.created_lsn,
        },
    );
    Ok(())
}

/// Applies a checkpoint body to the catalog: deletions, then sessions in creation order.
pub(crate) fn apply(body: Body, catalog: &mut Catalog) -> std::result::Result<(), &'static str> {
    for id in &body.deleted {
        catalog.delete(id);
    }
    let mut sessions = body.sessions;
    sessions.sort_by_key(|s| s.created_lsn);
    for snap in sessions {
        restore(snap, catalog)?;
    }
    Ok(())
}

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ 1 << 32 }>()
}

/// Encodes a body.
pub(crate) fn encode_body(body: &Body) -> Result<Vec<u8>> {
    bincode::serde::encode_to_vec(body, bincode_config()).map_err(|e| {
        Error::io(
            "encode checkpoint",
            CHECKPOINTS_DIR,
            std::io::Error::other(e.to_string()),
        )
    })
}

/// The path of a generation.
pub fn checkpoint_path(generation: u64) -> String {
    format!("{CHECKPOINTS_DIR}/{generation:020}.ckpt")
}

/// Writes a checkpoint atomically and durably.
pub(crate) fn write(storage: &dyn Storage, meta: &CheckpointMeta, body: &[u8]) -> Result<()> {
    let path = checkpoint_path(meta.generation);
    let tmp = format!("{path}.tmp");
    // A temp file left by an interrupted checkpoint is garbage.
    let _ = storage.remove(&tmp);
    let file = storage
        .open(&tmp, OpenMode::CreateNew)
        .map_err(|e| Error::io("create", &tmp, e))?;
    file.write_at(&meta.encode_header(body), 0)
        .map_err(|e| Error::io("write", &tmp, e))?;
    file.write_at(body, CHECKPOINT_HEADER_LEN as u64)
        .map_err(|e| Error::io("write", &tmp, e))?;
    file.sync_data().map_err(|e| Error::io("sync", &tmp, e))?;
    storage
        .rename(&tmp, &path)
        .map_err(|e| Error::io("rename", &tmp, e))?;
    storage
        .sync_dir(CHECKPOINTS_DIR)
        .map_err(|e| Error::io("sync directory", CHECKPOINTS_DIR, e))
}

/// Generations present, oldest first.
pub(crate) fn list(storage: &dyn Storage) -> Result<Vec<u64>> {
    let names = storage
        .list(CHECKPOINTS_DIR)
        .map_err(|e| Error::io("list", CHECKPOINTS_DIR, e))?;
    let mut gens: Vec<u64> = names
        .iter()
        .filter_map(|n| n.strip_suffix(".ckpt"))
        .filter(|d| d.len() == 20 && d.bytes().all(|c| c.is_ascii_digit()))
        .filter_map(|d| d.parse().ok())
        .collect();
    gens.sort_unstable();
    Ok(gens)
}

/// Reads and checks one checkpoint file. `Err` carries why it is unusable.
pub(crate) fn read(
    storage: &dyn Storage,
    generation: u64,
) -> std::result::Result<(CheckpointMeta, Body), String> {
    let path = checkpoint_path(generation);
    let file = storage
        .open(&path, OpenMode::Read)
        .map_err(|e| format!("{path}: {e}"))?;
    let len = file.len().map_err(|e| format!("{path}: {e}"))?;
    let mut bytes = vec![0u8; usize::try_from(len).map_err(|_| "too large".to_owned())?];
    file.read_at(&mut bytes, 0)
        .map_err(|e| format!("{path}: {e}"))?;
    let h = bytes
        .get(..CHECKPOINT_HEADER_LEN)
        .ok_or_else(|| format!("{path}: short header"))?;
    let u64_at = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&h[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let u32_at = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
    if h[0..8] != CHECKPOINT_MAGIC {
        return Err(format!("{path}: bad magic"));
    }
    if u32_at(12) != header_crc(h) {
        return Err(format!("{path}: header checksum mismatch"));
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    let layout = u16::from_le_bytes([h[10], h[11]]);
    if version != CHECKPOINT_FORMAT_VERSION || layout != CHECKPOINT_BODY_LAYOUT {
        return Err(format!(
            "{path}: version {version} layout {layout} not supported"
        ));
    }
    let body_len = usize::try_from(u64_at(56)).map_err(|_| format!("{path}: bad body length"))?;
    let body = bytes
        .get(CHECKPOINT_HEADER_LEN..)
        .filter(|b| b.len() == body_len)
        .ok_or_else(|| format!("{path}: body length mismatch"))?;
    if crc32fast::hash(body) != u32_at(52) {
        return Err(format!("{path}: body checksum mismatch"));
    }
    let meta = CheckpointMeta {
        generation: u64_at(16),
        base: u64_at(24),
        covered_lsn: u64_at(32),
        last_record: match u64_at(40) {
            NO_RECORD => None,
            lsn => Some((lsn, u32_at(48))),
        },
    };
    if meta.generation != generation {
        return Err(format!(
            "{path}: generation {} in a file named {generation}",
            meta.generation
        ));
    }
    let (decoded, used): (Body, usize) = bincode::serde::decode_from_slice(body, bincode_config())
        .map_err(|e| format!("{path}: {e}"))?;
    if used != body.len() {
        return Err(format!("{path}: trailing bytes in the body"));
    }
    Ok((meta, decoded))
}
