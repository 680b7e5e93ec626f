//! Events before they have a seq: what callers append.
//!
//! The typed constructors make the DSH rule "a surface type needs a surface intent" a
//! compile-time fact: [`Draft::surface`] takes a [`SurfaceIntent`], and [`Draft::log`] takes a
//! [`LogType`], which cannot name a surface type. [`Draft::dynamic`] accepts any type string
//! and leaves the rule to the acceptance function at run time.

use std::borrow::{Borrow, Cow};

use crate::event::{Event, LogType, SurfaceOp, SurfaceType};

/// What an event's `data` can be given as: `&[u8]`, a byte-string literal `&[u8; N]`, `&str`,
/// `String`, `Vec<u8>` or `Box<[u8]>` (the owned ones are taken without a copy). The bytes
/// must be one JSON value; the acceptance function checks them when the event is appended.
///
/// ```
/// use sessdb::{Draft, LogType};
///
/// let a = Draft::log(&LogType::TURN_START, br#"{"turn":1}"#);
/// let b = Draft::log(LogType::TURN_START, r#"{"turn":1}"#);
/// let c = Draft::log(LogType::TURN_START, String::from(r#"{"turn":1}"#));
/// let d = Draft::log(LogType::TURN_START, br#"{"turn":1}"#.to_vec());
/// assert!(a == b && b == c && c == d);
/// ```
pub trait EventData {
    /// The bytes, owned.
    fn into_data(self) -> Box<[u8]>;
}

impl EventData for Box<[u8]> {
    fn into_data(self) -> Box<[u8]> {
        self
    }
}

impl EventData for Vec<u8> {
    fn into_data(self) -> Box<[u8]> {
        self.into_boxed_slice()
    }
}

impl EventData for String {
    fn into_data(self) -> Box<[u8]> {
        self.into_bytes().into_boxed_slice()
    }
}

impl EventData for &[u8] {
    fn into_data(self) -> Box<[u8]> {
        self.into()
    }
}

impl<const N: usize> EventData for &[u8; N] {
    fn into_data(self) -> Box<[u8]> {
        self.as_slice().into()
    }
}

impl EventData for &str {
    fn into_data(self) -> Box<[u8]> {
        self.as_bytes().into()
    }
}

impl EventData for &String {
    fn into_data(self) -> Box<[u8]> {
        self.as_bytes().into()
    }
}

impl EventData for &Vec<u8> {
    fn into_data(self) -> Box<[u8]> {
        self.as_slice().into()
    }
}

/// How a surface event enters the surface, and what it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceIntent {
    op: SurfaceOp,
    sources: Option<Box<[u64]>>,
}

impl SurfaceIntent {
    /// Push at the end of the surface.
    pub fn append() -> Self {
        Self {
            op: SurfaceOp::Append,
            sources: None,
        }
    }

    /// Replace the surface nodes `start..=end` (surface order; DSH's `replace` bounds are
    /// inclusive). The sources must cite every shadowed seq.
    pub fn replace(nodes: std::ops::RangeInclusive<u64>) -> Self {
        let (start, end) = nodes.into_inner();
        Self {
            op: SurfaceOp::Replace { start, end },
            sources: None,
        }
    }

    /// Sets `sourceEventSeqs`.
    #[must_use]
    pub fn with_sources(mut self, sources: impl Into<Box<[u64]>>) -> Self {
        self.sources = Some(sources.into());
        self
    }

    /// The surface op.
    pub fn op(&self) -> SurfaceOp {
        self.op
    }
}

/// An event to append; the session assigns its seq and, unless given, its time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    /// Borrowed for the vocabulary's types (`LogType` constants, `SurfaceType`): a draft of a
    /// known type allocates nothing for its type, nor does the event it becomes.
    event_type: Cow<'static, str>,
    data: Box<[u8]>,
    surface_op: Option<SurfaceOp>,
    sources: Option<Box<[u64]>>,
    ignorable: bool,
    time: Option<i64>,
}

impl Draft {
    /// A log-only event. The type may be given by value or by reference
    /// (`LogType::TURN_START` or `&LogType::TURN_START`).
    pub fn log(event_type: impl Borrow<LogType>, data: impl EventData) -> Self {
        Self::typed(event_type.borrow().name(), data)
    }

    /// A surface event with its intent.
    pub fn surface(
        event_type: impl Borrow<SurfaceType>,
        data: impl EventData,
        intent: SurfaceIntent,
    ) -> Self {
        let event_type = *event_type.borrow();
        Self {
            surface_op: Some(intent.op),
            sources: intent.sources,
            ..Self::typed(Cow::Borrowed(event_type.as_str()), data)
        }
    }

