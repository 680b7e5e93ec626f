//! Packed chunk rows (`docs/FORMATS.md` §2.3): a run of three or more consecutive streamed
//! `assistant/chunk` deltas of one block written as one line.
//!
//! ```json
//! {"type":"text-chunks","seq0":40,"time0":1767225601000,"data":{"turn":1,"step":1,"index":0,"dt":[3,0],"texts":["Hel","lo"," world"]}}
//! ```
//!
//! Member `k` has seq `seq0 + k` and time `time0 + dt[0] + … + dt[k-1]`. sessdb packs a
//! member only when unpacking gives back its exact stored bytes: DSH's eligibility rules plus
//! the canonical byte form DSH itself writes (`{"turn":T,"step":S,"chunk":{...}}` with keys in
//! that order and no whitespace). Anything else stays one event per line, so export never
//! changes an event.

use sessdb::event::envelope;
use sessdb::json::{JsonKind, JsonRef};
use sessdb::{Event, MAX_SAFE_INTEGER, PackHint};

/// The three packable delta kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    ToolCall,
}

impl Kind {
    fn row_type(self) -> &'static str {
        match self {
            Kind::Text => "text-chunks",
            Kind::Reasoning => "reasoning-chunks",
            Kind::ToolCall => "tool-call-chunks",
        }
    }

    fn delta_type(self) -> &'static str {
        match self {
            Kind::Text => "text-delta",
            Kind::Reasoning => "reasoning-delta",
            Kind::ToolCall => "tool-call-delta",
        }
    }

    fn from_row_type(t: &str) -> Option<Kind> {
        [Kind::Text, Kind::Reasoning, Kind::ToolCall]
            .into_iter()
            .find(|k| k.row_type() == t)
    }
}

/// What identifies a run; members of one run agree on all of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct RunKey {
    kind: Kind,
    turn: Vec<u8>,
    step: Vec<u8>,
    index: Vec<u8>,
    id: Option<Vec<u8>>,
    name: Option<Vec<u8>>,
}

/// The canonical data of a member: the bytes DSH writes for that chunk event.
fn member_data(key: &RunKey, piece: &[u8]) -> Vec<u8> {
    let mut d = Vec::with_capacity(96 + piece.len());
    d.extend_from_slice(b"{\"turn\":");
    d.extend_from_slice(&key.turn);
    d.extend_from_slice(b",\"step\":");
    d.extend_from_slice(&key.step);
    d.extend_from_slice(b",\"chunk\":{\"type\":\"");
    d.extend_from_slice(key.kind.delta_type().as_bytes());
    d.extend_from_slice(b"\",\"index\":");
    d.extend_from_slice(&key.index);
    if key.kind == Kind::ToolCall {
        d.extend_from_slice(b",\"id\":");
        d.extend_from_slice(key.id.as_deref().unwrap_or(b"\"\""));
        if let Some(name) = &key.name {
            d.extend_from_slice(b",\"name\":");
            d.extend_from_slice(name);
        }
        d.extend_from_slice(b",\"argumentsDelta\":");
    } else {
        d.extend_from_slice(b",\"text\":");
    }
    d.extend_from_slice(piece);
    d.extend_from_slice(b"}}");
    d
}

/// A chunk's run key and piece, borrowed from its data: what [`parse_member`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MemberRef<'a> {
    kind: Kind,
    turn: &'a [u8],
    step: &'a [u8],
    index: &'a [u8],
    id: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    /// The piece's string token, quotes included.
    piece: &'a [u8],
}

/// A reader of the one byte form a packable member has.
struct Canonical<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Canonical<'a> {
    /// A fixed literal (its length a constant, so the comparison is inlined, not a `memcmp`
    /// call per literal).
    fn lit<const N: usize>(&mut self, word: &[u8; N]) -> Option<()> {
        let got: &[u8; N] = self.b.get(self.at..self.at + N)?.try_into().ok()?;
        (got == word).then(|| self.at += N)
    }

    /// An integer token within ±(2^53 − 1) (what `JsonRef::as_i64` reads, range-checked).
    fn int(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        if self.b.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        while self.b.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
        let token = self.b.get(start..self.at)?;
        let digits = token.strip_prefix(b"-").unwrap_or(token);
        // At most 16 digits fit under 2^53; the value is then checked exactly.
        if digits.is_empty() || digits.len() > 16 {
            return None;
        }
        let n = digits
            .iter()
            .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
        (n <= MAX_SAFE_INTEGER.unsigned_abs()).then_some(token)
    }

    /// A string token (the data is validated JSON: the first unescaped quote closes it).
    fn string(&mut self) -> Option<&'a [u8]> {
        let start = self.at;
        self.lit(b"\"")?;
        loop {
            let rest = self.b.get(self.at..)?;
            let i = rest.iter().position(|&c| c == b'"' || c == b'\\')?;
            if rest[i] == b'"' {
                self.at += i + 1;
                return self.b.get(start..self.at);
            }
            self.at += i + 2;
        }
    }
}

