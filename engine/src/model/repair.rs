//! Logical repair: the open-turn / open-step / pending-call state, tracked one event at a
//! time, and the closers DSH's `repair.ts` appends to a session whose last turn is open
//! (`docs/DESIGN.md` §2.7).
//!
//! Invariant: [`RepairState`] after events `0..n` equals what DSH's repair scan computes over
//! the same events, without ever rescanning them.

use super::short_str::ShortStr;
use crate::event::{Event, SurfaceOp, SurfaceType, types::names};
use crate::json::{JsonRef, Node, write_str};

/// Text of the `TOOL_OUTCOME_UNKNOWN` closer (sessdb's wording; DSH does not validate it).
pub const OUTCOME_UNKNOWN_TEXT: &str = "The tool call was interrupted after it started, and no \
result was recorded, so its outcome is unknown. Retry only if the operation is read-only or \
idempotent; otherwise first verify the external state or ask the user.";

/// Text of the `TOOL_NOT_STARTED` closer (sessdb's wording).
pub const NOT_STARTED_TEXT: &str = "The tool call was interrupted before it started, so it had \
no effect; it may be retried.";

/// A tool call announced by an `assistant/message` and not yet answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingCall {
    /// The tool call id.
    pub call_id: ShortStr,
    /// The raw JSON of the announcing message's `data.step`, if it had one.
    pub step: Option<ShortStr>,
    /// The seq of the `tool/call` event, once the call started.
    pub tool_call_seq: Option<u64>,
}

/// Raw JSON of `turn`/`step` numbers as the events wrote them, so closers repeat them exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenStep {
    /// `data.turn` of the `step/start`.
    pub turn: Option<ShortStr>,
    /// `data.step` of the `step/start`.
    pub step: Option<ShortStr>,
}

/// What repair needs to know about a session, maintained incrementally.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairState {
    /// `data.turn` of the open `turn/start` (outer `None`: no open turn).
    pub open_turn: Option<Option<ShortStr>>,
    /// The open step, if any.
    pub open_step: Option<OpenStep>,
    /// Calls announced and not answered, in the order first seen.
    pub pending: Vec<PendingCall>,
}

fn raw(v: Option<JsonRef<'_>>) -> Option<ShortStr> {
    v.and_then(|v| std::str::from_utf8(v.bytes()).ok())
        .map(ShortStr::new)
}

/// Where in an event's `data` a value lies (byte offsets).
type Span = (usize, usize);

/// What [`RepairState::observe`] reads of one event's `data`, as spans of its bytes. The
/// acceptance function locates them through its index of `data` (`json/tape.rs`) while it
/// checks the event, so committing the event walks `data` no more: an assistant message's
/// content was walked three times here before.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RepairFacts {
    /// `turn` of a `turn/start` or `step/start`; `step` of an `assistant/message`.
    first: Option<Span>,
    /// `step` of a `step/start`.
    second: Option<Span>,
    /// `callId` of a `tool/call`; `message.source.callId` of a `tool/result`; the ids of an
    /// assistant message's `tool-call` blocks that are strings.
    ids: Spans,
}

/// Spans in the order found, the first inline: an assistant message mostly calls one tool at
/// a time, and reading its facts allocates nothing then. (Four inline made every event's
/// verdict 60 bytes larger to move: appends 3–4 % slower, `docs/PERFORMANCE.md`.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Spans {
    first: Option<Span>,
    /// Past the first.
    more: Vec<Span>,
}

impl Spans {
    /// Whether any span is held on the heap.
    fn spilled(&self) -> bool {
        !self.more.is_empty()
    }

    fn first(&self) -> Option<Span> {
        self.first
    }

    fn iter(&self) -> impl Iterator<Item = Span> + '_ {
        self.first.into_iter().chain(self.more.iter().copied())
    }
}

impl Extend<Span> for Spans {
    fn extend<I: IntoIterator<Item = Span>>(&mut self, spans: I) {
        for span in spans {
            match self.first {
                None => self.first = Some(span),
                Some(_) => self.more.push(span),
            }
        }
    }
}

impl RepairFacts {
    /// Whether reading these facts allocated (a message calling several tools).
    pub(crate) fn spilled(&self) -> bool {
        self.ids.spilled()
    }

