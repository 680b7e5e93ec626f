//! The acceptance function: one check of a candidate event against a session's state, used
//! identically by live appends, seeds, restores, imports and forks (DESIGN §2, reference
//! §3.2–§3.3).
//!
//! It plans before it commits: [`plan`] reads the state and returns the surface change, or
//! the first rule the event breaks; only [`SessionState::apply`] mutates, so a refused event
//! leaves the session exactly as it was.

use std::borrow::Cow;

use super::repair::RepairFacts;
use super::shape;
use super::state::SessionState;
use super::surface::SurfaceChange;
use super::verdict::Verdict;
use crate::event::{Event, SurfaceOp, SurfaceType, types::names};
use crate::json::{JsonKind, JsonRef, Node, Tape, valid_by_chunk_shortcut, validate};
use crate::{Error, Limits, Result, Violation};

/// Read access to a session's accepted events, for the rules that look back at one (the
/// `tool/result` replacement rule). The in-memory session and the durable store both
/// implement it.
pub(crate) trait EventSource {
    /// The accepted event with `seq`, if there is one.
    ///
    /// # Errors
    /// Whatever reading the event can fail with (I/O, corruption).
    fn event(&self, seq: u64) -> Result<Option<Cow<'_, Event>>>;
}

/// Checks `event` against `state`; returns what it does to the surface.
///
/// # Errors
/// [`Error::Rejected`] with the first rule broken, or an error of `source`.
pub(crate) fn plan(
    session: &str,
    state: &SessionState,
    source: &dyn EventSource,
    event: &Event,
    limits: &Limits,
) -> Result<Verdict> {
    rejected(session, event, check(state, source, event, limits)?)
}

/// [`plan`] of an event whose own rules passed before its session was looked at
/// ([`precheck`], outside the write lock): only the rules that read the state run here.
///
/// # Errors
/// As [`plan`].
pub(crate) fn plan_checked(
    session: &str,
    state: &SessionState,
    source: &dyn EventSource,
    event: &Event,
    checked: EventChecked,
    limits: &Limits,
) -> Result<Verdict> {
    // Where the check made outside the lock crosses into the plan: the same rules on the
    // same bytes, at the event's seq now, decide the same. (Not for facts held on the heap,
    // a message calling several tools: checking would allocate, and the allocation test
    // counts a debug build's appends; the store's proptests compare those with a replay.)
    debug_assert!(
        checked.0.facts.spilled() || own_rules(event, limits).ok().as_ref() == Some(&checked),
        "seq {}: a precheck the event's own rules do not give",
        event.seq()
    );
    let verdict = if event.seq() == state.next_seq {
        finish(state, source, event, checked)?
    } else {
        Err(Violation::SeqNotContiguous {
            expected: state.next_seq,
        })
    };
    rejected(session, event, verdict)
}

fn rejected(session: &str, event: &Event, verdict: Result<Verdict, Violation>) -> Result<Verdict> {
    verdict.map_err(|violation| Error::Rejected {
        session: session.to_owned(),
        seq: event.seq(),
        violation,
    })
}

/// What the rules that read an event alone decided of it: every one of them passed, and its
/// verdict as far as they decide it — a log event's whole, a surface event's an `Append`
/// until the rules that need the session (the seq, the sources against it, a replace's
/// endpoints) have run. The same layout as the verdict it becomes: a batch's vector of
/// them is planned in place.
#[derive(Debug, Clone, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct EventChecked(Verdict);

/// The rules that read `event` alone, run before its session is looked at (an appender runs
/// them outside the write lock, so that appenders check their events side by side):
/// `Some` when every one passed. `None` says nothing: the plan under the lock runs every rule
/// again and names the first one broken, with its seq, in DSH's order.
pub(crate) fn precheck(event: &Event, limits: &Limits) -> Option<EventChecked> {
    own_rules(event, limits).ok()
}

/// The rules in order; the outer `Result` carries errors of `source`.
fn check(
    state: &SessionState,
    source: &dyn EventSource,
    event: &Event,
    limits: &Limits,
) -> Result<Result<Verdict, Violation>> {
    if event.seq() != state.next_seq {
        return Ok(Err(Violation::SeqNotContiguous {
            expected: state.next_seq,
        }));
    }
    match own_rules(event, limits) {
        Ok(checked) => finish(state, source, event, checked),
        Err(v) => Ok(Err(v)),
    }
}