/// The run key and piece of a chunk's `data` when it is in the canonical form DSH writes
/// (`{"turn":T,"step":S,"chunk":{"type":K,"index":I,…}}`, keys in that order, no
/// whitespace) with integer turn, step and index: the only data a row can give back byte for
/// byte. One forward pass, nothing allocated (the generic reader it replaces walked every
/// member and compared against a rebuilt copy: 35 % of an export of DSH's mix).
fn parse_member(data: &[u8]) -> Option<MemberRef<'_>> {
    let mut c = Canonical { b: data, at: 0 };
    c.lit(b"{\"turn\":")?;
    let turn = c.int()?;
    c.lit(b",\"step\":")?;
    let step = c.int()?;
    c.lit(b",\"chunk\":{\"type\":\"")?;
    let kind = [Kind::Text, Kind::Reasoning, Kind::ToolCall]
        .into_iter()
        .find(|k| {
            let t = k.delta_type().as_bytes();
            data.get(c.at..c.at + t.len()) == Some(t) && data.get(c.at + t.len()) == Some(&b'"')
        })?;
    c.at += kind.delta_type().len() + 1;
    c.lit(b",\"index\":")?;
    let index = c.int()?;
    let (id, name) = if kind == Kind::ToolCall {
        c.lit(b",\"id\":")?;
        let id = c.string()?;
        let name = match c.lit(b",\"name\":") {
            Some(()) => Some(c.string()?),
            None => None,
        };
        c.lit(b",\"argumentsDelta\":")?;
        (Some(id), name)
    } else {
        c.lit(b",\"text\":")?;
        (None, None)
    };
    let piece = c.string()?;
    c.lit(b"}}")?;
    (c.at == data.len()).then_some(MemberRef {
        kind,
        turn,
        step,
        index,
        id,
        name,
        piece,
    })
}

/// A streamed text or reasoning chunk's `data` in the canonical form DSH writes, each value
/// as its JSON token (see [`text_chunk`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TextChunk<'a> {
    /// `turn`, `step` and `index`: integer tokens within ±(2^53 − 1).
    pub turn: &'a [u8],
    /// See `turn`.
    pub step: &'a [u8],
    /// See `turn`.
    pub index: &'a [u8],
    /// `text-delta` or `reasoning-delta`.
    pub delta_type: &'static str,
    /// The text's string token, quotes included.
    pub text: &'a [u8],
}

/// `data`'s parts when it is a text or reasoning chunk in the canonical form a packed row can
/// give back byte for byte (the rule the packer uses); `None` otherwise, tool-call deltas
/// included. Not the engine's validation shortcut (`json/chunk_shortcut.rs`), which asks
/// whether `data` is valid JSON without the general validator and takes other text.
pub fn text_chunk(data: &[u8]) -> Option<TextChunk<'_>> {
    let m = parse_member(data)?;
    (m.kind != Kind::ToolCall).then(|| TextChunk {
        turn: m.turn,
        step: m.step,
        index: m.index,
        delta_type: m.kind.delta_type(),
        text: m.piece,
    })
}

/// The key of the run being collected, its parts kept in one reused buffer.
#[derive(Debug, Default)]
struct RunKeyBuf {
    kind: Option<Kind>,
    bytes: Vec<u8>,
    /// Ends of turn, step, index, id, name in `bytes` (id and name may be empty: `has_*`).
    ends: [usize; 5],
    has_id: bool,
    has_name: bool,
}

impl RunKeyBuf {
    fn part(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.bytes.get(start..self.ends[i]).unwrap_or_default()
    }

    fn matches(&self, m: &MemberRef<'_>) -> bool {
        self.kind == Some(m.kind)
            && short_eq(self.part(0), m.turn)
            && short_eq(self.part(1), m.step)
            && short_eq(self.part(2), m.index)
            && self.has_id == m.id.is_some()
            && short_eq(self.part(3), m.id.unwrap_or_default())
            && self.has_name == m.name.is_some()
            && short_eq(self.part(4), m.name.unwrap_or_default())
    }

