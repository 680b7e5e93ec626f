//! The checkpoint file (`docs/FORMAT.md` §5): a 64-byte header and a body holding, per
//! session, the header line, the derived state and where its raw location array is, as of a
//! log position. Pure codec; the store decides what goes in and where the files live.
//!
//! The body is a *table* (every session's header, state and the place, count and CRC of its
//! location run) followed by the *runs*. The header's body CRC covers the table alone, so an
//! open reads and checks the table and nothing of the runs: a run is checked (its own CRC)
//! and decoded when its session's locations are first used (`store::locations`).
//!
//! A *full* checkpoint (base 0) holds every session; a *delta* holds the sessions changed
//! since its base, each with only the locations added since (from `loc_base`), and the ids
//! deleted since.

pub mod arrays;
pub mod indexed;
pub mod pages;
pub mod runs;

use super::file_names::{numbered_path, parse_numbered};
use super::frame::RecordLink;
use super::location::EventLoc;
use super::reader::{ByteReader, Decoded, len32};
use crate::model::{
    OpenStep, PendingCall, RepairState, SessionState, ShortStr, SurfaceManager, TurnMarks,
};

/// The checkpoint magic.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"SESSDBCP";
/// The checkpoint file format version (2: the hand-specified body of `docs/FORMAT.md` §5.2).
pub const CHECKPOINT_FORMAT_VERSION: u16 = 2;
/// How a checkpoint body is laid out (`docs/FORMAT.md` §5.1, §5.2); a change of the body
/// bumps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BodyLayout {
    /// 2: a table of every session's header and state, then the location runs, each with
    /// its own CRC. Read, no longer written.
    Table,
    /// 3: an index by session id (every slot in this file), then entries each with its own
    /// CRC, then the location runs; a delta's index names entries and runs of earlier files of
    /// its chain. Read, no longer written.
    Indexed,
    /// 4: as 3, the index's slots in pages any file of the chain may hold, named by a page
    /// table: a delta rewrites only the pages that changed. Read, no longer written.
    Paged,
    /// 5: as 4, each entry's surface and turn marks in runs as its locations are
    /// (`arrays.rs`): a delta writes only what was appended to them since.
    Arrays,
}

impl BodyLayout {
    /// The layout this release writes.
    pub const CURRENT: BodyLayout = BodyLayout::Arrays;

    /// Its number in the header.
    pub fn number(self) -> u16 {
        match self {
            BodyLayout::Table => 2,
            BodyLayout::Indexed => 3,
            BodyLayout::Paged => 4,
            BodyLayout::Arrays => 5,
        }
    }

    fn from_number(n: u16) -> Option<Self> {
        match n {
            2 => Some(BodyLayout::Table),
            3 => Some(BodyLayout::Indexed),
            4 => Some(BodyLayout::Paged),
            5 => Some(BodyLayout::Arrays),
            _ => None,
        }
    }
}
/// Bytes in a checkpoint header.
pub const CHECKPOINT_HEADER_LEN: usize = 64;
/// The directory holding checkpoints.
pub const CHECKPOINTS_DIR: &str = "checkpoints";
/// `last_record_lsn` when the log was empty.
const NO_RECORD: u64 = u64::MAX;

/// The path of a generation's file.
pub fn checkpoint_path(generation: u64) -> String {
    numbered_path(CHECKPOINTS_DIR, generation, "ckpt")
}

/// The generation a file name stands for (`<20 digits>.ckpt`).
pub fn parse_checkpoint_name(name: &str) -> Option<u64> {
    parse_numbered(name, "ckpt")
}

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
    pub last_record: Option<RecordLink>,
}

/// A header as read: what it covers and what it says of the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckpointHeader {
    /// What the checkpoint covers.
    pub meta: CheckpointMeta,
    /// How the body is laid out.
    pub layout: BodyLayout,
    /// CRC-32 of the body's table or index ([`checked_part`]).
    pub body_crc: u32,
    /// Length of the body in bytes.
    pub body_len: u64,
}

