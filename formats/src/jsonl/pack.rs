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

fn is_int_token(v: &JsonRef<'_>) -> bool {
    v.as_i64()
        .is_some_and(|n| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(&n))
}

/// The run key and piece of an event that may be a packed member.
fn member(event: &Event) -> Option<(RunKey, Vec<u8>)> {
    if event.event_type() != "assistant/chunk"
        || event.sources().is_some()
        || event.surface_op().is_some()
        || event.ignorable()
    {
        return None;
    }
    // One pass over `data` and one over `chunk` (not a scan per key).
    let data = event.data_json();
    let [chunk, turn, step] = data.fields(["chunk", "turn", "step"]);
    let chunk = chunk?;
    let turn = turn.filter(is_int_token)?;
    let step = step.filter(is_int_token)?;
    let [index, ty, id, name, args, text] =
        chunk.fields(["index", "type", "id", "name", "argumentsDelta", "text"]);
    let index = index.filter(is_int_token)?;
    let ty = ty?;
    let kind = if ty.str_eq("text-delta") {
        Kind::Text
    } else if ty.str_eq("reasoning-delta") {
        Kind::Reasoning
    } else if ty.str_eq("tool-call-delta") {
        Kind::ToolCall
    } else {
        return None;
    };
    let (piece, id, name) = if kind == Kind::ToolCall {
        let id = id.filter(|v| v.kind() == JsonKind::String)?;
        if name.is_some_and(|n| n.kind() != JsonKind::String) {
            return None;
        }
        (
            args?,
            Some(id.bytes().to_vec()),
            name.map(|n| n.bytes().to_vec()),
        )
    } else {
        (text?, None, None)
    };
    if piece.kind() != JsonKind::String {
        return None;
    }
    let key = RunKey {
        kind,
        turn: turn.bytes().to_vec(),
        step: step.bytes().to_vec(),
        index: index.bytes().to_vec(),
        id,
        name,
    };
    // Only what unpacks to the very same bytes is packed.
    (member_data(&key, piece.bytes()) == event.data()).then(|| (key, piece.bytes().to_vec()))
}

/// Writes events as JSONL lines, packing runs; feed events in seq order.
#[derive(Debug)]
pub struct Packer {
    run: Vec<(Event, Vec<u8>)>,
    key: Option<RunKey>,
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
            key: None,
            enabled,
            max_members,
            max_piece_bytes,
            run_piece_bytes: 0,
        }
    }

    /// Adds one event; complete lines are appended to `out`.
    pub fn push(&mut self, event: Event, out: &mut Vec<u8>) {
        if !self.enabled {
            event.write_jsonl(out);
            out.push(b'\n');
            return;
        }
        // A chunk that stood alone in the imported file stays alone.
        let member = match event.pack_hint() {
            PackHint::Lone => None,
            _ => member(&event),
        };
        let Some((key, piece)) = member else {
            self.flush(out);
            event.write_jsonl(out);
            out.push(b'\n');
            return;
        };
        // A row began here in the imported file (a DSH write batch began): a new row.
        let continues = event.pack_hint() != PackHint::RowStart
            && self.run.len() < self.max_members
            && self.run_piece_bytes.saturating_add(piece.len()) <= self.max_piece_bytes
            && self.key.as_ref() == Some(&key)
            && self.run.last().is_some_and(|(last, _)| {
                last.seq() + 1 == event.seq() && safe_gap(last.time(), event.time()).is_some()
            });
        if !continues {
            self.flush(out);
            self.key = Some(key);
        }
        self.run_piece_bytes = self.run_piece_bytes.saturating_add(piece.len());
        self.run.push((event, piece));
    }

    /// As [`Packer::push`], from a borrowed event: only a chunk that may join a row becomes
    /// an owned event; any other is written straight from its stored bytes.
    pub fn push_ref(&mut self, event: &sessdb::EventRef<'_>, out: &mut Vec<u8>) {
        let candidate = self.enabled
            && event.event_type() == "assistant/chunk"
            && event.pack_hint() != PackHint::Lone
            && event.sources().is_none()
            && event.surface_op().is_none()
            && !event.ignorable();
        if candidate {
            self.push(event.to_event(), out);
        } else {
            self.flush(out);
            event.write_jsonl(out);
            out.push(b'\n');
        }
    }

    /// Writes what is pending.
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        self.run_piece_bytes = 0;
        let run = std::mem::take(&mut self.run);
        let key = self.key.take();
        match key {
            Some(key) if run.len() >= 3 => write_row(&key, &run, out),
            _ => {
                for (event, _) in run {
                    event.write_jsonl(out);
                    out.push(b'\n');
                }
            }
        }
    }
}

