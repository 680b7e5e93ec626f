//! The DSH v0 event envelope: `type`, `seq`, `time`, `data`, `sourceEventSeqs?`,
//! `surfaceOp?`, `ignorable?` (`docs/DESIGN.md` §2.3).
//!
//! `data` is kept as the exact JSON bytes received; the acceptance function validates them
//! once, and nothing re-serializes them afterwards.

pub mod envelope;
mod jsonl;
pub(crate) mod types;
pub mod view;

pub use types::{LogType, SurfaceType, is_known_type};

use std::borrow::Cow;

use crate::Limits;
use crate::json::JsonRef;

/// How a surface event changes the surface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SurfaceOp {
    /// Push the event's seq at the end of the surface.
    Append,
    /// Replace the surface nodes from `start` through `end` (in surface order) by the event.
    Replace {
        /// First shadowed seq.
        start: u64,
        /// Last shadowed seq.
        end: u64,
    },
}

/// An event type name, one pointer wide: the common DSH types are static entries (decoding
/// an event allocates nothing for its type, and its surface type is known without a string
/// match), any other name is boxed. Why one pointer: `messages()` and every scan walk events
/// in memory, and a smaller event is less to walk (`docs/PERFORMANCE.md`).
#[derive(Debug, Clone)]
enum TypeName {
    Known(&'static KnownType),
    /// A name outside the common ones (boxed twice to keep the variant one pointer wide).
    Other(Box<Box<str>>),
}

/// A common type: its name and surface type.
#[derive(Debug)]
struct KnownType {
    name: &'static str,
    surface: Option<SurfaceType>,
}

macro_rules! known_types {
    ($($id:ident: $name:literal => $surface:expr),* $(,)?) => {
        $(static $id: KnownType = KnownType { name: $name, surface: $surface };)*
    };
}

// Every name of the DSH v0 vocabulary and the two legacy surface types.
known_types! {
    T_TURN_START: "turn/start" => None,
    T_TURN_END: "turn/end" => None,
    T_STEP_START: "step/start" => None,
    T_STEP_END: "step/end" => None,
    T_USER_MESSAGE: "user/message" => Some(SurfaceType::UserMessage),
    T_ASSISTANT_CHUNK: "assistant/chunk" => None,
    T_ASSISTANT_MESSAGE: "assistant/message" => Some(SurfaceType::AssistantMessage),
    T_TOOL_CALL: "tool/call" => None,
    T_TOOL_RESULT: "tool/result" => Some(SurfaceType::ToolResult),
    T_TODO_WRITE: "todo/write" => None,
    T_REQUEST_HEADER: "request/header" => None,
    T_REQUEST_CONTEXT: "request/context" => None,
    T_SESSION_END_SEED: "session/end-seed" => None,
    T_AGENT_INBOX_SPLICED: "agent/inbox/spliced" => None,
    T_AGENT_PRESET_SELECTED: "agent-preset/selected" => None,
    T_APPROVAL_ASKED: "approval/asked" => None,
    T_APPROVAL_DECIDED: "approval/decided" => None,
    T_APPROVAL_POLICY: "approval/policy" => None,
    T_COMMAND_RUN: "command/run" => None,
    T_COMMAND_DONE: "command/done" => None,
    T_COMPACTION_START: "compaction/start" => None,
    T_COMPACTION_SUMMARY: "compaction/summary" => None,
    T_COMPACTION_PRUNE: "compaction/prune" => None,
    T_COMPACTION_END: "compaction/end" => None,
    T_FEEDBACK_RECORD: "feedback/record" => None,
    T_GOAL_CHANGE: "goal/change" => None,
    T_HOOK_INVOKED: "hook/invoked" => None,
    T_HOOK_RESULT: "hook/result" => None,
    T_LLM_RETRY: "llm/retry" => None,
    T_LLM_RETRY_STARTED: "llm/retry-started" => None,
    T_PERMISSION_PRESET: "permission/preset" => None,
    T_PLAN_MODE: "plan/mode" => None,
    T_SANDBOX_MODE: "sandbox/mode" => None,
    T_SCHEDULE_CHANGE: "schedule/change" => None,
    T_SESSION_TITLE: "session/title" => None,
    T_SESSION_TITLE_LLM_REQUEST: "session/title-llm-request" => None,
    T_SUBAGENT_DESCRIPTOR: "subagent/descriptor" => None,
    T_TEAM_MEMBER: "team/member" => None,
    T_TEAM_MESSAGE_QUEUED: "team/message/queued" => None,
    T_TEAM_MESSAGE_DELIVERED: "team/message/delivered" => None,
    T_TEAM_TASK: "team/task" => None,
    T_TOOL_CODE_DISPATCH_START: "tool/code-dispatch-start" => None,
    T_TOOL_CODE_DISPATCH: "tool/code-dispatch" => None,
    T_TOOL_WORKFLOW_RUN_START: "tool-workflow/run-start" => None,
    T_TOOL_WORKFLOW_RUN_END: "tool-workflow/run-end" => None,
    T_TOOL_WORKFLOW_AGENT_START: "tool-workflow/agent-start" => None,
    T_TOOL_WORKFLOW_AGENT_END: "tool-workflow/agent-end" => None,
    T_WEB_DEEPSEEK_SEARCH_LLM_REQUEST: "web/deepseek-search-llm-request" => None,
    T_CONTEXT_MESSAGE: "context/message" => Some(SurfaceType::ContextMessage),
    T_STEERING_MESSAGE: "steering/message" => Some(SurfaceType::SteeringMessage),
}

impl TypeName {
    /// The static entry for a DSH v0 type or a legacy surface type: only the names of the
    /// name's length (at most six share one) are compared, whatever the order of the list.
    /// (The unit test below finds every name of the vocabulary here.)
    fn known(name: &str) -> Option<&'static KnownType> {
        let candidates: &[&'static KnownType] = match name.len() {
            8 => &[&T_TURN_END, &T_STEP_END],
            9 => &[&T_TOOL_CALL, &T_LLM_RETRY, &T_PLAN_MODE, &T_TEAM_TASK],
            10 => &[&T_TURN_START, &T_STEP_START, &T_TODO_WRITE],
            11 => &[
                &T_TOOL_RESULT,
                &T_COMMAND_RUN,
                &T_GOAL_CHANGE,
                &T_HOOK_RESULT,
                &T_TEAM_MEMBER,
            ],
            12 => &[
                &T_USER_MESSAGE,
                &T_COMMAND_DONE,
                &T_HOOK_INVOKED,
                &T_SANDBOX_MODE,
            ],
            13 => &[&T_SESSION_TITLE],
            14 => &[&T_REQUEST_HEADER, &T_APPROVAL_ASKED, &T_COMPACTION_END],
            15 => &[
                &T_ASSISTANT_CHUNK,
                &T_REQUEST_CONTEXT,
                &T_APPROVAL_POLICY,
                &T_FEEDBACK_RECORD,
                &T_SCHEDULE_CHANGE,
                &T_CONTEXT_MESSAGE,
            ],
            16 => &[
                &T_SESSION_END_SEED,
                &T_APPROVAL_DECIDED,
                &T_COMPACTION_START,
                &T_COMPACTION_PRUNE,
                &T_STEERING_MESSAGE,
            ],
            17 => &[
                &T_ASSISTANT_MESSAGE,
                &T_LLM_RETRY_STARTED,
                &T_PERMISSION_PRESET,
            ],
            18 => &[&T_COMPACTION_SUMMARY, &T_TOOL_CODE_DISPATCH],
            19 => &[
                &T_AGENT_INBOX_SPLICED,
                &T_SUBAGENT_DESCRIPTOR,
                &T_TEAM_MESSAGE_QUEUED,
            ],
            21 => &[&T_AGENT_PRESET_SELECTED, &T_TOOL_WORKFLOW_RUN_END],
            22 => &[&T_TEAM_MESSAGE_DELIVERED],
            23 => &[&T_TOOL_WORKFLOW_RUN_START, &T_TOOL_WORKFLOW_AGENT_END],
            24 => &[&T_TOOL_CODE_DISPATCH_START],
            25 => &[&T_SESSION_TITLE_LLM_REQUEST, &T_TOOL_WORKFLOW_AGENT_START],
            31 => &[&T_WEB_DEEPSEEK_SEARCH_LLM_REQUEST],
            _ => return None,
        };
        candidates.iter().copied().find(|k| k.name == name)
    }