impl CheckpointMeta {
    /// The 64 header bytes for a body of `layout`.
    pub fn encode_header(&self, layout: BodyLayout, body: &[u8]) -> [u8; CHECKPOINT_HEADER_LEN] {
        let mut h = Vec::with_capacity(CHECKPOINT_HEADER_LEN);
        h.extend_from_slice(&CHECKPOINT_MAGIC);
        h.extend_from_slice(&CHECKPOINT_FORMAT_VERSION.to_le_bytes());
        h.extend_from_slice(&layout.number().to_le_bytes());
        h.extend_from_slice(&[0; 4]); // the header CRC, below
        h.extend_from_slice(&self.generation.to_le_bytes());
        h.extend_from_slice(&self.base.to_le_bytes());
        h.extend_from_slice(&self.covered_lsn.to_le_bytes());
        let (lsn, crc) = self.last_record.map_or((NO_RECORD, 0), |l| (l.lsn, l.crc));
        h.extend_from_slice(&lsn.to_le_bytes());
        h.extend_from_slice(&crc.to_le_bytes());
        h.extend_from_slice(&crc32fast::hash(checked_part(body)).to_le_bytes());
        h.extend_from_slice(&(body.len() as u64).to_le_bytes());
        let mut out = [0u8; CHECKPOINT_HEADER_LEN];
        out.copy_from_slice(&h);
        let crc = header_crc(&out);
        out[12..16].copy_from_slice(&crc.to_le_bytes());
        out
    }
}

/// CRC-32 of the header without its own CRC field (bytes 12..16).
/// The part of a body the header's CRC covers: the table length and the table (the whole
/// body when it is too short to say).
pub fn checked_part(body: &[u8]) -> &[u8] {
    let table = body
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| n.checked_add(8));
    table.and_then(|n| body.get(..n)).unwrap_or(body)
}

fn header_crc(h: &[u8; CHECKPOINT_HEADER_LEN]) -> u32 {
    let mut c = crc32fast::Hasher::new();
    c.update(&h[..12]);
    c.update(&h[16..]);
    c.finalize()
}

/// Decodes and checks a header: magic, its own CRC, versions.
///
/// # Errors
/// What is wrong with it.
pub fn decode_header(bytes: &[u8]) -> Decoded<CheckpointHeader> {
    let mut h = [0u8; CHECKPOINT_HEADER_LEN];
    h.copy_from_slice(bytes.get(..CHECKPOINT_HEADER_LEN).ok_or("short header")?);
    let mut c = ByteReader::new(&h);
    if c.take(8, "magic")? != CHECKPOINT_MAGIC {
        return Err("bad magic");
    }
    let version = c.u16("version")?;
    let layout = c.u16("body layout")?;
    if c.u32("header checksum")? != header_crc(&h) {
        return Err("header checksum mismatch");
    }
    let layout = BodyLayout::from_number(layout)
        .filter(|_| version == CHECKPOINT_FORMAT_VERSION)
        .ok_or("format version or body layout not supported")?;
    let generation = c.u64("generation")?;
    let base = c.u64("base")?;
    let covered_lsn = c.u64("covered LSN")?;
    let last_lsn = c.u64("last record LSN")?;
    let last_crc = c.u32("last record CRC")?;
    let body_crc = c.u32("body CRC")?;
    let body_len = c.u64("body length")?;
    c.finish(CheckpointHeader {
        meta: CheckpointMeta {
            generation,
            base,
            covered_lsn,
            last_record: (last_lsn != NO_RECORD).then_some(RecordLink {
                lsn: last_lsn,
                crc: last_crc,
            }),
        },
        layout,
        body_crc,
        body_len,
    })
}

/// One session of a body, as decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSnap {
    /// The session id.
    pub id: String,
    /// The header as its DSH JSON line.
    pub header_json: Vec<u8>,
    /// LSN of the record that created the session.
    pub created_lsn: u64,
    /// The parent whose first `n` locations a fork shares.
    pub parent: Option<(String, u64)>,
    /// The index of the first location in `locs`: the fork's inherited count in a full
    /// checkpoint, the number already checkpointed in a delta.
    pub loc_base: u64,
    /// Where locations `loc_base..` are in the body.
    pub locs: LocRun,
    /// The derived state.
    pub state: SessionState,
}

/// Where one session's raw location array is in a body: checked and decoded on first use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocRun {
    /// Its first byte, from the start of the body.
    pub start: usize,
    /// Locations in it.
    pub count: u64,
    /// CRC-32 of its `count` × 16 bytes.
    pub crc: u32,
}