    /// Any type string; surface rules are checked when appended.
    pub fn dynamic(event_type: impl Into<Box<str>>, data: impl EventData) -> Self {
        Self::typed(Cow::Owned(event_type.into().into_string()), data)
    }

    fn typed(event_type: Cow<'static, str>, data: impl EventData) -> Self {
        Self {
            event_type,
            data: data.into_data(),
            surface_op: None,
            sources: None,
            ignorable: false,
            time: None,
        }
    }

    /// Sets `surfaceOp` (for dynamic drafts).
    #[must_use]
    pub fn with_surface_op(mut self, op: SurfaceOp) -> Self {
        self.surface_op = Some(op);
        self
    }

    /// Sets `sourceEventSeqs` (for dynamic drafts).
    #[must_use]
    pub fn with_sources(mut self, sources: impl Into<Box<[u64]>>) -> Self {
        self.sources = Some(sources.into());
        self
    }

    /// Marks the event `ignorable: true`.
    #[must_use]
    pub fn ignorable(mut self) -> Self {
        self.ignorable = true;
        self
    }

    /// Sets the event time instead of the session clock's.
    #[must_use]
    pub fn at(mut self, time_ms: i64) -> Self {
        self.time = Some(time_ms);
        self
    }

    /// The time set with [`Draft::at`], if any (otherwise the store's clock stamps it).
    pub fn time(&self) -> Option<i64> {
        self.time
    }

    /// The type string.
    pub fn event_type(&self) -> &str {
        &self.event_type
    }

    /// The event this draft becomes at `seq`, stamped `now` unless it has a time.
    pub fn into_event(self, seq: u64, now: i64) -> Event {
        self.into_event_with(seq, || now)
    }

    /// [`Draft::into_event`], asking `now` for the time only when the draft has none.
    pub(crate) fn into_event_with(self, seq: u64, now: impl FnOnce() -> i64) -> Event {
        let time = self.time.unwrap_or_else(now);
        Event::from_draft(
            self.event_type,
            seq,
            time,
            self.data,
            self.sources,
            self.surface_op,
            self.ignorable,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The event built in one go from a draft is the event the builders make from the same
    /// parts, for every kind of type, surface op, sources and mark.
    #[test]
    fn a_draft_becomes_the_event_its_parts_describe() {
        let data = &b"{\"a\":1}"[..];
        let drafts = [
            Draft::log(LogType::ASSISTANT_CHUNK, data),
            Draft::log(LogType::ASSISTANT_CHUNK, data).ignorable(),
            Draft::dynamic("plugin/x", data).ignorable(),
            Draft::surface(SurfaceType::UserMessage, data, SurfaceIntent::append()),
            Draft::surface(
                SurfaceType::AssistantMessage,
                data,
                SurfaceIntent::append().with_sources(vec![1, 2]),
            ),
            Draft::surface(
                SurfaceType::ToolResult,
                data,
                SurfaceIntent::replace(3..=5).with_sources(vec![3, 4, 5]),
            ),
        ];
        for d in drafts {
            let expected = match &d.event_type {
                Cow::Borrowed(name) => Event::with_type_name(name, 7, 9, d.data.clone()),
                Cow::Owned(name) => Event::new(name.clone(), 7, 9, d.data.clone()),
            }
            .with_sources_opt(d.sources.clone())
            .with_surface_op_opt(d.surface_op)
            .with_ignorable(d.ignorable);
            let got = d.into_event_with(7, || 9);
            assert_eq!(got, expected);
            assert_eq!(got.has_known_type(), expected.has_known_type());
            assert_eq!(got.surface_type(), expected.surface_type());
        }
    }

    #[test]
    fn a_draft_of_a_vocabulary_type_borrows_its_name() {
        let log = Draft::log(LogType::ASSISTANT_CHUNK, &b"{}"[..]);
        let by_ref = Draft::log(&LogType::TURN_START, &b"{}"[..]);
        let surface = Draft::surface(
            SurfaceType::UserMessage,
            &b"{}"[..],
            SurfaceIntent::append(),
        );
        for d in [&log, &by_ref, &surface] {
            assert!(
                matches!(d.event_type, Cow::Borrowed(_)),
                "{}",
                d.event_type()
            );
        }
        let dynamic = Draft::dynamic("plugin/x", &b"{}"[..]);
        assert!(matches!(dynamic.event_type, Cow::Owned(_)));
        let e = log.into_event(3, 9);
        assert_eq!(
            (e.event_type(), e.seq(), e.time()),
            ("assistant/chunk", 3, 9)
        );
        let e = dynamic.into_event(4, 9);
        assert_eq!(e.event_type(), "plugin/x");
        assert_eq!(
            surface.into_event(5, 9).surface_op(),
            Some(SurfaceOp::Append)
        );
    }
}