    fn as_str(&self) -> &str {
        match self {
            TypeName::Known(k) => k.name,
            TypeName::Other(s) => s,
        }
    }

    fn interned(name: &str) -> Self {
        Self::known(name).map_or_else(|| TypeName::Other(Box::new(name.into())), TypeName::Known)
    }

    fn from_boxed(name: Box<str>) -> Self {
        Self::known(&name).map_or_else(|| TypeName::Other(Box::new(name)), TypeName::Known)
    }

    fn surface_type(&self) -> Option<SurfaceType> {
        match self {
            TypeName::Known(k) => k.surface,
            TypeName::Other(s) => SurfaceType::from_name(s),
        }
    }
}

impl PartialEq for TypeName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for TypeName {}

/// Where a DSH file put a streamed chunk event relative to its packed rows. DSH packs a run of
/// chunks within one write batch, so its rows break where its batches broke; an import
/// remembers that here so the JSONL export writes the same rows, byte for byte. Events
/// appended through the API carry no hint and are packed as runs allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum PackHint {
    /// No constraint: packed with its neighbours when they form a run.
    #[default]
    Free,
    /// A packed row began at this event.
    RowStart,
    /// This event was a line of its own.
    Lone,
}

/// One session event.
///
/// Equality is of the event (type, seq, time, data, sources, surface op, ignorable, and the
/// key order of its line), not of its [`PackHint`] or [`Event::frame_start`], which are
/// layout only.
#[derive(Debug, Clone)]
pub struct Event {
    event_type: TypeName,
    seq: u64,
    time: i64,
    data: Box<[u8]>,
    sources: Option<Box<[u64]>>,
    /// The surface op: `op` 0 none, 1 append, 2 replace with `replace` its start and end
    /// (boxed: replaces are rare, and the common event stays 80 bytes).
    op: u8,
    replace: Option<Box<[u64; 2]>>,
    ignorable: bool,
    surface_op_first: bool,
    pack_hint: PackHint,
    frame_start: bool,
    /// `data` was checked as lossless JSON nested at most this deep, as part of the JSONL
    /// line it came in (`from_jsonl`): the acceptance function does not check it again
    /// (`docs/DESIGN.md` §2.2, once). Set only here, inside the crate; not part of equality.
    data_valid_to: Option<std::num::NonZeroU16>,
    /// What `data` was found to be beyond valid JSON, with the line it came in: a streamed
    /// chunk the acceptance function need not recognize again. Not part of equality.
    data_form: DataForm,
}

