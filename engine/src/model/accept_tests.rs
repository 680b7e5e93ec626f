//! One test per acceptance rule: the exact violation, and the session unchanged afterwards.

use crate::{
    Clock, Config, Draft, Error, Event, LogType, Session, SessionHeader, SurfaceIntent, SurfaceOp,
    SurfaceType, Violation,
};
use sessdb_workload::payload as p;

/// seqs: 0 turn/start, 1 user, 2 step/start, 3 assistant (calls c1), 4 tool/call,
/// 5 tool/result, 6 user. Surface: [1, 3, 5, 6].
fn base() -> Session {
    let mut s = Session::restore(
        SessionHeader::new("s", 0),
        [],
        Config {
            clock: Clock::fixed(9),
            ..Config::default()
        },
    )
    .unwrap();
    let surface = |ty, data: String, intent| Draft::surface(ty, data.into_bytes(), intent);
    s.append(Draft::log(
        &LogType::TURN_START,
        p::turn_start(1).into_bytes(),
    ))
    .unwrap();
    s.append(surface(
        SurfaceType::UserMessage,
        p::user_message("u1", "user", "hi"),
        SurfaceIntent::append(),
    ))
    .unwrap();
    s.append(Draft::log(&LogType::STEP_START, p::step(1, 1).into_bytes()))
        .unwrap();
    let a = p::assistant_message(1, 1, "a1", Some("ok"), &[("c1", "bash", "{}")]);
    s.append(surface(
        SurfaceType::AssistantMessage,
        a,
        SurfaceIntent::append().with_sources(Vec::new()),
    ))
    .unwrap();
    s.append(Draft::log(
        &LogType::TOOL_CALL,
        p::tool_call(1, 1, "c1", "bash", "{}").into_bytes(),
    ))
    .unwrap();
    let r = p::tool_result(1, 1, "r1", "c1", "out");
    s.append(surface(
        SurfaceType::ToolResult,
        r,
        SurfaceIntent::append().with_sources(vec![4]),
    ))
    .unwrap();
    s.append(surface(
        SurfaceType::UserMessage,
        p::user_message("u2", "user", "more"),
        SurfaceIntent::append(),
    ))
    .unwrap();
    assert_eq!(s.surface(), &[1, 3, 5, 6]);
    s
}

fn snapshot(s: &Session) -> (crate::SessionState, Vec<Vec<u8>>) {
    (s.state().clone(), s.events().map(Event::to_jsonl).collect())
}

/// Appends `draft` to a fresh base session and returns the violation (asserting seq 7 and
/// that nothing changed).
fn refused(draft: Draft) -> Violation {
    let mut s = base();
    let before = snapshot(&s);
    let split = split_plan(&mut s, draft.clone());
    let err = s.append(draft).unwrap_err();
    assert_eq!(
        split.map_err(|e| e.to_string()),
        Err(err.to_string()),
        "the store's appenders' split (own rules first, then the session's) refuses alike"
    );
    assert_eq!(
        snapshot(&s),
        before,
        "a refused event must leave the session unchanged"
    );
    match err {
        Error::Rejected {
            session,
            seq,
            violation,
        } => {
            assert_eq!((session.as_str(), seq), ("s", 7));
            violation
        }
        other => panic!("expected Rejected, got {other}"),
    }
}

/// The plan a store's appender makes of `draft` as the session's next event: its own rules
/// checked first (outside the write lock), the session's after them.
fn split_plan(s: &mut Session, draft: Draft) -> crate::Result<crate::model::Verdict> {
    let limits = crate::Limits::default();
    let state = s.state().clone();
    let event = draft.into_event(state.next_seq(), 9);
    let checked = crate::model::precheck(&event, &limits);
    let log = s.log_mut();
    match checked {
        Some(c) => crate::model::plan_checked("s", &state, log, &event, c, &limits),
        None => crate::model::plan("s", &state, log, &event, &limits),
    }
}