    /// Locates what `observe` reads in `data` of an event of `event_type`.
    pub(crate) fn read(event_type: &str, surface: Option<SurfaceType>, data: Node<'_>) -> Self {
        let base = data.bytes();
        let at = |v: Option<Node<'_>>| {
            v.and_then(|v| {
                let start = (v.bytes().as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
                Some((start, start + v.bytes().len()))
            })
        };
        let mut facts = Self::default();
        match event_type {
            names::TURN_START => facts.first = at(data.get("turn")),
            names::STEP_START => {
                let [turn, step] = data.fields(["turn", "step"]);
                facts.first = at(turn);
                facts.second = at(step);
            }
            names::TOOL_CALL => facts.ids.extend(at(data.get("callId"))),
            _ => match surface {
                Some(SurfaceType::AssistantMessage) => {
                    let [step, message] = data.fields(["step", "message"]);
                    facts.first = at(step);
                    let blocks = message.and_then(|m| m.get("content"));
                    for block in blocks.iter().flat_map(Node::elements) {
                        let [ty, id] = block.fields(["type", "id"]);
                        if ty.is_some_and(|t| t.str_eq("tool-call"))
                            && id.is_some_and(|i| i.as_str().is_some())
                        {
                            facts.ids.extend(at(id));
                        }
                    }
                }
                Some(SurfaceType::ToolResult) => {
                    let id = data
                        .get("message")
                        .and_then(|m| m.get("source"))
                        .and_then(|s| s.get("callId"));
                    facts.ids.extend(at(id));
                }
                _ => {}
            },
        }
        facts
    }
}

impl RepairState {
    /// No turn, step or call open; the pending list keeps its room (a turn's calls reuse it).
    fn clear(&mut self) {
        self.open_turn = None;
        self.open_step = None;
        self.pending.clear();
    }

    /// Whether a turn is open.
    pub fn turn_is_open(&self) -> bool {
        self.open_turn.is_some()
    }

    /// Updates the state with one accepted event (DSH `interruptedTurnClosers` scan).
    pub fn observe(&mut self, event: &Event) {
        let facts = RepairFacts::read(
            event.event_type(),
            event.surface_type(),
            Node::plain(event.data_json()),
        );
        self.observe_facts(event, &facts);
    }

    /// [`RepairState::observe`] with what it reads of `data` already located.
    pub(crate) fn observe_facts(&mut self, event: &Event, facts: &RepairFacts) {
        let data = event.data();
        let value = |span: Option<Span>| {
            span.and_then(|(start, end)| data.get(start..end))
                .map(JsonRef::new)
        };
        match event.event_type() {
            names::TURN_START => {
                self.clear();
                self.open_turn = Some(raw(value(facts.first)));
            }
            names::TURN_END => self.clear(),
            names::STEP_START => {
                self.open_step = Some(OpenStep {
                    turn: raw(value(facts.first)),
                    step: raw(value(facts.second)),
                });
            }
            names::STEP_END => {
                self.open_step = None;
                self.pending.clear();
            }
            names::TOOL_CALL => {
                let id = value(facts.ids.first()).and_then(|c| c.as_str());
                if let Some(p) = self
                    .pending
                    .iter_mut()
                    .find(|p| id.as_deref() == Some(&p.call_id))
                {
                    p.tool_call_seq = Some(event.seq());
                }
            }
            _ => match event.surface_type() {
                Some(SurfaceType::AssistantMessage) => {
                    let step = raw(value(facts.first));
                    for span in facts.ids.iter() {
                        let Some(id) = value(Some(span)).and_then(|i| i.as_str()) else {
                            continue;
                        };
                        let call = PendingCall {
                            call_id: ShortStr::new(&id),
                            step: step.clone(),
                            tool_call_seq: None,
                        };
                        // A JavaScript Map keyed by call id: a repeated id keeps its place.
                        match self.pending.iter_mut().find(|p| p.call_id == call.call_id) {
                            Some(p) => *p = call,
                            None => self.pending.push(call),
                        }
                    }
                }
                Some(SurfaceType::ToolResult) => {
                    let id = value(facts.ids.first());
                    if let Some(id) = id.and_then(|i| i.as_str()) {
                        self.pending.retain(|p| p.call_id != *id);
                    }
                }
                _ => {}
            },
        }
    }