/// What reading an event's line found its `data` to be, beyond lossless JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DataForm {
    /// Nothing more is known.
    Unknown,
    /// A streamed chunk in the form DSH writes (`json::valid_by_chunk_shortcut` said yes).
    DshChunk,
}

/// A surface op as the event holds it: `op` 0 none, 1 append, 2 replace with its range.
#[inline]
fn surface_op_fields(op: Option<SurfaceOp>) -> (u8, Option<Box<[u64; 2]>>) {
    match op {
        None => (0, None),
        Some(SurfaceOp::Append) => (1, None),
        Some(SurfaceOp::Replace { start, end }) => (2, Some(Box::new([start, end]))),
    }
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.event_type == o.event_type
            && self.seq == o.seq
            && self.time == o.time
            && self.data == o.data
            && self.sources == o.sources
            && self.surface_op() == o.surface_op()
            && self.ignorable == o.ignorable
            && self.surface_op_first == o.surface_op_first
    }
}

impl Eq for Event {}

impl Event {
    /// An event with no surface metadata. Nothing is validated here: the acceptance function
    /// validates every event before a session takes it.
    pub fn new(
        event_type: impl Into<Box<str>>,
        seq: u64,
        time: i64,
        data: impl Into<Box<[u8]>>,
    ) -> Self {
        Self::named(
            TypeName::from_boxed(event_type.into()),
            seq,
            time,
            data.into(),
        )
    }

    fn named(event_type: TypeName, seq: u64, time: i64, data: Box<[u8]>) -> Self {
        Self {
            event_type,
            seq,
            time,
            data,
            sources: None,
            op: 0,
            replace: None,
            ignorable: false,
            surface_op_first: false,
            pack_hint: PackHint::Free,
            frame_start: false,
            data_valid_to: None,
            data_form: DataForm::Unknown,
        }
    }

    /// An event with no surface metadata whose type is `name`: a type of the vocabulary is
    /// not copied.
    pub(crate) fn with_type_str(name: &str, seq: u64, time: i64, data: Box<[u8]>) -> Self {
        Self::named(TypeName::interned(name), seq, time, data)
    }

    /// An event from a draft's parts, built in place: through `named` and the `with_*`
    /// builders each step moved the 80-byte event again (~13 ns of an append by the profile,
    /// `docs/PERFORMANCE.md`).
    pub(crate) fn from_draft(
        event_type: Cow<'static, str>,
        seq: u64,
        time: i64,
        data: Box<[u8]>,
        sources: Option<Box<[u64]>>,
        surface_op: Option<SurfaceOp>,
        ignorable: bool,
    ) -> Self {
        let event_type = match event_type {
            Cow::Borrowed(name) => TypeName::interned(name),
            Cow::Owned(name) => TypeName::from_boxed(name.into_boxed_str()),
        };
        let (op, replace) = surface_op_fields(surface_op);
        Self {
            event_type,
            seq,
            time,
            data,
            sources,
            op,
            replace,
            ignorable,
            surface_op_first: false,
            pack_hint: PackHint::Free,
            frame_start: false,
            data_valid_to: None,
            data_form: DataForm::Unknown,
        }
    }