/// Every draft the base session is built from, and more that are accepted, planned alike
/// both ways (the split above against the one pass), each checked before it is appended.
#[test]
fn an_accepted_event_is_planned_alike_with_its_own_rules_checked_first() {
    let mut s = base();
    let drafts = [
        Draft::log(&LogType::STEP_START, p::step(1, 2).into_bytes()),
        Draft::surface(
            SurfaceType::AssistantMessage,
            p::assistant_message(
                1,
                2,
                "a2",
                Some("x"),
                &[("c2", "bash", "{}"), ("c3", "ls", "{}")],
            )
            .into_bytes(),
            SurfaceIntent::append().with_sources(vec![5, 6]),
        ),
        Draft::log(
            &LogType::TOOL_CALL,
            p::tool_call(1, 2, "c2", "bash", "{}").into_bytes(),
        ),
        Draft::surface(
            SurfaceType::ToolResult,
            p::tool_result(1, 1, "r1", "c1", "again").into_bytes(),
            SurfaceIntent::replace(5..=5).with_sources(vec![5]),
        ),
        replace_user(6, 8, vec![6, 8]),
        Draft::log(&LogType::TURN_END, p::turn_end(1).into_bytes()),
    ];
    for draft in drafts {
        let state = s.state().clone();
        let event = draft.clone().into_event(state.next_seq(), 9);
        let fused = crate::model::plan("s", &state, s.log_mut(), &event, &crate::Limits::default());
        let split = split_plan(&mut s, draft.clone());
        match (fused, split) {
            (Ok(fused), Ok(split)) => assert_eq!(fused, split, "seq {}", state.next_seq()),
            other => panic!("seq {}: refused: {other:?}", state.next_seq()),
        }
        assert!(
            crate::model::precheck(&event, &crate::Limits::default()).is_some(),
            "seq {}: an accepted event passes its own rules",
            state.next_seq()
        );
        s.append(draft).expect("accepted");
    }
}

fn user(id: &str) -> Vec<u8> {
    p::user_message(id, "user", "x").into_bytes()
}

fn replace_user(start: u64, end: u64, sources: Vec<u64>) -> Draft {
    Draft::surface(
        SurfaceType::UserMessage,
        user("sum"),
        SurfaceIntent::replace(start..=end).with_sources(sources),
    )
}

fn replace_tool(start: u64, end: u64, data: String) -> Draft {
    Draft::surface(
        SurfaceType::ToolResult,
        data.into_bytes(),
        SurfaceIntent::replace(start..=end).with_sources(vec![3, 4, 5, 6]),
    )
}

#[test]
fn seq_must_be_contiguous() {
    let mut s = base();
    let before = snapshot(&s);
    let err = s
        .append_event(Event::new("x/y", 9, 0, &b"{}"[..]))
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Rejected {
            seq: 9,
            violation: Violation::SeqNotContiguous { expected: 7 },
            ..
        }
    ));
    let err = s
        .append_event(Event::new("x/y", 6, 0, &b"{}"[..]))
        .unwrap_err();
    assert!(matches!(
        err,
        Error::Rejected {
            seq: 6,
            violation: Violation::SeqNotContiguous { expected: 7 },
            ..
        }
    ));
    assert_eq!(snapshot(&s), before);
}

#[test]
fn type_must_not_be_empty() {
    assert_eq!(
        refused(Draft::dynamic("", &b"{}"[..])),
        Violation::EmptyType
    );
    // An ignorable event of any type loads in DSH, the empty one included.
    let mut s = base();
    s.append(Draft::dynamic("", &b"{}"[..]).ignorable())
        .unwrap();
}

#[test]
fn type_must_fit_the_data_limit() {
    let limit = crate::Limits::DEFAULT_MAX_DATA_BYTES;
    assert_eq!(
        refused(Draft::dynamic("t".repeat(limit + 1), &b"{}"[..]).ignorable()),
        Violation::TypeTooLong {
            len: limit + 1,
            limit
        }
    );
    // Longer than a `u16` (DSH loads such an ignorable event): taken.
    let mut s = base();
    s.append(Draft::dynamic("t".repeat(70_000), &b"{}"[..]).ignorable())
        .unwrap();
}

#[test]
fn legacy_vocabulary_is_refused() {
    // Outside the vocabulary, DSH's loader refuses it as unknown first; marked ignorable, as
    // retired vocabulary.
    assert!(matches!(
        refused(Draft::dynamic("request/header-delta", &b"{}"[..])),
        Violation::UnknownType { .. }
    ));
    assert!(matches!(
        refused(Draft::dynamic("request/header-delta", &b"{}"[..]).ignorable()),
        Violation::LegacyVocabulary { .. }
    ));
    let fallback = p::request_header().replace("initial", "fallback");
    assert!(matches!(
        refused(Draft::log(&LogType::REQUEST_HEADER, fallback.into_bytes())),
        Violation::LegacyVocabulary { .. }
    ));
}

