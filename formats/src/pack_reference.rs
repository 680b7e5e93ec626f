//! The packer as it was before the single-pass rewrite, kept as the tests' reference: the new
//! one must write the very same lines for every sequence of events.

use sessdb::json::{JsonKind, JsonRef};
use sessdb::{Event, MAX_SAFE_INTEGER, PackHint};

use super::{Kind, MAX_PIECES_PER_ROW, RunKey, member_data, safe_gap};

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
pub(super) struct Packer {
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
    #[allow(dead_code, reason = "the reference keeps its whole interface")]
    pub(super) fn new(enabled: bool) -> Self {
        Self::bounded(enabled, MAX_PIECES_PER_ROW, usize::MAX)
    }

    /// A packer whose rows hold at most `max_members` events and `max_piece_bytes` bytes of
    /// pieces (DSH's SQLite rows: 1,024 members, 1 MiB).
    pub(super) fn bounded(enabled: bool, max_members: usize, max_piece_bytes: usize) -> Self {
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
    pub(super) fn push(&mut self, event: Event, out: &mut Vec<u8>) {
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
    #[allow(dead_code, reason = "the reference keeps its whole interface")]
    pub(super) fn push_ref(&mut self, event: &sessdb::EventRef<'_>, out: &mut Vec<u8>) {
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
    pub(super) fn flush(&mut self, out: &mut Vec<u8>) {
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