    /// Marks `data` as checked lossless JSON nested at most `max_depth` deep (a depth past
    /// `u16` is not marked: it is checked again).
    pub(crate) fn mark_data_valid(mut self, max_depth: u32) -> Self {
        self.data_valid_to = u16::try_from(max_depth)
            .ok()
            .and_then(std::num::NonZeroU16::new);
        self
    }

    /// Marks `data` as a streamed chunk in DSH's form, as the chunk recognizer found it with
    /// the event's line (the type is the caller's to have checked).
    pub(crate) fn mark_dsh_chunk(mut self) -> Self {
        debug_assert!(self.is_assistant_chunk(), "{}", self.event_type());
        self.data_form = DataForm::DshChunk;
        self
    }

    /// Whether `data` is known to be a chunk in DSH's form that the recognizer accepts under
    /// `limits` (it says yes to the form only within the size limit and a depth of two).
    pub(crate) fn dsh_chunk_within(&self, limits: &Limits) -> bool {
        self.data_form == DataForm::DshChunk
            && self.data.len() <= limits.max_data_bytes
            && limits.max_depth >= 2
    }

    /// Whether `data` is known to be lossless JSON within `limits` (checked with its line).
    pub(crate) fn data_valid_within(&self, limits: &Limits) -> bool {
        self.data_valid_to
            .is_some_and(|d| u32::from(d.get()) <= limits.max_depth)
            && self.data.len() <= limits.max_data_bytes
    }

    /// Sets `sourceEventSeqs`.
    #[must_use]
    pub fn with_sources(mut self, sources: impl Into<Box<[u64]>>) -> Self {
        self.sources = Some(sources.into());
        self
    }

    /// Sets or clears `sourceEventSeqs`.
    #[must_use]
    pub fn with_sources_opt(mut self, sources: Option<Box<[u64]>>) -> Self {
        self.sources = sources;
        self
    }

    /// Sets `surfaceOp`.
    #[must_use]
    pub fn with_surface_op(mut self, op: SurfaceOp) -> Self {
        self.set_surface_op(Some(op));
        self
    }

    /// Sets or clears `surfaceOp`.
    #[must_use]
    pub fn with_surface_op_opt(mut self, op: Option<SurfaceOp>) -> Self {
        self.set_surface_op(op);
        self
    }

    /// Sets `ignorable: true` (or removes it).
    #[must_use]
    pub fn with_ignorable(mut self, ignorable: bool) -> Self {
        self.ignorable = ignorable;
        self
    }

    /// Writes `surfaceOp` before `sourceEventSeqs` in the JSONL line, as DSH writes its
    /// repair closers. Kept only when both are present (so call it after
    /// [`Event::with_sources`] and [`Event::with_surface_op`]): the one place that rule is.
    #[must_use]
    pub fn with_surface_op_first(mut self, first: bool) -> Self {
        self.surface_op_first = first && self.sources.is_some() && self.op != 0;
        self
    }

    /// Sets where the JSONL export puts this event relative to packed rows.
    #[must_use]
    pub fn with_pack_hint(mut self, hint: PackHint) -> Self {
        self.pack_hint = hint;
        self
    }

    /// Where the JSONL export puts this event relative to packed rows.
    pub fn pack_hint(&self) -> PackHint {
        self.pack_hint
    }

    /// Marks the event as the first of a zstd frame in the imported file (DSH writes one
    /// frame per write batch): a zstd export begins a frame here, reproducing DSH's file.
    #[must_use]
    pub fn with_frame_start(mut self, start: bool) -> Self {
        self.frame_start = start;
        self
    }

    /// Whether a zstd export begins a frame at this event.
    pub fn frame_start(&self) -> bool {
        self.frame_start
    }

    /// Replaces the seq (used when an event is re-based, for example by repair or import).
    #[must_use]
    pub fn with_seq(mut self, seq: u64) -> Self {
        self.seq = seq;
        self
    }

    /// Sets the seq in place: an appended event takes its seq under the write lock.
    pub(crate) fn set_seq(&mut self, seq: u64) {
        self.seq = seq;
    }

    /// The event type.
    pub fn event_type(&self) -> &str {
        self.event_type.as_str()
    }