    /// The closers for an open turn, with seqs from `next_seq` and every time `time` (the last
    /// real event's time). Empty when no turn is open.
    pub fn closers(&self, next_seq: u64, time: i64) -> Vec<Event> {
        let Some(turn) = &self.open_turn else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seq = next_seq;
        for call in &self.pending {
            let mut d = Vec::with_capacity(512);
            d.push(b'{');
            let mut sep = field(&mut d, "turn", turn.as_deref(), false);
            sep = field(&mut d, "step", call.step.as_deref(), sep);
            if sep {
                d.push(b',');
            }
            let id = format!("interrupted-tool-result-{}-{seq}", call.call_id);
            d.extend_from_slice(b"\"message\":{\"id\":");
            write_str(&mut d, &id);
            d.extend_from_slice(b",\"role\":\"user\",\"source\":{\"kind\":\"tool\",\"callId\":");
            write_str(&mut d, &call.call_id);
            d.extend_from_slice(b"},\"content\":[{\"type\":\"tool-result\",\"toolCallId\":");
            write_str(&mut d, &call.call_id);
            d.extend_from_slice(b",\"isError\":true,\"content\":[{\"type\":\"text\",\"text\":");
            let (text, name, code) = match call.tool_call_seq {
                Some(_) => (
                    OUTCOME_UNKNOWN_TEXT,
                    "ToolOutcomeUnknownError",
                    "TOOL_OUTCOME_UNKNOWN",
                ),
                None => (NOT_STARTED_TEXT, "ToolNotStartedError", "TOOL_NOT_STARTED"),
            };
            write_str(&mut d, text);
            d.extend_from_slice(
                format!("}}]}}]}},\"error\":{{\"name\":\"{name}\",\"code\":\"{code}\"}}}}")
                    .as_bytes(),
            );
            let mut event = Event::new(SurfaceType::ToolResult.as_str(), seq, time, d)
                .with_surface_op(SurfaceOp::Append);
            if let Some(call_seq) = call.tool_call_seq {
                // DSH writes its closers' envelope as `..., surfaceOp, sourceEventSeqs`.
                event = event
                    .with_sources(vec![call_seq])
                    .with_surface_op_first(true);
            }
            out.push(event);
            seq += 1;
        }
        if let Some(step) = &self.open_step {
            let mut d = vec![b'{'];
            let sep = field(&mut d, "turn", step.turn.as_deref(), false);
            field(&mut d, "step", step.step.as_deref(), sep);
            d.push(b'}');
            out.push(Event::new(names::STEP_END, seq, time, d));
            seq += 1;
        }
        let mut d = vec![b'{'];
        if field(&mut d, "turn", turn.as_deref(), false) {
            d.push(b',');
        }
        d.extend_from_slice(b"\"reason\":{\"kind\":\"interrupted\"}}");
        out.push(Event::new(names::TURN_END, seq, time, d));
        out
    }
}