    fn set(&mut self, m: &MemberRef<'_>) {
        self.kind = Some(m.kind);
        self.bytes.clear();
        let parts = [
            m.turn,
            m.step,
            m.index,
            m.id.unwrap_or_default(),
            m.name.unwrap_or_default(),
        ];
        for (i, p) in parts.iter().enumerate() {
            self.bytes.extend_from_slice(p);
            self.ends[i] = self.bytes.len();
        }
        self.has_id = m.id.is_some();
        self.has_name = m.name.is_some();
    }
}

/// `a == b` for the key's parts, mostly one to three bytes: a byte loop up to 16 bytes. The
/// slice comparison calls `memcmp` for each; those five calls per event were 19 % of the
/// JSONL export's samples in `perf` (`report --profile-export`).
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        false
    } else if a.len() > 16 {
        a == b
    } else {
        a.iter().zip(b).all(|(x, y)| x == y)
    }
}

/// One member of the pending run: where its data and piece are in the run's buffer.
#[derive(Debug, Clone, Copy)]
struct Pending {
    seq: u64,
    time: i64,
    data: (usize, usize),
    piece: (usize, usize),
}

/// Writes events as JSONL lines, packing runs; feed events in seq order. Allocation-free in
/// steady state: the pending run lives in buffers reused from run to run.
#[derive(Debug)]
pub struct Packer {
    run: Vec<Pending>,
    run_bytes: Vec<u8>,
    key: RunKeyBuf,
    enabled: bool,
    /// Bounds of one row: members, and bytes of pieces.
    max_members: usize,
    max_piece_bytes: usize,
    run_piece_bytes: usize,
}

impl Packer {
    /// A packer; with `enabled == false` every event is one line.
    pub fn new(enabled: bool) -> Self {
        Self::bounded(enabled, MAX_PIECES_PER_ROW, usize::MAX)
    }

    /// A packer whose rows hold at most `max_members` events and `max_piece_bytes` bytes of
    /// pieces (DSH's SQLite rows: 1,024 members, 1 MiB).
    pub fn bounded(enabled: bool, max_members: usize, max_piece_bytes: usize) -> Self {
        Self {
            run: Vec::new(),
            run_bytes: Vec::new(),
            key: RunKeyBuf::default(),
            enabled,
            max_members,
            max_piece_bytes,
            run_piece_bytes: 0,
        }
    }

    /// Adds one event; complete lines are appended to `out`.
    pub fn push(&mut self, event: Event, out: &mut Vec<u8>) {
        self.push_any(&event, out);
    }

    /// As [`Packer::push`], from a borrowed event (no copy of it is made unless it joins a
    /// pending run, and then only of its data bytes).
    pub fn push_ref(&mut self, event: &sessdb::EventRef<'_>, out: &mut Vec<u8>) {
        self.push_any(event, out);
    }

    fn push_any(&mut self, event: &impl Packable, out: &mut Vec<u8>) {
        // A chunk that stood alone in the imported file stays alone.
        let candidate = self.enabled
            && event.event_type() == "assistant/chunk"
            && event.pack_hint() != PackHint::Lone
            && event.plain();
        let Some(m) = candidate.then(|| parse_member(event.data())).flatten() else {
            self.flush(out);
            event.write_jsonl(out);
            out.push(b'\n');
            return;
        };
        // A row began here in the imported file (a DSH write batch began): a new row.
        let continues = event.pack_hint() != PackHint::RowStart
            && self.run.len() < self.max_members
            && self.run_piece_bytes.saturating_add(m.piece.len()) <= self.max_piece_bytes
            && self.key.matches(&m)
            && self.run.last().is_some_and(|last| {
                last.seq + 1 == event.seq() && safe_gap(last.time, event.time()).is_some()
            });
        if !continues {
            self.flush(out);
            self.key.set(&m);
        }
        self.run_piece_bytes = self.run_piece_bytes.saturating_add(m.piece.len());
        let data = event.data();
        let at = self.run_bytes.len();
        self.run_bytes.extend_from_slice(data);
        // The piece is a sub-slice of the data: its place in the copy.
        let piece_at = at + (m.piece.as_ptr() as usize - data.as_ptr() as usize);
        self.run.push(Pending {
            seq: event.seq(),
            time: event.time(),
            data: (at, at + data.len()),
            piece: (piece_at, piece_at + m.piece.len()),
        });
    }