/// The rules after the seq that read the event alone, in DSH's order.
fn own_rules(event: &Event, limits: &Limits) -> Result<EventChecked, Violation> {
    let ty = event.event_type();
    // DSH loads an ignorable event of any type, the empty one included.
    if ty.is_empty() && !event.ignorable() {
        return Err(Violation::EmptyType);
    }
    // DSH loads an ignorable event whatever its type's length; the log stores any length
    // (FORMAT.md §4), so the type is held to the limit of `data`.
    if ty.len() > limits.max_data_bytes {
        return Err(Violation::TypeTooLong {
            len: ty.len(),
            limit: limits.max_data_bytes,
        });
    }
    // DSH's loader refuses a session holding an unknown type that is not ignorable: what it
    // cannot load is never stored (a plugin event without the mark made whole histories
    // unloadable, reference §9).
    if event.outside_vocabulary() {
        return Err(Violation::UnknownType {
            type_name: ty.to_owned(),
        });
    }
    // Most events are streamed chunks in the form DSH writes them: valid JSON by the one pass
    // that recognizes the form, and no rule after it reads anything of them — a log type
    // with no surface metadata (else the general path below refuses it) and no repair fact.
    // Decided here, without the index, the type's name compared once (a pointer); a chunk
    // read from its JSONL line was recognized there, and is not read again.
    let known_chunk = event.dsh_chunk_within(limits);
    debug_assert!(!known_chunk || valid_by_chunk_shortcut(event.data(), limits));
    if event.is_assistant_chunk()
        && event.surface_op().is_none()
        && event.sources().is_none()
        && (known_chunk || valid_by_chunk_shortcut(event.data(), limits))
    {
        return Ok(EventChecked(Verdict {
            change: SurfaceChange::None,
            facts: RepairFacts::default(),
        }));
    }
    // One pass validates `data` and indexes its members: the rules below read them from the
    // index instead of walking `data` again (`json/tape.rs`). The index is the thread's,
    // reused, so indexing allocates nothing in steady state.
    thread_local! {
        static TAPE: std::cell::RefCell<Tape> = std::cell::RefCell::new(Tape::new());
    }
    TAPE.with(|cell| match cell.try_borrow_mut() {
        Ok(mut tape) => check_data(event, limits, &mut tape),
        // Not re-entered today; if it ever is, a fresh index keeps it correct.
        Err(_) => check_data(event, limits, &mut Tape::new()),
    })
}

/// The event's own rules from the validation of `data` on.
fn check_data(event: &Event, limits: &Limits, tape: &mut Tape) -> Result<EventChecked, Violation> {
    let ty = event.event_type();
    let data = parse_data(event, limits, tape)?;
    shape::check_legacy(ty, data)?;
    // DSH's order: the loader's marker checks, the payload shapes (reference §3.2 items 5
    // and 6), then the surface transition (item 7). When an event breaks rules of two of
    // these steps, the refusal names the same rule as DSH's error.
    shape::check_marker(ty, data)?;
    // DSH's loader reads an ignorable `context/message` with no surface metadata as a log
    // event (measured with DSH's own code): so does sessdb.
    let surface_type = match event.surface_type() {
        Some(crate::event::SurfaceType::ContextMessage)
            if event.ignorable() && event.surface_op().is_none() && event.sources().is_none() =>
        {
            None
        }
        other => other,
    };
    let Some(surface_type) = surface_type else {
        return check_log_event(event, data);
    };
    shape::check_message(surface_type, data)?;
    if event.surface_op().is_none() {
        return Err(Violation::SurfaceOpMissing {
            type_name: ty.to_owned(),
        });
    }
    if let Some(sources) = event.sources() {
        check_sources(surface_type, sources)?;
    }
    Ok(EventChecked(Verdict {
        change: SurfaceChange::Append,
        facts: RepairFacts::read(ty, Some(surface_type), data),
    }))
}

/// The rules after the event's own: a surface event's sources against its seq, then a
/// replace against the surface.
fn finish(
    state: &SessionState,
    source: &dyn EventSource,
    event: &Event,
    checked: EventChecked,
) -> Result<Result<Verdict, Violation>> {
    let EventChecked(mut verdict) = checked;
    if matches!(verdict.change, SurfaceChange::None) {
        return Ok(Ok(verdict));
    }
    // The last provenance rule, DSH's order kept: members before the own seq.
    let seq = event.seq();
    if let Some(&late) = event.sources().and_then(|s| s.iter().find(|&&s| s >= seq)) {
        return Ok(Err(Violation::SourceNotEarlier { source_seq: late }));
    }
    // A surface op on an event the rules took for a log event was refused: a replace here
    // is a surface event's.
    if let (Some(SurfaceOp::Replace { start, end }), Some(surface_type)) =
        (event.surface_op(), event.surface_type())
    {
        let replace = Replace {
            surface_type,
            start,
            end,
        };
        match check_replace(state, source, event, replace)? {
            Ok(change) => verdict.change = change,
            Err(v) => return Ok(Err(v)),
        }
    }
    Ok(Ok(verdict))
}