#[test]
fn regression_an_unknown_type_must_be_ignorable_as_dshs_loader_requires() {
    // The store accepted these and its own import then refused them.
    for ty in ["myplugin/note", "turn/strat"] {
        match refused(Draft::dynamic(ty, &br#"{"text":"hello"}"#[..])) {
            Violation::UnknownType { type_name } => assert_eq!(type_name, ty),
            other => panic!("{ty}: {other}"),
        }
    }
    let mut s = base();
    s.append(Draft::dynamic("myplugin/note", &br#"{"text":"hello"}"#[..]).ignorable())
        .unwrap();
    s.append(Draft::log(&LogType::TURN_START, &br#"{"turn":1}"#[..]))
        .unwrap();
}

#[test]
fn regression_an_ignorable_context_message_without_surface_metadata_is_a_log_event() {
    // DSH's loader loads it (measured with DSH's own code); sessdb refused it.
    let mut s = base();
    let data = &br#"{"x":1}"#[..];
    let surface = s.state().surface().seqs().to_vec();
    s.append(Draft::dynamic("context/message", data).ignorable())
        .unwrap();
    assert_eq!(
        s.state().surface().seqs(),
        &surface[..],
        "not on the surface"
    );
    // Not ignorable, it is a surface event as before (its message shape is checked).
    assert!(matches!(
        refused(Draft::dynamic("context/message", data)),
        Violation::MessageShape { .. }
    ));
}

#[test]
fn data_must_be_lossless_json() {
    for (data, kind) in [
        (&b"{\"a\":-0}"[..], crate::json::JsonErrorKind::NegativeZero),
        (b"{\"a\":1e999}", crate::json::JsonErrorKind::NonFinite),
        (
            b"{\"a\":",
            crate::json::JsonErrorKind::Syntax("expected a value"),
        ),
    ] {
        match refused(Draft::dynamic("x/y", data).ignorable()) {
            Violation::InvalidData(e) => assert_eq!(e.kind, kind),
            other => panic!("{other}"),
        }
    }
    let deep = format!("{}{}", "[".repeat(513), "]".repeat(513));
    assert!(matches!(
        refused(Draft::dynamic("x/y", deep.into_bytes()).ignorable()),
        Violation::InvalidData(crate::json::JsonError {
            kind: crate::json::JsonErrorKind::TooDeep { limit: 512 },
            ..
        })
    ));
}

#[test]
fn surface_metadata_only_on_surface_types() {
    assert_eq!(
        refused(Draft::dynamic("turn/start", &b"{}"[..]).with_surface_op(SurfaceOp::Append)),
        Violation::SurfaceOpOnLogType {
            type_name: "turn/start".into()
        }
    );
    assert_eq!(
        refused(Draft::dynamic("turn/start", &b"{}"[..]).with_sources(vec![1])),
        Violation::SourcesOnLogType {
            type_name: "turn/start".into()
        }
    );
}

#[test]
fn surface_types_require_a_surface_op() {
    for ty in SurfaceType::ALL {
        // Data of the right shape: the shape is checked before the surface transition.
        let data = match ty {
            SurfaceType::AssistantMessage => {
                p::assistant_message(1, 1, "a", Some("x"), &[]).into_bytes()
            }
            SurfaceType::ToolResult => p::tool_result(1, 1, "r", "c", "x").into_bytes(),
            _ => user("m"),
        };
        assert_eq!(
            refused(Draft::dynamic(ty.as_str(), data)),
            Violation::SurfaceOpMissing {
                type_name: ty.as_str().into()
            }
        );
    }
}

#[test]
fn empty_sources_only_on_assistant_message() {
    let d = Draft::surface(
        SurfaceType::UserMessage,
        user("m"),
        SurfaceIntent::append().with_sources(Vec::new()),
    );
    assert_eq!(refused(d), Violation::EmptySources);
}

#[test]
fn sources_must_be_unique_and_earlier() {
    let dup = Draft::surface(
        SurfaceType::UserMessage,
        user("m"),
        SurfaceIntent::append().with_sources(vec![3, 1, 3]),
    );
    assert_eq!(refused(dup), Violation::DuplicateSource { source_seq: 3 });
    let late = Draft::surface(
        SurfaceType::UserMessage,
        user("m"),
        SurfaceIntent::append().with_sources(vec![1, 7]),
    );
    assert_eq!(refused(late), Violation::SourceNotEarlier { source_seq: 7 });
}

#[test]
fn replace_endpoints_must_be_on_the_surface() {
    assert_eq!(
        refused(replace_user(2, 6, vec![2, 3, 5, 6])),
        Violation::ReplaceEndpointNotOnSurface {
            which: "start",
            endpoint: 2
        }
    );
    assert_eq!(
        refused(replace_user(1, 4, vec![1, 3])),
        Violation::ReplaceEndpointNotOnSurface {
            which: "end",
            endpoint: 4
        }
    );
}

#[test]
fn replace_endpoints_must_be_in_surface_order() {
    assert_eq!(
        refused(replace_user(5, 3, vec![3, 5])),
        Violation::ReplaceOutOfOrder { start: 5, end: 3 }
    );
}

#[test]
fn replace_must_cite_every_shadowed_seq() {
    assert_eq!(
        refused(replace_user(3, 6, vec![3, 6])),
        Violation::ReplaceSourcesIncomplete { missing: 5 }
    );
}

#[test]
fn tool_result_replacement_shadows_exactly_one_tool_result() {
    let data = p::tool_result(1, 1, "r1", "c1", "pruned");
    assert_eq!(
        refused(replace_tool(3, 5, data.clone())),
        Violation::ToolResultReplaceWidth { shadowed: 2 }
    );
    assert_eq!(
        refused(replace_tool(6, 6, data)),
        Violation::ToolResultReplaceTarget {
            target: 6,
            target_type: "user/message".into()
        }
    );
}

#[test]
fn tool_result_replacement_changes_only_the_block_content() {
    for changed in [
        p::tool_result(1, 1, "r2", "c1", "pruned"),
        p::tool_result(1, 2, "r1", "c1", "pruned"),
        p::tool_result(1, 1, "r1", "c1", "pruned").replace("\"isError\":false", "\"isError\":true"),
        p::tool_result(1, 1, "r1", "c1", "pruned")
            .replace("\"step\":1,", "\"step\":1,\"meta\":{},"),
    ] {
        assert_eq!(
            refused(replace_tool(5, 5, changed)),
            Violation::ToolResultReplaceChanged { target: 5 }
        );
    }
    let mut s = base();
    let seq = s
        .append(replace_tool(
            5,
            5,
            p::tool_result(1, 1, "r1", "c1", "[pruned]"),
        ))
        .unwrap();
    assert_eq!(s.surface(), &[1, 3, seq, 6]);
    assert_eq!(s.state().surface().replace_generation(), 1);
}

#[test]
fn surface_events_must_have_the_message_shape() {
    let d = Draft::surface(
        SurfaceType::UserMessage,
        &b"{}"[..],
        SurfaceIntent::append(),
    );
    assert_eq!(
        refused(d),
        Violation::MessageShape {
            problem: "message.id must be a non-empty string"
        }
    );
}

#[test]
fn request_header_must_have_its_shape() {
    let d = Draft::log(
        &LogType::REQUEST_HEADER,
        &br#"{"header":{"config":{}}}"#[..],
    );
    assert_eq!(
        refused(d),
        Violation::RequestHeaderShape {
            problem: "header.config.provider must be a non-empty string"
        }
    );
}

#[test]
fn accepted_replace_shadows_the_range_and_its_messages() {
    let mut s = base();
    let seq = s.append(replace_user(1, 5, vec![0, 1, 3, 5])).unwrap();
    assert_eq!(s.surface(), &[seq, 6]);
    let ids: Vec<_> = s
        .messages()
        .iter()
        .map(|m| {
            crate::json::JsonRef::new(m.json)
                .get("id")
                .unwrap()
                .as_str()
                .unwrap()
                .into_owned()
        })
        .collect();
    assert_eq!(ids, ["sum", "u2"]);
}

/// Rule 6, markers: what DSH's loader refuses (its conformance decisions) is refused on
/// append too, and what it loads — including the repair closers' own shapes — is accepted.
#[test]
fn markers_are_refused_where_dsh_refuses_them() {
    let marker = |ty: &LogType, data: &str| Draft::log(ty, data.to_owned());
    for (draft, problem) in [
        (marker(&LogType::STEP_START, "null"), "data may not be null"),
        (marker(&LogType::TOOL_CALL, "null"), "data may not be null"),
        (marker(&LogType::TURN_END, "null"), "data may not be null"),
        (
            marker(&LogType::TURN_START, r#"{"turn":2,"trigger":{"kind":""}}"#),
            "trigger",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":1,"reason":{"kind":"completed"},"extra":1}"#,
            ),
            "keys other than",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":"1","reason":{"kind":"completed"}}"#,
            ),
            "turn must be a number",
        ),
        (
            marker(&LogType::TURN_END, r#"{"turn":1}"#),
            "reason must be an object",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":1,"reason":{"knd":"completed"}}"#,
            ),
            "reason.kind",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":1,"reason":{"kind":"completed","note":"x"}}"#,
            ),
            "completed",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":1,"reason":{"kind":"error","step":2}}"#,
            ),
            "error reason",
        ),
        // DSH's loader refuses a turn number below 1 or not whole (found by a differential
        // against DSH's loader: sessdb imported them).
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":0,"reason":{"kind":"completed"}}"#,
            ),
            "integer from 1",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":1.5,"reason":{"kind":"completed"}}"#,
            ),
            "integer from 1",
        ),
        (
            marker(
                &LogType::TURN_END,
                r#"{"turn":1,"reason":{"kind":"error","step":2,"failure":{"message":"m"}}}"#,
            ),
            "error reason",
        ),
    ] {
        match refused(draft) {
            Violation::MarkerShape { problem: p, .. } => assert!(p.contains(problem), "{p}"),
            other => panic!("{other}"),
        }
    }
    match refused(marker(&LogType::new("mode/set").unwrap(), "{}").ignorable()) {
        Violation::LegacyVocabulary { what } => assert!(what.contains("mode/set")),
        other => panic!("{other}"),
    }
    for data in [
        r#"{"turn":1,"reason":{"kind":"error","step":2,"message":"m"}}"#,
        r#"{"turn":1,"reason":{"kind":"error","error":{"message":"m","code":"E","x":1}}}"#,
        // A pre-react-loop provider failure, which DSH's loader migrates (found by DSH's
        // coordinator contract suite on the sessdb backend).
        r#"{"turn":2,"reason":{"kind":"error","step":1,"failure":{"message":"m","code":"SERVER"}}}"#,
        r#"{"turn":1,"reason":{"kind":"max-tokens"}}"#,
        // The repair closer when the turn's number is unknown.
        r#"{"reason":{"kind":"interrupted"}}"#,
    ] {
        let mut s = base();
        s.append(marker(&LogType::TURN_END, data))
            .unwrap_or_else(|e| panic!("{data}: {e}"));
    }
    let mut s = base();
    s.append(marker(&LogType::STEP_END, "null")).unwrap();
}