    /// Writes what is pending.
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        if self.run.len() >= 3 {
            self.write_row(out);
        } else {
            for p in &self.run {
                // A member's line is what `Event::write_jsonl` writes for it: it has no
                // sources, surface op or ignorable flag.
                out.extend_from_slice(b"{\"type\":\"assistant/chunk\",\"seq\":");
                sessdb::json::write_u64(out, p.seq);
                out.extend_from_slice(b",\"time\":");
                sessdb::json::write_i64(out, p.time);
                out.extend_from_slice(b",\"data\":");
                out.extend_from_slice(self.run_bytes.get(p.data.0..p.data.1).unwrap_or_default());
                out.extend_from_slice(b"}\n");
            }
        }
        self.run.clear();
        self.run_bytes.clear();
        self.run_piece_bytes = 0;
        self.key.kind = None;
    }

    fn write_row(&self, out: &mut Vec<u8>) {
        let (Some(first), Some(kind)) = (self.run.first(), self.key.kind) else {
            return;
        };
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(kind.row_type().as_bytes());
        out.extend_from_slice(b"\",\"seq0\":");
        sessdb::json::write_u64(out, first.seq);
        out.extend_from_slice(b",\"time0\":");
        sessdb::json::write_i64(out, first.time);
        out.extend_from_slice(b",\"data\":{\"turn\":");
        out.extend_from_slice(self.key.part(0));
        out.extend_from_slice(b",\"step\":");
        out.extend_from_slice(self.key.part(1));
        out.extend_from_slice(b",\"index\":");
        out.extend_from_slice(self.key.part(2));
        out.extend_from_slice(b",\"dt\":[");
        for (i, w) in self.run.windows(2).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            sessdb::json::write_i64(out, safe_gap(w[0].time, w[1].time).unwrap_or(0));
        }
        out.push(b']');
        if kind == Kind::ToolCall {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(if self.key.has_id {
                self.key.part(3)
            } else {
                b"\"\""
            });
            if self.key.has_name {
                out.extend_from_slice(b",\"name\":");
                out.extend_from_slice(self.key.part(4));
            }
            out.extend_from_slice(b",\"args\":[");
        } else {
            out.extend_from_slice(b",\"texts\":[");
        }
        for (i, p) in self.run.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(self.run_bytes.get(p.piece.0..p.piece.1).unwrap_or_default());
        }
        out.extend_from_slice(b"]}}\n");
    }
}

/// What the packer reads of an event, owned or borrowed.
trait Packable {
    fn event_type(&self) -> &str;
    fn seq(&self) -> u64;
    fn time(&self) -> i64;
    fn data(&self) -> &[u8];
    fn pack_hint(&self) -> PackHint;
    /// No sources, no surface op, not ignorable.
    fn plain(&self) -> bool;
    fn write_jsonl(&self, out: &mut Vec<u8>);
}

impl Packable for Event {
    fn event_type(&self) -> &str {
        Event::event_type(self)
    }
    fn seq(&self) -> u64 {
        Event::seq(self)
    }
    fn time(&self) -> i64 {
        Event::time(self)
    }
    fn data(&self) -> &[u8] {
        Event::data(self)
    }
    fn pack_hint(&self) -> PackHint {
        Event::pack_hint(self)
    }
    fn plain(&self) -> bool {
        self.sources().is_none() && self.surface_op().is_none() && !self.ignorable()
    }
    fn write_jsonl(&self, out: &mut Vec<u8>) {
        Event::write_jsonl(self, out);
    }
}

impl Packable for sessdb::EventRef<'_> {
    fn event_type(&self) -> &str {
        sessdb::EventRef::event_type(self)
    }
    fn seq(&self) -> u64 {
        sessdb::EventRef::seq(self)
    }
    fn time(&self) -> i64 {
        sessdb::EventRef::time(self)
    }
    fn data(&self) -> &[u8] {
        sessdb::EventRef::data(self)
    }
    fn pack_hint(&self) -> PackHint {
        sessdb::EventRef::pack_hint(self)
    }
    fn plain(&self) -> bool {
        self.sources().is_none() && self.surface_op().is_none() && !self.ignorable()
    }
    fn write_jsonl(&self, out: &mut Vec<u8>) {
        sessdb::EventRef::write_jsonl(self, out);
    }
}

fn safe_gap(a: i64, b: i64) -> Option<i64> {
    b.checked_sub(a)
        .filter(|d| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(d))
}

/// Whether `event_type` is the type of a packed row (`text-chunks`, …), which no event has.
pub fn is_row_type(event_type: &str) -> bool {
    Kind::from_row_type(event_type).is_some()
}

/// Whether a parsed line is a packed row (its `type` is one of the three tags).
pub fn is_packed_row(row: &JsonRef<'_>) -> bool {
    row.get("type")
        .and_then(|t| t.as_str())
        .is_some_and(|t| Kind::from_row_type(&t).is_some())
}