/// The event's `data` checked as JSON and, for the types whose members the rules read,
/// indexed. A streamed chunk (most events) would pay for an index nothing reads.
#[inline]
fn parse_data<'t>(
    event: &'t Event,
    limits: &Limits,
    tape: &'t mut Tape,
) -> Result<Node<'t>, Violation> {
    let ty = event.event_type();
    let indexed = event.surface_type().is_some()
        || matches!(
            ty,
            names::TURN_START
                | names::TURN_END
                | names::STEP_START
                | names::TOOL_CALL
                | names::REQUEST_HEADER
        );
    if indexed {
        tape.validate(event.data(), limits)
            .map_err(Violation::InvalidData)?;
        return Ok(tape.root(event.data()));
    }
    // Checked already with the JSONL line it came in, or a chunk in the form DSH writes:
    // valid JSON by that one pass (most events are).
    let checked = event.data_valid_within(limits)
        || (ty == names::ASSISTANT_CHUNK && valid_by_chunk_shortcut(event.data(), limits));
    debug_assert!(
        !checked || validate(event.data(), limits).is_ok(),
        "seq {}: data marked valid that the validator refuses",
        event.seq()
    );
    if !checked {
        validate(event.data(), limits).map_err(Violation::InvalidData)?;
    }
    Ok(Node::plain(event.data_json()))
}

/// A log event (no surface type): its own shapes, and no surface metadata.
fn check_log_event(event: &Event, data: Node<'_>) -> Result<EventChecked, Violation> {
    let ty = event.event_type();
    if ty == names::REQUEST_HEADER {
        shape::check_request_header(data)?;
    }
    if event.surface_op().is_some() {
        return Err(Violation::SurfaceOpOnLogType {
            type_name: ty.to_owned(),
        });
    }
    if event.sources().is_some() {
        return Err(Violation::SourcesOnLogType {
            type_name: ty.to_owned(),
        });
    }
    Ok(EventChecked(Verdict {
        change: SurfaceChange::None,
        facts: RepairFacts::read(ty, None, data),
    }))
}

/// A `replace` surface op: what it replaces, and the event's surface type.
#[derive(Clone, Copy)]
struct Replace {
    surface_type: SurfaceType,
    start: u64,
    end: u64,
}

/// The rules of a `replace`: both endpoints on the surface and in order, every shadowed
/// seq cited, and a tool result replacing exactly one tool result with only its content
/// changed.
fn check_replace(
    state: &SessionState,
    source: &dyn EventSource,
    event: &Event,
    op: Replace,
) -> Result<Result<SurfaceChange, Violation>> {
    let Replace {
        surface_type,
        start,
        end,
    } = op;
    let surface = &state.surface;
    let Some(start_pos) = surface.position(start) else {
        return Ok(Err(Violation::ReplaceEndpointNotOnSurface {
            which: "start",
            endpoint: start,
        }));
    };
    let Some(end_pos) = surface.position(end) else {
        return Ok(Err(Violation::ReplaceEndpointNotOnSurface {
            which: "end",
            endpoint: end,
        }));
    };
    if start_pos > end_pos {
        return Ok(Err(Violation::ReplaceOutOfOrder { start, end }));
    }
    let shadowed = surface.seqs().get(start_pos..=end_pos).unwrap_or_default();
    let cited = event.sources().unwrap_or_default();
    if let Some(&missing) = shadowed.iter().find(|s| !cited.contains(s)) {
        return Ok(Err(Violation::ReplaceSourcesIncomplete { missing }));
    }
    if surface_type == SurfaceType::ToolResult {
        if shadowed.len() != 1 {
            return Ok(Err(Violation::ToolResultReplaceWidth {
                shadowed: shadowed.len(),
            }));
        }
        let Some(target) = source.event(start)? else {
            return Ok(Err(Violation::ReplaceEndpointNotOnSurface {
                which: "start",
                endpoint: start,
            }));
        };
        if target.surface_type() != Some(SurfaceType::ToolResult) {
            return Ok(Err(Violation::ToolResultReplaceTarget {
                target: start,
                target_type: target.event_type().to_owned(),
            }));
        }
        if !equal_but_result_content(target.data_json(), event.data_json()) {
            return Ok(Err(Violation::ToolResultReplaceChanged { target: start }));
        }
    }
    Ok(Ok(SurfaceChange::Replace(start_pos..=end_pos)))
}