/// Writes `"name":raw` when the value is known; returns whether anything was written so far.
fn field(out: &mut Vec<u8>, name: &str, value: Option<&str>, written: bool) -> bool {
    let Some(value) = value else { return written };
    if written {
        out.push(b',');
    }
    write_str(out, name);
    out.push(b':');
    out.extend_from_slice(value.as_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limits, json::validate};

    fn ev(ty: &str, seq: u64, data: &str) -> Event {
        Event::new(ty, seq, 100 + seq as i64, data.as_bytes())
    }

    fn assistant_with_calls(seq: u64, step: u64, ids: &[&str]) -> Event {
        let blocks: Vec<String> = ids
            .iter()
            .map(|id| {
                format!(r#"{{"type":"tool-call","id":"{id}","name":"x","arguments":"{{}}"}}"#)
            })
            .collect();
        ev(
            "assistant/message",
            seq,
            &format!(
                r#"{{"turn":1,"step":{step},"message":{{"id":"a","role":"assistant","source":{{"kind":"model","provider":"p","model":"m"}},"content":[{}]}}}}"#,
                blocks.join(",")
            ),
        )
        .with_surface_op(SurfaceOp::Append)
    }

    /// What the acceptance function locates through its index is what walking locates.
    #[test]
    fn facts_through_the_index_are_the_facts_by_walking() {
        let mut assistant = assistant_with_calls(2, 7, &["a", "b\\u0063", "c"]);
        assistant = Event::new(
            "assistant/message",
            2,
            0,
            String::from_utf8(assistant.data().to_vec())
                .unwrap()
                .replace(r#""id":"c""#, r#""id":5"#)
                .into_bytes(),
        );
        let events = [
            ev("turn/start", 0, r#"{"turn":3,"turn":4}"#),
            ev("step/start", 1, r#"{"step":2,"turn":3}"#),
            assistant,
            ev("tool/call", 3, r#"{"callId":"a","name":"x"}"#),
            ev(
                "tool/result",
                4,
                r#"{"message":{"id":"r","role":"user","source":{"kind":"tool","callId":"a"},"content":[]}}"#,
            ),
        ];
        let mut tape = crate::json::Tape::new();
        for e in &events {
            tape.validate(e.data(), &Limits::default()).unwrap();
            let indexed = RepairFacts::read(e.event_type(), e.surface_type(), tape.root(e.data()));
            let walked =
                RepairFacts::read(e.event_type(), e.surface_type(), Node::plain(e.data_json()));
            assert_eq!(indexed, walked, "{}", e.event_type());
            assert!(
                e.event_type() == "turn/end" || indexed != RepairFacts::default(),
                "{}",
                e.event_type()
            );
        }
        // Two string ids of tool calls, the numeric one left out.
        let a = &events[2];
        let facts = RepairFacts::read(a.event_type(), a.surface_type(), Node::plain(a.data_json()));
        assert_eq!(facts.ids.iter().count(), 2);
    }

    #[test]
    fn no_open_turn_means_no_closers() {
        let mut s = RepairState::default();
        assert!(s.closers(0, 0).is_empty());
        s.observe(&ev("turn/start", 0, r#"{"turn":1}"#));
        s.observe(&ev(
            "turn/end",
            1,
            r#"{"turn":1,"reason":{"kind":"completed"}}"#,
        ));
        assert!(s.closers(2, 0).is_empty());
    }

    #[test]
    fn pending_calls_close_in_order_with_the_right_code() {
        let mut s = RepairState::default();
        s.observe(&ev("turn/start", 0, r#"{"turn":3}"#));
        s.observe(&ev("step/start", 1, r#"{"turn":3,"step":2}"#));
        s.observe(&assistant_with_calls(2, 2, &["a", "b", "c"]));
        s.observe(&ev(
            "tool/call",
            3,
            r#"{"turn":3,"step":2,"callId":"b","name":"x","arguments":"{}"}"#,
        ));
        s.observe(&ev(
            "tool/result",
            4,
            r#"{"message":{"source":{"kind":"tool","callId":"a"}}}"#,
        ));
        let closers = s.closers(5, 77);
        let types: Vec<_> = closers.iter().map(|e| e.event_type().to_owned()).collect();
        assert_eq!(
            types,
            ["tool/result", "tool/result", "step/end", "turn/end"]
        );
        assert!(closers.iter().all(|e| e.time() == 77));
        assert_eq!(
            closers.iter().map(Event::seq).collect::<Vec<_>>(),
            [5, 6, 7, 8]
        );
        let b = closers[0].data_json();
        assert_eq!(
            b.get("error")
                .unwrap()
                .get("code")
                .unwrap()
                .as_str()
                .unwrap(),
            "TOOL_OUTCOME_UNKNOWN"
        );
        assert_eq!(closers[0].sources(), Some(&[3][..]));
        assert_eq!(
            b.get("message")
                .unwrap()
                .get("id")
                .unwrap()
                .as_str()
                .unwrap(),
            "interrupted-tool-result-b-5"
        );
        let c = closers[1].data_json();
        assert_eq!(
            c.get("error")
                .unwrap()
                .get("code")
                .unwrap()
                .as_str()
                .unwrap(),
            "TOOL_NOT_STARTED"
        );
        assert_eq!(closers[1].sources(), None);
        assert_eq!(closers[2].data(), br#"{"turn":3,"step":2}"#);
        assert_eq!(
            closers[3].data(),
            br#"{"turn":3,"reason":{"kind":"interrupted"}}"#
        );
        for e in &closers {
            assert_eq!(e.data_json().kind(), crate::json::JsonKind::Object);
            assert_eq!(validate(e.data(), &Limits::default()), Ok(()));
        }
    }

    #[test]
    fn step_end_clears_pending_and_turn_start_resets() {
        let mut s = RepairState::default();
        s.observe(&ev("turn/start", 0, r#"{"turn":1}"#));
        s.observe(&ev("step/start", 1, r#"{"turn":1,"step":1}"#));
        s.observe(&assistant_with_calls(2, 1, &["a"]));
        s.observe(&ev("step/end", 3, r#"{"turn":1,"step":1}"#));
        assert_eq!(s.closers(4, 0).len(), 1);
        s.observe(&assistant_with_calls(4, 1, &["z"]));
        s.observe(&ev("turn/start", 5, r#"{"turn":2}"#));
        assert!(s.pending.is_empty());
        assert_eq!(s.open_turn, Some(Some("2".into())));
    }
}