impl LocRun {
    /// Its bytes in `body`, when their CRC holds.
    ///
    /// # Errors
    /// The run is outside the body or fails its CRC.
    pub fn checked<'a>(&self, body: &'a [u8]) -> Decoded<&'a [u8]> {
        let len = usize::try_from(self.count)
            .ok()
            .and_then(|n| n.checked_mul(EventLoc::ENCODED_LEN))
            .ok_or("location count")?;
        let bytes = self
            .start
            .checked_add(len)
            .and_then(|end| body.get(self.start..end))
            .ok_or("a location run past the body")?;
        if crc32fast::hash(bytes) != self.crc {
            return Err("a location run fails its checksum");
        }
        Ok(bytes)
    }

    /// Its locations, decoded, when their CRC holds.
    ///
    /// # Errors
    /// As [`LocRun::checked`].
    pub fn decode(&self, body: &[u8]) -> Decoded<Vec<EventLoc>> {
        // `map`, not `filter_map`: the exact length is known, so the vector is allocated once.
        Ok(self
            .checked(body)?
            .chunks_exact(EventLoc::ENCODED_LEN)
            .map(|b| {
                let mut loc = [0u8; EventLoc::ENCODED_LEN];
                loc.copy_from_slice(b);
                EventLoc::decode(&loc)
            })
            .collect())
    }
}

/// A decoded body.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Body {
    /// Sessions, in the order written (creation order: parents before forks).
    pub sessions: Vec<SessionSnap>,
    /// Ids deleted since the base (empty in a full checkpoint).
    pub deleted: Vec<String>,
}

/// Writes a body incrementally: `session` per session, then `finish` with the deleted ids.
#[derive(Debug, Default)]
pub struct BodyWriter {
    out: Vec<u8>,
    /// The location runs, in session order.
    runs: Vec<u8>,
    sessions: u32,
}

pub(crate) const TOO_LARGE: &str = "a checkpoint part past its length field";

fn put_str16(out: &mut Vec<u8>, s: &str) -> Decoded<()> {
    let n = u16::try_from(s.len()).map_err(|_| TOO_LARGE)?;
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(s.as_bytes());
    Ok(())
}

fn put_bytes32(out: &mut Vec<u8>, b: &[u8]) -> Decoded<()> {
    out.extend_from_slice(&len32(b.len()).ok_or(TOO_LARGE)?.to_le_bytes());
    out.extend_from_slice(b);
    Ok(())
}

/// An optional raw JSON number text: tag 0 = absent, 1 = present with a `u32` length.
fn put_opt_str(out: &mut Vec<u8>, s: Option<&str>) -> Decoded<()> {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_bytes32(out, s.as_bytes())?;
        }
    }
    Ok(())
}