/// The provenance rules that read the event alone, in DSH's order: `[]` only on
/// `assistant/message`, unique. (Members before the own seq: [`finish`].)
fn check_sources(ty: SurfaceType, sources: &[u64]) -> Result<(), Violation> {
    if sources.is_empty() && ty != SurfaceType::AssistantMessage {
        return Err(Violation::EmptySources);
    }
    // Citations are almost always ascending; sort a copy only when they are not.
    if !sources.is_sorted_by(|a, b| a < b) {
        let mut sorted = sources.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(Violation::DuplicateSource { source_seq: w[0] });
        }
    }
    Ok(())
}

/// DSH: a `tool/result` replacement's `data` must deep-equal the original's except
/// `message.content[0].content` (the tool-result block's content).
fn equal_but_result_content(old: JsonRef<'_>, new: JsonRef<'_>) -> bool {
    enum Step {
        Key(&'static str),
        Index(usize),
    }
    const PATH: [Step; 4] = [
        Step::Key("message"),
        Step::Key("content"),
        Step::Index(0),
        Step::Key("content"),
    ];
    fn walk(a: JsonRef<'_>, b: JsonRef<'_>, path: &[Step]) -> bool {
        let Some((head, rest)) = path.split_first() else {
            return true;
        };
        match head {
            Step::Key(key) => {
                a.kind() == JsonKind::Object
                    && b.kind() == JsonKind::Object
                    && crate::json::object_eq_with(&a, &b, |k, va, vb| {
                        if k == *key {
                            walk(va, vb, rest)
                        } else {
                            va.deep_eq(&vb)
                        }
                    })
            }
            Step::Index(index) => {
                a.kind() == JsonKind::Array
                    && b.kind() == JsonKind::Array
                    && a.elements().count() == b.elements().count()
                    && a.elements()
                        .zip(b.elements())
                        .enumerate()
                        .all(|(i, (x, y))| {
                            if i == *index {
                                walk(x, y, rest)
                            } else {
                                x.deep_eq(&y)
                            }
                        })
            }
        }
    }
    walk(old, new, &PATH)
}

#[cfg(test)]
mod chunk_path_tests {
    use std::borrow::Cow;

    use proptest::prelude::*;

    use crate::event::{Event, SurfaceOp};
    use crate::json::Tape;
    use crate::model::accept::{EventSource, check, check_data, finish};
    use crate::model::state::SessionState;
    use crate::{Limits, Result};

    struct NoEvents;

    impl EventSource for NoEvents {
        fn event(&self, _: u64) -> Result<Option<Cow<'_, Event>>> {
            Ok(None)
        }
    }

    /// `data` of a streamed chunk: DSH's form with any text, or bytes near it.
    fn chunk_data() -> impl Strategy<Value = Vec<u8>> {
        let form =
            (0u64..3, 0u64..3, 0u64..40, "[ -~é\\\\\"\\n]{0,12}").prop_map(|(t, s, i, text)| {
                format!(
                    r#"{{"turn":{t},"step":{s},"chunk":{{"type":"text","index":{i},"text":{}}}}}"#,
                    serde_json_free_quote(&text)
                )
                .into_bytes()
            });
        prop_oneof![
            form.clone(),
            // The form with one byte changed: other keys, broken JSON, other values.
            (form, any::<prop::sample::Index>(), any::<u8>()).prop_map(|(mut b, at, v)| {
                let i = at.index(b.len());
                b[i] = v;
                b
            }),
            "[{}\\[\\]\":,a-z0-9 ]{0,40}".prop_map(String::into_bytes),
        ]
    }

    /// A JSON string literal of `s` (quotes, backslashes and control characters escaped).
    fn serde_json_free_quote(s: &str) -> String {
        let mut out = String::from('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    proptest! {
        /// A chunk decided without the index is decided as the general path decides it:
        /// the same verdict, or the same rule broken.
        #[test]
        fn a_chunk_is_decided_as_the_general_path_decides_it(
            data in chunk_data(),
            op in 0u8..3,
            sources in any::<bool>(),
            ignorable in any::<bool>(),
        ) {
            let state = SessionState::starting_at(5);
            let mut event = Event::new("assistant/chunk", 5, 1, data).with_ignorable(ignorable);
            event = match op {
                1 => event.with_surface_op(SurfaceOp::Append),
                2 => event.with_surface_op(SurfaceOp::Replace { start: 1, end: 2 }),
                _ => event,
            };
            if sources {
                event = event.with_sources(vec![1]);
            }
            let limits = Limits::default();
            let decided = check(&state, &NoEvents, &event, &limits).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let general = match check_data(&event, &limits, &mut Tape::new()) {
                Ok(checked) => finish(&state, &NoEvents, &event, checked)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?,
                Err(v) => Err(v),
            };
            prop_assert_eq!(decided, general);
        }
    }
}