/// Found by `replace_validation` (its reference model follows DSH's order, reference §3.2):
/// an event that breaks two rules is refused by the one DSH checks first — the message
/// shape before the surface transition, duplicates before late citations, a log marker's
/// or `request/header`'s shape before surface metadata on a log type.
#[test]
fn regression_rule_order_is_dshs() {
    let two_blocks = p::tool_result(1, 1, "r1", "c1", "out").replace(
        r#""content":[{"type":"tool-result""#,
        r#""content":[{"type":"text","text":"x"},{"type":"tool-result""#,
    );
    let d = Draft::surface(
        SurfaceType::ToolResult,
        two_blocks.clone().into_bytes(),
        SurfaceIntent::replace(5..=5).with_sources(Vec::new()),
    );
    assert_eq!(refused(d).rule(), "message-shape");
    let no_op = Draft::dynamic("tool/result", two_blocks.into_bytes());
    assert_eq!(refused(no_op).rule(), "message-shape");
    let dup_and_late = Draft::surface(
        SurfaceType::UserMessage,
        user("m"),
        SurfaceIntent::append().with_sources(vec![9, 3, 3]),
    );
    assert_eq!(
        refused(dup_and_late),
        Violation::DuplicateSource { source_seq: 3 }
    );
    let null_marker = Draft::dynamic("turn/start", &b"null"[..]).with_surface_op(SurfaceOp::Append);
    assert_eq!(refused(null_marker).rule(), "marker-shape");
    let bad_header =
        Draft::dynamic("request/header", &br#"{"header":{}}"#[..]).with_sources(vec![1]);
    assert_eq!(refused(bad_header).rule(), "request-header-shape");
}

/// A chunk read from its JSONL line carries the recognizer's yes into the acceptance
/// function, which skips the second reading — but only within the session's own limits: a
/// session with a narrower size or depth limit refuses the marked chunk exactly as the same
/// chunk unmarked.
#[test]
fn a_chunk_marked_by_its_line_is_held_to_the_sessions_limits() {
    let line = br#"{"type":"assistant/chunk","seq":0,"time":1,"data":{"turn":1,"step":1,"chunk":{"type":"text-delta","index":0,"text":"hi"}}}"#;
    let marked = Event::from_jsonl(line, &crate::Limits::default()).unwrap();
    assert!(marked.dsh_chunk_within(&crate::Limits::default()));
    let unmarked = Event::new("assistant/chunk", 0, 1, marked.data());
    let empty = |limits: crate::Limits| {
        Session::restore(
            SessionHeader::new("s", 0),
            [],
            Config {
                clock: Clock::fixed(9),
                limits,
            },
        )
        .unwrap()
    };
    assert!(!unmarked.dsh_chunk_within(&crate::Limits::default()));
    for limits in [
        crate::Limits {
            max_data_bytes: marked.data().len() - 1,
            ..crate::Limits::default()
        },
        crate::Limits {
            max_depth: 1,
            ..crate::Limits::default()
        },
    ] {
        let refusal = |event: Event| match empty(limits.clone()).append_event(event) {
            Err(Error::Rejected { violation, .. }) => violation,
            other => panic!("{other:?}"),
        };
        assert_eq!(refusal(marked.clone()), refusal(unmarked.clone()));
    }
    // Within the limits both are taken, alike.
    let (mut a, mut b) = (
        empty(crate::Limits::default()),
        empty(crate::Limits::default()),
    );
    a.append_event(marked).unwrap();
    b.append_event(unmarked).unwrap();
    assert_eq!(snapshot(&a), snapshot(&b));
}

proptest::proptest! {
    /// The mark a chunk's line gives changes no decision: under any limits, a chunk read
    /// from its line and the same chunk rebuilt from its parts (unmarked) are taken alike or
    /// refused by the same rule — in DSH's form or just off it (non-ASCII text, escapes the
    /// form leaves to the validator, a type string with a quote).
    #[test]
    fn a_chunk_from_its_line_is_decided_as_the_same_chunk_unmarked(
        turn in 0u32..1000,
        step in 0u32..50,
        index in 0u32..20,
        kind in proptest::sample::select(vec!["text-delta", "reasoning-delta", "tool-call-delta", "a\"b"]),
        text in "[ -~é\n\t\u{7f}\u{1}]{0,40}",
        max_data_bytes in 0usize..160,
        max_depth in 0u32..4,
    ) {
        let mut data = format!(r#"{{"turn":{turn},"step":{step},"chunk":{{"type":"#).into_bytes();
        crate::json::write_str(&mut data, kind);
        data.extend_from_slice(format!(r#","index":{index},"text":"#).as_bytes());
        crate::json::write_str(&mut data, &text);
        data.extend_from_slice(b"}}");
        let mut line = br#"{"type":"assistant/chunk","seq":0,"time":1,"data":"#.to_vec();
        line.extend_from_slice(&data);
        line.push(b'}');
        let marked = Event::from_jsonl(&line, &crate::Limits::default()).unwrap();
        let unmarked = Event::new("assistant/chunk", 0, 1, data);
        proptest::prop_assert_eq!(&marked, &unmarked);
        let limits = crate::Limits { max_data_bytes, max_depth };
        let decide = |event: Event| {
            let mut s = Session::restore(
                SessionHeader::new("s", 0),
                [],
                Config { clock: Clock::fixed(9), limits: limits.clone() },
            )
            .unwrap();
            match s.append_event(event) {
                Ok(seq) => Ok((seq, snapshot(&s))),
                Err(Error::Rejected { violation, seq, .. }) => Err((violation, seq)),
                Err(other) => panic!("{other:?}"),
            }
        };
        proptest::prop_assert_eq!(decide(marked), decide(unmarked));
    }
}