fn put_u64s(out: &mut Vec<u8>, v: &[u64]) {
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

/// The parts of one session to write.
#[derive(Debug, Clone, Copy)]
pub struct SessionRef<'a> {
    /// The session id.
    pub id: &'a str,
    /// The header JSON line.
    pub header_json: &'a [u8],
    /// LSN of the record that created the session.
    pub created_lsn: u64,
    /// The parent and the inherited count of a fork.
    pub parent: Option<(&'a str, u64)>,
    /// The index of the first location written.
    pub loc_base: u64,
    /// The derived state.
    pub state: &'a SessionState,
}

/// A session's fields before its locations (both layouts): id, header, created LSN, parent,
/// next seq, last time, replace generation.
pub(crate) fn put_head(out: &mut Vec<u8>, s: &SessionRef<'_>) -> Decoded<()> {
    put_str16(out, s.id)?;
    put_bytes32(out, s.header_json)?;
    out.extend_from_slice(&s.created_lsn.to_le_bytes());
    match s.parent {
        None => out.push(0),
        Some((parent, inherited)) => {
            out.push(1);
            put_str16(out, parent)?;
            out.extend_from_slice(&inherited.to_le_bytes());
        }
    }
    let st = s.state;
    out.extend_from_slice(&st.next_seq.to_le_bytes());
    match st.last_time {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
    out.extend_from_slice(&st.surface.replace_generation().to_le_bytes());
    Ok(())
}

/// A session's fields after its locations (layouts 2 to 4): surface, turn marks, repair state.
pub(crate) fn put_state(out: &mut Vec<u8>, st: &SessionState) -> Decoded<()> {
    put_u64s(out, st.surface.seqs());
    put_u64s(out, st.turns.encoded());
    put_repair(out, &st.repair)
}

/// The repair state, the last fields of every layout's entry.
pub(crate) fn put_repair(out: &mut Vec<u8>, r: &RepairState) -> Decoded<()> {
    match &r.open_turn {
        None => out.push(0),
        Some(turn) => {
            out.push(1);
            put_opt_str(out, turn.as_deref())?;
        }
    }
    match &r.open_step {
        None => out.push(0),
        Some(step) => {
            out.push(1);
            put_opt_str(out, step.turn.as_deref())?;
            put_opt_str(out, step.step.as_deref())?;
        }
    }
    out.extend_from_slice(&len32(r.pending.len()).ok_or(TOO_LARGE)?.to_le_bytes());
    for p in &r.pending {
        put_bytes32(out, p.call_id.as_bytes())?;
        put_opt_str(out, p.step.as_deref())?;
        match p.tool_call_seq {
            None => out.push(0),
            Some(seq) => {
                out.push(1);
                out.extend_from_slice(&seq.to_le_bytes());
            }
        }
    }
    Ok(())
}

impl BodyWriter {
    /// An empty body.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a session with its locations `loc_base..` (`locs` yields exactly those).
    ///
    /// # Errors
    /// A part too long for its length field.
    pub fn session(
        &mut self,
        s: &SessionRef<'_>,
        locs: impl ExactSizeIterator<Item = EventLoc>,
    ) -> Decoded<()> {
        let count = locs.len() as u64;
        self.session_with(s, count, |runs| {
            runs.reserve(locs.len() * EventLoc::ENCODED_LEN);
            for loc in locs {
                loc.encode(runs);
            }
        })
    }

    /// As [`BodyWriter::session`], the `count` locations given as their encoded bytes (the
    /// pieces, concatenated, are `count` × 16 bytes): a run copied from an earlier checkpoint
    /// without decoding it.
    ///
    /// # Errors
    /// A part too long for its length field, or pieces of another length.
    pub fn session_raw(&mut self, s: &SessionRef<'_>, count: u64, pieces: &[&[u8]]) -> Decoded<()> {
        let bytes: usize = pieces.iter().map(|p| p.len()).sum();
        if bytes as u64 != count.saturating_mul(EventLoc::ENCODED_LEN as u64) {
            return Err("raw locations of another length than their count");
        }
        self.session_with(s, count, |runs| {
            for p in pieces {
                runs.extend_from_slice(p);
            }
        })
    }

    fn session_with(
        &mut self,
        s: &SessionRef<'_>,
        count: u64,
        write_run: impl FnOnce(&mut Vec<u8>),
    ) -> Decoded<()> {
        let out = &mut self.out;
        put_head(out, s)?;
        out.extend_from_slice(&s.loc_base.to_le_bytes());
        out.extend_from_slice(&count.to_le_bytes());
        let at = self.runs.len();
        write_run(&mut self.runs);
        out.extend_from_slice(&(at as u64).to_le_bytes());
        out.extend_from_slice(
            &crc32fast::hash(self.runs.get(at..).unwrap_or_default()).to_le_bytes(),
        );
        put_state(out, s.state)?;
        self.sessions = self.sessions.checked_add(1).ok_or(TOO_LARGE)?;
        Ok(())
    }

    /// The body: the table's length, the table (the session count, the sessions, the
    /// deleted ids), the location runs.
    ///
    /// # Errors
    /// Too many deleted ids, or an id too long.
    pub fn finish<'a>(self, deleted: impl ExactSizeIterator<Item = &'a str>) -> Decoded<Vec<u8>> {
        let mut table = Vec::with_capacity(self.out.len() + 16);
        table.extend_from_slice(&self.sessions.to_le_bytes());
        table.extend_from_slice(&self.out);
        table.extend_from_slice(&len32(deleted.len()).ok_or(TOO_LARGE)?.to_le_bytes());
        for id in deleted {
            put_str16(&mut table, id)?;
        }
        let mut body = Vec::with_capacity(8 + table.len() + self.runs.len());
        body.extend_from_slice(&(table.len() as u64).to_le_bytes());
        body.extend_from_slice(&table);
        body.extend_from_slice(&self.runs);
        Ok(body)
    }
}

fn read_opt_str(c: &mut ByteReader<'_>, what: &'static str) -> Decoded<Option<ShortStr>> {
    match c.u8(what)? {
        0 => Ok(None),
        1 => {
            let b = c.bytes32(what)?;
            std::str::from_utf8(b)
                .map(|s| Some(ShortStr::new(s)))
                .map_err(|_| what)
        }
        _ => Err(what),
    }
}

fn read_u64s(c: &mut ByteReader<'_>, what: &'static str) -> Decoded<Vec<u64>> {
    let n = c.u64(what)?;
    let n = c.count(n, 8, what)?;
    // The whole array at once: one exact allocation, no per-item bounds checks.
    let raw = c.take(n * 8, what)?;
    Ok(raw
        .chunks_exact(8)
        .map(|b| {
            let mut word = [0u8; 8];
            word.copy_from_slice(b);
            u64::from_le_bytes(word)
        })
        .collect())
}

/// A session's fields before its locations, as read ([`put_head`]).
pub(crate) struct Head {
    pub(crate) id: String,
    pub(crate) header_json: Vec<u8>,
    pub(crate) created_lsn: u64,
    pub(crate) parent: Option<(String, u64)>,
    next_seq: u64,
    last_time: Option<i64>,
    replace_generation: u64,
}

pub(crate) fn read_head(c: &mut ByteReader<'_>) -> Decoded<Head> {
    let id = c.str16("session id")?;
    let header_json = c.bytes32("session header")?.to_vec();
    let created_lsn = c.u64("created LSN")?;
    let parent = match c.u8("parent tag")? {
        0 => None,
        1 => Some((c.str16("parent id")?, c.u64("inherited count")?)),
        _ => return Err("parent tag"),
    };
    let next_seq = c.u64("next seq")?;
    let last_time = match c.u8("last time tag")? {
        0 => None,
        1 => Some(c.i64("last time")?),
        _ => return Err("last time tag"),
    };
    let replace_generation = c.u64("replace generation")?;
    Ok(Head {
        id,
        header_json,
        created_lsn,
        parent,
        next_seq,
        last_time,
        replace_generation,
    })
}

/// A session's fields after its locations ([`put_state`]), completing the state `head` began.
pub(crate) fn read_state(c: &mut ByteReader<'_>, head: &Head) -> Decoded<SessionState> {
    let surface = read_u64s(c, "surface")?;
    let turns = read_u64s(c, "turn marks")?;
    let repair = read_repair(c)?;
    Ok(head.state(surface, turns, repair))
}

impl Head {
    /// The state this head begins, completed by its arrays and repair state.
    pub(crate) fn state(
        &self,
        surface: Vec<u64>,
        turns: Vec<u64>,
        repair: RepairState,
    ) -> SessionState {
        SessionState {
            next_seq: self.next_seq,
            last_time: self.last_time,
            surface: SurfaceManager::from_parts(surface, self.replace_generation),
            repair,
            turns: TurnMarks::from_encoded(turns),
        }
    }

    /// The surface's replace generation as the entry holds it.
    pub(crate) fn replace_generation(&self) -> u64 {
        self.replace_generation
    }
}

/// The repair state ([`put_repair`]).
pub(crate) fn read_repair(c: &mut ByteReader<'_>) -> Decoded<RepairState> {
    let open_turn = match c.u8("open turn tag")? {
        0 => None,
        1 => Some(read_opt_str(c, "open turn")?),
        _ => return Err("open turn tag"),
    };
    let open_step = match c.u8("open step tag")? {
        0 => None,
        1 => Some(OpenStep {
            turn: read_opt_str(c, "open step turn")?,
            step: read_opt_str(c, "open step step")?,
        }),
        _ => return Err("open step tag"),
    };
    let pending_count = c.u32("pending count")?;
    // A pending call takes at least 9 bytes.
    let pending_count = c.count(u64::from(pending_count), 9, "pending count")?;
    let mut pending = Vec::with_capacity(pending_count);
    for _ in 0..pending_count {
        let call_id = std::str::from_utf8(c.bytes32("call id")?)
            .map(ShortStr::new)
            .map_err(|_| "call id")?;
        let step = read_opt_str(c, "call step")?;
        let tool_call_seq = match c.u8("tool call tag")? {
            0 => None,
            1 => Some(c.u64("tool call seq")?),
            _ => return Err("tool call tag"),
        };
        pending.push(PendingCall {
            call_id,
            step,
            tool_call_seq,
        });
    }
    Ok(RepairState {
        open_turn,
        open_step,
        pending,
    })
}

/// One session of the table; `runs` is where the location runs begin in the body, `body_len`
/// the body's length.
fn read_session(c: &mut ByteReader<'_>, runs: usize, body_len: usize) -> Decoded<SessionSnap> {
    let head = read_head(c)?;
    let loc_base = c.u64("location base")?;
    let count = c.u64("location count")?;
    let at = c.u64("location offset")?;
    let crc = c.u32("location CRC")?;
    // The run must lie in the runs region: checked here, its bytes only on first use.
    let start = usize::try_from(at)
        .ok()
        .and_then(|at| at.checked_add(runs))
        .ok_or("location offset")?;
    let len = usize::try_from(count)
        .ok()
        .and_then(|n| n.checked_mul(EventLoc::ENCODED_LEN))
        .ok_or("location count")?;
    if start.checked_add(len).is_none_or(|end| end > body_len) {
        return Err("a location run past the body");
    }
    let locs = LocRun { start, count, crc };
    let state = read_state(c, &head)?;
    Ok(SessionSnap {
        id: head.id,
        header_json: head.header_json,
        created_lsn: head.created_lsn,
        parent: head.parent,
        loc_base,
        locs,
        state,
    })
}

/// Decodes a body.
///
/// # Errors
/// The first field that is short or malformed.
pub fn decode_body(bytes: &[u8]) -> Decoded<Body> {
    let mut outer = ByteReader::new(bytes);
    let table_len = outer.u64("table length")?;
    let table_len = usize::try_from(table_len).map_err(|_| "table length")?;
    let table = outer.take(table_len, "table")?;
    let runs = 8 + table_len;
    let mut c = ByteReader::new(table);
    let n = c.u32("session count")?;
    // A session takes at least 82 bytes (empty id and header, no parent, no time, empty
    // arrays, no open turn or step, no pending calls).
    let n = c.count(u64::from(n), 82, "session count")?;
    // Sized once (a collect of `Result`s cannot know the count and grew by doubling).
    let mut sessions = Vec::with_capacity(n);
    for _ in 0..n {
        sessions.push(read_session(&mut c, runs, bytes.len())?);
    }
    let d = c.u32("deleted count")?;
    let d = c.count(u64::from(d), 2, "deleted count")?;
    let deleted = (0..d)
        .map(|_| c.str16("deleted id"))
        .collect::<Decoded<Vec<_>>>()?;
    c.finish(Body { sessions, deleted })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn state(seed: u64) -> SessionState {
        SessionState {
            next_seq: 3 + seed,
            last_time: seed.is_multiple_of(2).then_some(-5 - seed as i64),
            surface: SurfaceManager::from_parts(vec![1, seed + 2], seed),
            repair: RepairState {
                open_turn: Some(seed.is_multiple_of(3).then(|| ShortStr::new("7"))),
                open_step: Some(OpenStep {
                    turn: Some(ShortStr::new("7")),
                    step: None,
                }),
                pending: vec![PendingCall {
                    call_id: ShortStr::new(&format!("call-{seed}")),
                    step: Some(ShortStr::new("2")),
                    tool_call_seq: (seed % 2 == 1).then_some(seed),
                }],
            },
            turns: TurnMarks::from_encoded(vec![3, 8]),
        }
    }

    /// A session to write and the locations it holds.
    type Written = (SessionSnap, Vec<EventLoc>);

    fn encode(sessions: &[Written], deleted: &[String]) -> Vec<u8> {
        let mut w = BodyWriter::new();
        for (s, locs) in sessions {
            let r = SessionRef {
                id: &s.id,
                header_json: &s.header_json,
                created_lsn: s.created_lsn,
                parent: s.parent.as_ref().map(|(p, n)| (p.as_str(), *n)),
                loc_base: s.loc_base,
                state: &s.state,
            };
            w.session(&r, locs.iter().copied()).unwrap();
        }
        w.finish(deleted.iter().map(String::as_str)).unwrap()
    }

    fn snap(seed: u64, n_locs: u64) -> Written {
        let locs: Vec<EventLoc> = (0..n_locs)
            .map(|i| EventLoc {
                lsn: i * 7,
                offset: u32::try_from(i).unwrap(),
                len: 9,
            })
            .collect();
        let s = SessionSnap {
            id: format!("s{seed}"),
            header_json: format!("{{\"id\":\"s{seed}\"}}").into_bytes(),
            created_lsn: seed * 100,
            parent: (seed % 2 == 1).then(|| ("p".to_owned(), seed)),
            loc_base: seed,
            locs: LocRun {
                start: 0,
                count: n_locs,
                crc: 0,
            },
            state: state(seed),
        };
        (s, locs)
    }

    proptest! {
        #[test]
        fn bodies_round_trip(seeds in proptest::collection::vec((0u64..50, 0u64..20), 0..6), deleted in proptest::collection::vec("[a-z]{0,8}", 0..4)) {
            let sessions: Vec<Written> = seeds.iter().map(|&(s, n)| snap(s, n)).collect();
            let bytes = encode(&sessions, &deleted);
            let body = decode_body(&bytes).unwrap();
            prop_assert_eq!(&body.deleted, &deleted);
            prop_assert_eq!(body.sessions.len(), sessions.len());
            for (got, (want, locs)) in body.sessions.iter().zip(&sessions) {
                // Everything but the run's place as written, and the run decodes to its locations.
                let placed = SessionSnap { locs: got.locs, ..want.clone() };
                prop_assert_eq!(got, &placed);
                prop_assert_eq!(&got.locs.decode(&bytes).unwrap(), locs);
            }
        }

        #[test]
        fn arbitrary_bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            if let Ok(body) = decode_body(&bytes) {
                for s in &body.sessions {
                    let _ = s.locs.decode(&bytes);
                }
            }
            let _ = decode_header(&bytes);
        }
    }

    #[test]
    fn every_truncation_of_a_body_is_an_error() {
        let bytes = encode(&[snap(1, 3), snap(2, 0)], &["gone".to_owned()]);
        for cut in 0..bytes.len() {
            assert!(decode_body(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn the_header_checks_the_table_and_each_run_checks_itself() {
        let bytes = encode(&[snap(1, 3), snap(2, 4)], &[]);
        let body = decode_body(&bytes).unwrap();
        let table_end =
            8 + usize::try_from(u64::from_le_bytes(bytes[..8].try_into().unwrap())).unwrap();
        assert_eq!(checked_part(&bytes), &bytes[..table_end]);
        assert_eq!(
            body.sessions[0].locs.start, table_end,
            "the runs follow the table"
        );
        // A flipped byte in a run: that run refuses, the other still decodes, the table's CRC
        // is unchanged (an open does not read the runs).
        for i in table_end..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert_eq!(checked_part(&bad), checked_part(&bytes));
            let hit: Vec<bool> = body
                .sessions
                .iter()
                .map(|s| s.locs.decode(&bad).is_err())
                .collect();
            assert_eq!(hit.iter().filter(|h| **h).count(), 1, "byte {i}");
        }
    }

    #[test]
    fn headers_round_trip_and_every_flipped_bit_is_refused() {
        let meta = CheckpointMeta {
            generation: 3,
            base: 2,
            covered_lsn: 999,
            last_record: Some(RecordLink {
                lsn: 900,
                crc: 0xABCD,
            }),
        };
        let h = meta.encode_header(BodyLayout::Table, b"body");
        let back = decode_header(&h).unwrap();
        assert_eq!(back.meta, meta);
        assert_eq!(back.body_len, 4);
        assert_eq!(back.layout, BodyLayout::Table);
        assert_eq!(back.body_crc, crc32fast::hash(b"body"));
        for i in 0..h.len() * 8 {
            let mut bad = h;
            bad[i / 8] ^= 1 << (i % 8);
            assert!(decode_header(&bad).is_err(), "bit {i}");
        }
    }

    #[test]
    fn file_names_parse_back() {
        assert_eq!(
            parse_checkpoint_name(checkpoint_path(42).trim_start_matches("checkpoints/")),
            Some(42)
        );
        assert_eq!(parse_checkpoint_name("42.ckpt"), None);
        assert_eq!(parse_checkpoint_name("0000000000000000004x.ckpt"), None);
    }
}