fn safe_gap(a: i64, b: i64) -> Option<i64> {
    b.checked_sub(a)
        .filter(|d| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(d))
}

fn write_row(key: &RunKey, run: &[(Event, Vec<u8>)], out: &mut Vec<u8>) {
    let (first, _) = &run[0];
    out.extend_from_slice(
        format!(
            "{{\"type\":\"{}\",\"seq0\":{},\"time0\":{},\"data\":{{\"turn\":",
            key.kind.row_type(),
            first.seq(),
            first.time()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&key.turn);
    out.extend_from_slice(b",\"step\":");
    out.extend_from_slice(&key.step);
    out.extend_from_slice(b",\"index\":");
    out.extend_from_slice(&key.index);
    out.extend_from_slice(b",\"dt\":[");
    for (i, w) in run.windows(2).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(
            safe_gap(w[0].0.time(), w[1].0.time())
                .unwrap_or(0)
                .to_string()
                .as_bytes(),
        );
    }
    out.push(b']');
    if key.kind == Kind::ToolCall {
        out.extend_from_slice(b",\"id\":");
        out.extend_from_slice(key.id.as_deref().unwrap_or(b"\"\""));
        if let Some(name) = &key.name {
            out.extend_from_slice(b",\"name\":");
            out.extend_from_slice(name);
        }
        out.extend_from_slice(b",\"args\":[");
    } else {
        out.extend_from_slice(b",\"texts\":[");
    }
    for (i, (_, piece)) in run.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(piece);
    }
    out.extend_from_slice(b"]}}\n");
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

/// The member events of a packed row (validated JSON). `Err` says what is malformed.
pub fn unpack(row: &JsonRef<'_>) -> Result<Vec<Event>, &'static str> {
    let kind = row
        .get("type")
        .and_then(|t| t.as_str())
        .and_then(|t| Kind::from_row_type(&t))
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
        .and_then(|v| v.as_safe_integer())
        .filter(|s| *s >= 0)
        .ok_or("seq0 must be a non-negative safe integer")?;
    let time0 = row
        .get("time0")
        .and_then(|v| v.as_safe_integer())
        .ok_or("time0 must be a safe integer")?;
    let data = row
        .get("data")
        .filter(|d| d.kind() == JsonKind::Object)
        .ok_or("data must be an object")?;
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
    // The number as DSH holds it after `JSON.parse`: an integer however spelled (`1.0` is 1)
    // is written as DSH writes it; DSH expands any other number too, kept as its token.
    let int = |k: &str| {
        let v = data
            .get(k)
            .filter(|v| v.kind() == JsonKind::Number)
            .ok_or("turn, step and index must be numbers")?;
        Ok(match v.as_safe_integer() {
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
    if dts.len() + 1 != pieces.len() {
        return Err("dt must have one entry fewer than the pieces");
    }
    let mut time = time0;
    let mut out = Vec::with_capacity(pieces.len());
    for (k, piece) in pieces.iter().enumerate() {
        if k > 0 {
            time = time
                .checked_add(dts[k - 1])
                .filter(|t| (-MAX_SAFE_INTEGER..=MAX_SAFE_INTEGER).contains(t))
                .ok_or("a member time is not a safe integer")?;
        }
        let seq = u64::try_from(seq0).map_err(|_| "seq0")? + k as u64;
        out.push(Event::new(
            "assistant/chunk",
            seq,
            time,
            member_data(&key, piece.bytes()),
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessdb::Limits;
    use sessdb::json::validate;

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