    /// As [`Event::new`], the type given as text: a common type's name is not allocated.
    pub fn with_type_name(
        event_type: &str,
        seq: u64,
        time: i64,
        data: impl Into<Box<[u8]>>,
    ) -> Self {
        // Built directly: through `new("")` an unknown empty name was boxed, then dropped (an
        // allocation per event the optimizer removed only in release builds).
        Self::named(TypeName::interned(event_type), seq, time, data.into())
    }

    /// The seq: the event's index in its session.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Unix epoch milliseconds.
    pub fn time(&self) -> i64 {
        self.time
    }

    /// The exact `data` bytes.
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// A navigable view of `data` (meaningful once the event has been accepted).
    pub fn data_json(&self) -> JsonRef<'_> {
        JsonRef::new(&self.data)
    }

    /// `sourceEventSeqs`, when present.
    pub fn sources(&self) -> Option<&[u64]> {
        self.sources.as_deref()
    }

    /// `surfaceOp`, when present.
    pub fn surface_op(&self) -> Option<SurfaceOp> {
        match (self.op, &self.replace) {
            (1, _) => Some(SurfaceOp::Append),
            (2, Some(r)) => Some(SurfaceOp::Replace {
                start: r[0],
                end: r[1],
            }),
            _ => None,
        }
    }

    fn set_surface_op(&mut self, op: Option<SurfaceOp>) {
        (self.op, self.replace) = surface_op_fields(op);
    }

    /// Whether the JSONL line puts `surfaceOp` before `sourceEventSeqs`.
    pub fn surface_op_first(&self) -> bool {
        self.surface_op_first && self.sources.is_some() && self.op != 0
    }

    /// Whether the type is in DSH's v0 vocabulary (or is one of the two legacy surface
    /// types): every other type must be `ignorable` for DSH's loader to read it.
    pub fn has_known_type(&self) -> bool {
        matches!(self.event_type, TypeName::Known(_))
    }

    /// Whether `ignorable: true` is set.
    pub fn ignorable(&self) -> bool {
        self.ignorable
    }

    /// The vocabulary rule, the one place it is: a type outside DSH's v0 vocabulary without
    /// `ignorable: true`, which DSH's loader refuses (the store rejects it as
    /// `UnknownType`; an import refuses the whole input as another format).
    pub fn outside_vocabulary(&self) -> bool {
        !self.has_known_type() && !self.ignorable()
    }

    /// The surface type of this event, if its type is one.
    pub fn surface_type(&self) -> Option<SurfaceType> {
        self.event_type.surface_type()
    }

    /// Whether the type is `assistant/chunk` (one pointer compared: the name is interned).
    pub(crate) fn is_assistant_chunk(&self) -> bool {
        matches!(self.event_type, TypeName::Known(k) if std::ptr::eq(k, &T_ASSISTANT_CHUNK))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_type_is_interned_with_its_surface_type() {
        for name in types::DSH_V0_TYPES
            .iter()
            .copied()
            .chain(["context/message", "steering/message"])
        {
            let e = Event::new(name, 0, 0, &b"{}"[..]);
            assert!(matches!(e.event_type, TypeName::Known(_)), "{name}");
            assert_eq!(e.event_type(), name);
            assert_eq!(e.surface_type(), SurfaceType::from_name(name), "{name}");
            let e = Event::with_type_name(name, 0, 0, &b"{}"[..]);
            assert!(matches!(e.event_type, TypeName::Known(_)), "{name}");
        }
        let e = Event::new("plugin/x", 0, 0, &b"{}"[..]);
        assert!(matches!(e.event_type, TypeName::Other(_)));
        assert_eq!(e.event_type(), "plugin/x");
        assert_eq!(e.surface_type(), None);
    }

    #[test]
    fn the_surface_op_round_trips_and_takes_part_in_equality() {
        let base = Event::new("user/message", 1, 0, &b"{}"[..]);
        for op in [
            None,
            Some(SurfaceOp::Append),
            Some(SurfaceOp::Replace { start: 3, end: 9 }),
        ] {
            let e = base.clone().with_surface_op_opt(op);
            assert_eq!(e.surface_op(), op);
            assert_eq!(e.clone(), e);
        }
        assert_ne!(
            base.clone()
                .with_surface_op(SurfaceOp::Replace { start: 3, end: 9 }),
            base.with_surface_op(SurfaceOp::Replace { start: 3, end: 8 })
        );
    }

    /// `messages()` and every scan walk events in memory: the common event stays 80 bytes
    /// (104 before; `docs/PERFORMANCE.md` has what it gained).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_event_is_80_bytes() {
        assert_eq!(std::mem::size_of::<Event>(), 80);
    }
}