/// The most pieces one packed row may hold. DSH packs the chunks of one write batch (200 ms
/// of streaming) into a row, a few hundred at most; the cap keeps a tiny hostile row (ten
/// million empty strings compress to a few KB) from expanding into gigabytes of events.
pub const MAX_PIECES_PER_ROW: usize = 65_536;

/// Marks the first event of an unpacked row: the JSONL export starts a row there again
/// (`PackHint::RowStart`), so a row DSH wrote comes back as DSH wrote it.
pub(crate) fn mark_row_start(events: Vec<Event>) -> Vec<Event> {
    events
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            if i == 0 {
                e.with_pack_hint(PackHint::RowStart)
            } else {
                e
            }
        })
        .collect()
}

/// What [`unpack`] says of a row with more than [`MAX_PIECES_PER_ROW`] pieces.
pub const TOO_MANY_PIECES: &str = "a packed row holds more than 65536 pieces";

/// The member events of a packed JSONL row (validated JSON). `Err` says what is malformed.
pub fn unpack(row: &JsonRef<'_>) -> Result<Vec<Event>, &'static str> {
    let row_type = row
        .get("type")
        .and_then(|t| t.as_str())
        .ok_or("not a packed row")?;
    // A repeated key counts once (its last value wins, as in `JSON.parse`).
    let mut keys: Vec<String> = row
        .members()
        .filter_map(|(k, _)| k.as_str().map(|s| s.into_owned()))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    if keys.len() != 4
        || !["type", "seq0", "time0", "data"]
            .iter()
            .all(|k| keys.iter().any(|x| x == k))
    {
        return Err("a packed row has exactly the keys type, seq0, time0, data");
    }
    let seq0 = row
        .get("seq0")
        .and_then(|v| envelope::seq_from_json(&v))
        .ok_or("seq0 must be a non-negative safe integer")?;
    let time0 = row
        .get("time0")
        .and_then(|v| v.as_safe_integer())
        .ok_or("time0 must be a safe integer")?;
    let data = row.get("data").ok_or("data must be an object")?;
    unpack_parts(&row_type, seq0, time0, &data)
}

/// The member events of a packed row from its parts — its type tag, `seq0`, `time0` and
/// `data` (validated JSON) — wherever the row was read: a JSONL line or a DSH database row.
/// `Err` says what is malformed.
pub fn unpack_parts(
    row_type: &str,
    seq0: u64,
    time0: i64,
    data: &JsonRef<'_>,
) -> Result<Vec<Event>, &'static str> {
    let kind = Kind::from_row_type(row_type).ok_or("not a packed row")?;
    if data.kind() != JsonKind::Object {
        return Err("data must be an object");
    }
    if envelope::checked_time(time0).is_none() {
        return Err("time0 must be a safe integer");
    }
    check_row_keys(kind, data)?;
    // The number as DSH holds it after `JSON.parse`: an integer however spelled (`1.0` is 1)
    // is written as DSH writes it; DSH expands any other number too, kept as its token.
    let int = |k: &str| {
        let v = data
            .get(k)
            .filter(|v| v.kind() == JsonKind::Number)
            .ok_or("turn, step and index must be numbers")?;
        Ok::<_, &'static str>(match v.as_safe_integer() {
            Some(n) => n.to_string().into_bytes(),
            None => v.bytes().to_vec(),
        })
    };
    let string = |k: &str| {
        data.get(k)
            .filter(|v| v.kind() == JsonKind::String)
            .map(|v| v.bytes().to_vec())
    };
    let key = RunKey {
        kind,
        turn: int("turn")?,
        step: int("step")?,
        index: int("index")?,
        id: if kind == Kind::ToolCall {
            Some(string("id").ok_or("id must be a string")?)
        } else {
            None
        },
        name: match data.get("name") {
            Some(_) => Some(string("name").ok_or("name must be a string")?),
            None => None,
        },
    };
    let pieces: Vec<JsonRef<'_>> = data
        .get(if kind == Kind::ToolCall {
            "args"
        } else {
            "texts"
        })
        .map(|a| a.elements().take(MAX_PIECES_PER_ROW + 1).collect())
        .unwrap_or_default();
    if pieces.len() > MAX_PIECES_PER_ROW {
        return Err(TOO_MANY_PIECES);
    }
    if pieces.is_empty() || pieces.iter().any(|p| p.kind() != JsonKind::String) {
        return Err("the pieces must be a non-empty array of strings");
    }
    let dts = member_dts(data, pieces.len())?;
    let mut time = time0;
    let mut out = Vec::with_capacity(pieces.len());
    for (k, piece) in pieces.iter().enumerate() {
        if k > 0 {
            time = time
                .checked_add(dts[k - 1])
                .filter(|t| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(t))
                .ok_or("a member time is not a safe integer")?;
        }
        let seq = seq0
            .checked_add(k as u64)
            .and_then(|s| envelope::checked_seq(i64::try_from(s).ok()?))
            .ok_or("a member seq is not a safe integer")?;
        out.push(Event::new(
            "assistant/chunk",
            seq,
            time,
            member_data(&key, piece.bytes()),
        ));
    }
    Ok(out)
}

