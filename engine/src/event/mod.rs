//! The DSH v0 event envelope: `type`, `seq`, `time`, `data`, `sourceEventSeqs?`,
//! `surfaceOp?`, `ignorable?` (`docs/DESIGN.md` §2.3).
//!
//! `data` is kept as the exact JSON bytes received; the acceptance function validates them
//! once, and nothing re-serializes them afterwards.

mod jsonl;
pub(crate) mod types;
pub mod view;

pub use types::{LogType, SurfaceType, is_known_type};

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

/// An event type name: the common DSH types are static strings, so decoding an event
/// allocates nothing for its type.
#[derive(Debug, Clone)]
enum TypeName {
    /// A common type's static name, and its surface type (read for every message derived).
    Known(&'static str, Option<SurfaceType>),
    Other(Box<str>),
}

impl TypeName {
    fn as_str(&self) -> &str {
        match self {
            TypeName::Known(s, _) => s,
            TypeName::Other(s) => s,
        }
    }

    /// The static name for a common type.
    fn known(name: &str) -> Option<&'static str> {
        Some(match name {
            "assistant/chunk" => "assistant/chunk",
            "user/message" => "user/message",
            "assistant/message" => "assistant/message",
            "tool/result" => "tool/result",
            "tool/call" => "tool/call",
            "turn/start" => "turn/start",
            "turn/end" => "turn/end",
            "step/start" => "step/start",
            "step/end" => "step/end",
            "request/header" => "request/header",
            "request/context" => "request/context",
            "session/end-seed" => "session/end-seed",
            "session/title" => "session/title",
            _ => return None,
        })
    }

    fn interned(name: &str) -> Self {
        Self::known(name).map_or_else(
            || TypeName::Other(name.into()),
            |s| TypeName::Known(s, SurfaceType::from_name(s)),
        )
    }

    fn surface_type(&self) -> Option<SurfaceType> {
        match self {
            TypeName::Known(_, surface) => *surface,
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
    surface_op: Option<SurfaceOp>,
    ignorable: bool,
    surface_op_first: bool,
    pack_hint: PackHint,
    frame_start: bool,
}

impl PartialEq for Event {
    fn eq(&self, o: &Self) -> bool {
        self.event_type == o.event_type
            && self.seq == o.seq
            && self.time == o.time
            && self.data == o.data
            && self.sources == o.sources
            && self.surface_op == o.surface_op
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
        Self {
            event_type: TypeName::Other(event_type.into()),
            seq,
            time,
            data: data.into(),
            sources: None,
            surface_op: None,
            ignorable: false,
            surface_op_first: false,
            pack_hint: PackHint::Free,
            frame_start: false,
        }
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
        self.surface_op = Some(op);
        self
    }

    /// Sets or clears `surfaceOp`.
    #[must_use]
    pub fn with_surface_op_opt(mut self, op: Option<SurfaceOp>) -> Self {
        self.surface_op = op;
        self
    }

    /// Sets `ignorable: true` (or removes it).
    #[must_use]
    pub fn with_ignorable(mut self, ignorable: bool) -> Self {
        self.ignorable = ignorable;
        self
    }

    /// Writes `surfaceOp` before `sourceEventSeqs` in the JSONL line, as DSH writes its
    /// repair closers; only matters when both are present.
    #[must_use]
    pub fn with_surface_op_first(mut self, first: bool) -> Self {
        self.surface_op_first = first;
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
        Self {
            event_type: TypeName::interned(event_type),
            ..Self::new("", seq, time, data)
        }
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
        self.surface_op
    }

    /// Whether the JSONL line puts `surfaceOp` before `sourceEventSeqs`.
    pub fn surface_op_first(&self) -> bool {
        self.surface_op_first && self.sources.is_some() && self.surface_op.is_some()
    }

    /// Whether `ignorable: true` is set.
    pub fn ignorable(&self) -> bool {
        self.ignorable
    }

    /// The surface type of this event, if its type is one.
    pub fn surface_type(&self) -> Option<SurfaceType> {
        self.event_type.surface_type()
    }
}