/// A packed row's `data` holds exactly the keys its kind allows.
fn check_row_keys(kind: Kind, data: &JsonRef<'_>) -> Result<(), &'static str> {
    let expected: &[&str] = match kind {
        Kind::ToolCall if data.get("name").is_some() => {
            &["turn", "step", "index", "dt", "id", "name", "args"]
        }
        Kind::ToolCall => &["turn", "step", "index", "dt", "id", "args"],
        _ => &["turn", "step", "index", "dt", "texts"],
    };
    let mut data_keys: Vec<String> = data
        .members()
        .filter_map(|(k, _)| k.as_str().map(|s| s.into_owned()))
        .collect();
    data_keys.sort_unstable();
    data_keys.dedup();
    if data_keys.len() != expected.len()
        || !expected.iter().all(|k| data_keys.iter().any(|x| x == k))
    {
        return Err("packed row data has other keys than its kind allows");
    }
    Ok(())
}

/// A packed row's `dt`: the time steps between its `pieces` members, one fewer than them.
fn member_dts(data: &JsonRef<'_>, pieces: usize) -> Result<Vec<i64>, &'static str> {
    let dts: Vec<i64> = data
        .get("dt")
        .filter(|d| d.kind() == JsonKind::Array)
        .ok_or("dt must be an array")?
        .elements()
        .map(|d| {
            d.as_safe_integer()
                .ok_or("dt members must be safe integers")
        })
        .collect::<Result<_, _>>()?;
    if dts.len() + 1 != pieces {
        return Err("dt must have one entry fewer than the pieces");
    }
    Ok(dts)
}

#[cfg(test)]
#[path = "pack_reference.rs"]
mod reference;

#[cfg(test)]
mod tests {
    use super::*;
    use sessdb::Limits;
    use sessdb::json::validate;

    /// Chunk data near the canonical form: canonical members of every kind, and forms one
    /// edit away (a space, another key order, a float or unsafe integer, escapes, a missing
    /// or extra member), so runs start, continue and break everywhere.
    fn near_chunk() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let int = prop_oneof![
            120 => Just("1".to_owned()),
            1 => Just("2".to_owned()),
            1 => Just("-3".to_owned()),
            1 => Just("1.0".to_owned()),
            1 => Just("1e2".to_owned()),
            1 => Just("9007199254740991".to_owned()),
            1 => Just("9007199254740992".to_owned()),
            1 => Just("-9007199254740992".to_owned()),
        ];
        let text = prop_oneof![
            8 => Just("\"a\"".to_owned()),
            1 => Just("\"\"".to_owned()),
            1 => Just("\"q\\\"x\\\\\"".to_owned()),
            1 => Just("\"\\u00e9}\"".to_owned()),
            1 => Just("1".to_owned()),
        ];
        let kind = prop_oneof![
            30 => Just("text-delta"),
            2 => Just("reasoning-delta"),
            6 => Just("tool-call-delta"),
            1 => Just("text-delta2"),
        ];
        let id = prop_oneof![8 => Just("\"c1\"".to_owned()), 1 => text.clone()];
        (int.clone(), int.clone(), kind, int, text, id, 0u8..24).prop_map(
            |(turn, step, kind, index, piece, id, variant)| {
                let tail = if kind == "tool-call-delta" {
                    match variant % 8 {
                        0 | 4..=7 => {
                            format!(r#","id":{id},"name":"bash","argumentsDelta":{piece}"#)
                        }
                        1 => format!(r#","id":{id},"argumentsDelta":{piece}"#),
                        2 => format!(r#","name":"bash","id":{id},"argumentsDelta":{piece}"#),
                        _ => format!(r#","id":"c1","name":"bash","argumentsDelta":{piece}"#),
                    }
                } else {
                    format!(r#","text":{piece}"#)
                };
                let body = format!(r#""type":"{kind}","index":{index}{tail}"#);
                match variant {
                    8 => format!(r#"{{"step":{step},"turn":{turn},"chunk":{{{body}}}}}"#),
                    9 => format!(r#"{{"turn":{turn}, "step":{step},"chunk":{{{body}}}}}"#),
                    10 => format!(r#"{{"turn":{turn},"step":{step},"chunk":{{{body},"x":1}}}}"#),
                    11 => format!(r#"{{"turn":{turn},"step":{step},"chunk":{{{body}}},"y":2}}"#),
                    _ => format!(r#"{{"turn":{turn},"step":{step},"chunk":{{{body}}}}}"#),
                }
            },
        )
    }

    /// Packed rows the differential test wrote (it must exercise rows, not only lines).
    static ROWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    #[test]
    fn the_differential_test_packs_rows() {
        the_single_pass_packer_writes_what_the_old_one_wrote();
        let rows = ROWS.load(std::sync::atomic::Ordering::Relaxed);
        assert!(rows > 30, "{rows}");
    }

    proptest::proptest! {
        /// The single-pass packer writes exactly the lines of the packer it replaced, for any
        /// sequence of chunk events (canonical or not, runs broken by seq, time, key, hints,
        /// other events and the bounds).
        #[test]
        fn the_single_pass_packer_writes_what_the_old_one_wrote(
            events in proptest::collection::vec(
                (near_chunk(), 0u8..10, -3i64..4, 0u8..40),
                0..40,
            ),
            max_members in 2usize..6,
            max_piece_bytes in 4usize..40,
            enabled in proptest::prelude::any::<bool>(),
        ) {
            let mut seq = 10u64;
            let mut time = 1_000i64;
            let mut built = Vec::new();
            for (data, step, dt, shape) in events {
                seq += u64::from(step == 0) * 2 + 1;
                time += if shape >= 38 { MAX_SAFE_INTEGER } else { dt };
                let mut e = match shape {
                    0 => Event::new("turn/end", seq, time, &b"{}"[..]),
                    1 => Event::new("assistant/chunk", seq, time, data.into_bytes()).with_ignorable(true),
                    _ => Event::new("assistant/chunk", seq, time, data.into_bytes()),
                };
                e = match shape {
                    2 => e.with_pack_hint(PackHint::Lone),
                    3 => e.with_pack_hint(PackHint::RowStart),
                    4 => e.with_sources_opt(Some(vec![1].into())),
                    _ => e,
                };
                built.push(e);
            }
            let (mut new, mut old) = (
                Packer::bounded(enabled, max_members, max_piece_bytes),
                reference::Packer::bounded(enabled, max_members, max_piece_bytes),
            );
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for e in built {
                new.push(e.clone(), &mut a);
                old.push(e, &mut b);
            }
            new.flush(&mut a);
            old.flush(&mut b);
            proptest::prop_assert_eq!(String::from_utf8_lossy(&a), String::from_utf8_lossy(&b));
            ROWS.fetch_add(a.windows(8).filter(|w| w == b"-chunks\"").count(), std::sync::atomic::Ordering::Relaxed);
        }
    }

    fn chunk(seq: u64, time: i64, data: &str) -> Event {
        Event::new("assistant/chunk", seq, time, data.as_bytes())
    }

    fn text(seq: u64, time: i64, t: &str) -> Event {
        chunk(
            seq,
            time,
            &format!(
                r#"{{"turn":1,"step":1,"chunk":{{"type":"text-delta","index":0,"text":"{t}"}}}}"#
            ),
        )
    }

    fn lines(events: Vec<Event>, pack: bool) -> String {
        let mut p = Packer::new(pack);
        let mut out = Vec::new();
        for e in events {
            p.push(e, &mut out);
        }
        p.flush(&mut out);
        String::from_utf8(out).unwrap()
    }

    fn read_back(text: &str) -> Vec<Event> {
        text.lines()
            .flat_map(|l| {
                validate(l.as_bytes(), &Limits::default()).unwrap();
                let row = JsonRef::new(l.as_bytes());
                if is_packed_row(&row) {
                    unpack(&row).unwrap()
                } else {
                    vec![Event::from_jsonl(l.as_bytes(), &Limits::default()).unwrap()]
                }
            })
            .collect()
    }

    #[test]
    fn a_run_of_three_packs_and_reads_back_exactly() {
        let events = vec![
            text(4, 100, "Hel"),
            text(5, 103, "lo"),
            text(6, 103, " wor"),
            text(7, 90, "ld"),
        ];
        let out = lines(events.clone(), true);
        assert_eq!(
            out,
            "{\"type\":\"text-chunks\",\"seq0\":4,\"time0\":100,\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[3,0,-13],\"texts\":[\"Hel\",\"lo\",\" wor\",\"ld\"]}}\n"
        );
        assert_eq!(read_back(&out), events);
    }

    #[test]
    fn short_runs_and_ineligible_members_stay_verbatim() {
        let two = vec![text(1, 0, "a"), text(2, 0, "b")];
        assert_eq!(lines(two.clone(), true).lines().count(), 2);
        let spaced = chunk(
            3,
            0,
            r#"{"turn":1, "step":1,"chunk":{"type":"text-delta","index":0,"text":"c"}}"#,
        );
        let events = vec![text(1, 0, "a"), text(2, 0, "b"), spaced, text(4, 0, "d")];
        let out = lines(events.clone(), true);
        assert_eq!(
            out.lines().count(),
            4,
            "a non-canonical member breaks the run"
        );
        assert_eq!(read_back(&out), events);
        let other_index = vec![
            text(1, 0, "a"),
            text(2, 0, "b"),
            chunk(
                3,
                0,
                r#"{"turn":1,"step":1,"chunk":{"type":"text-delta","index":1,"text":"c"}}"#,
            ),
        ];
        assert_eq!(lines(other_index, true).lines().count(), 3);
        assert_eq!(
            lines(
                vec![text(1, 0, "a"), text(2, 0, "b"), text(3, 0, "c")],
                false
            )
            .lines()
            .count(),
            3
        );
    }

    #[test]
    fn tool_call_runs_keep_id_and_name() {
        let tc = |seq, args: &str, name: bool| {
            let name = if name { r#","name":"bash""# } else { "" };
            chunk(
                seq,
                7,
                &format!(
                    r#"{{"turn":2,"step":1,"chunk":{{"type":"tool-call-delta","index":1,"id":"c1"{name},"argumentsDelta":"{args}"}}}}"#
                ),
            )
        };
        let with = vec![tc(10, "", true), tc(11, "{", true), tc(12, "}", true)];
        let out = lines(with.clone(), true);
        assert!(
            out.contains(r#""id":"c1","name":"bash","args":["","{","}"]"#),
            "{out}"
        );
        assert_eq!(read_back(&out), with);
        let mixed = vec![tc(10, "", true), tc(11, "{", false), tc(12, "}", true)];
        assert_eq!(
            lines(mixed, true).lines().count(),
            3,
            "name present in all or none"
        );
    }

    #[test]
    fn malformed_rows_are_refused() {
        for (row, needle) in [
            (
                r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":[]}}"#,
                "non-empty",
            ),
            (
                r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[1],"texts":["a"]}}"#,
                "one entry fewer",
            ),
            (
                r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"],"x":1}}"#,
                "other keys",
            ),
            (
                r#"{"type":"text-chunks","seq0":-1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"texts":["a"]}}"#,
                "seq0",
            ),
            (
                r#"{"type":"text-chunks","seq0":1,"data":{}}"#,
                "exactly the keys",
            ),
            (
                r#"{"type":"tool-call-chunks","seq0":1,"time0":0,"data":{"turn":1,"step":1,"index":0,"dt":[],"args":["a"]}}"#,
                "other keys",
            ),
            (
                r#"{"type":"text-chunks","seq0":1,"time0":9007199254740991,"data":{"turn":1,"step":1,"index":0,"dt":[5],"texts":["a","b"]}}"#,
                "safe integer",
            ),
            (
                r#"{"type":"text-chunks","seq0":1,"time0":0,"data":{"turn":"1","step":1,"index":0,"dt":[],"texts":["a"]}}"#,
                "must be numbers",
            ),
        ] {
            let err = unpack(&JsonRef::new(row.as_bytes())).unwrap_err();
            assert!(err.contains(needle), "{row}: {err}");
        }
        // As DSH expands rows after `JSON.parse`: an integer however spelled is the integer,
        // another number is kept, a repeated key's last value wins.
        let row = r#"{"type":"text-chunks","seq0":1,"time0":0,"seq0":2,"data":{"turn":1.0,"step":1.5,"index":0e0,"dt":[],"texts":["a"]}}"#;
        let events = unpack(&JsonRef::new(row.as_bytes())).unwrap();
        assert_eq!(events[0].seq(), 2);
        assert_eq!(
            events[0].data(),
            br#"{"turn":1,"step":1.5,"chunk":{"type":"text-delta","index":0,"text":"a"}}"#
        );
    }
}
