//! Seeds, restore, resume and fork of in-memory sessions.

use crate::{
    Clock, Config, Draft, Error, Event, ForkErrorCode, ForkSpec, LogType, Session, SessionHeader,
    SessionSet, SurfaceIntent, SurfaceOp, SurfaceType, Violation,
};
use sessdb_workload::payload as p;

fn config() -> Config {
    Config {
        clock: Clock::fixed(1_000),
        ..Config::default()
    }
}

fn ev(ty: &str, seq: u64, data: String) -> Event {
    Event::new(ty, seq, 500 + seq as i64, data.into_bytes())
}

fn user(seq: u64) -> Event {
    ev(
        "user/message",
        seq,
        p::user_message(&format!("u{seq}"), "user", "hi"),
    )
    .with_surface_op(SurfaceOp::Append)
}

/// A completed turn at seqs `at..at+3`.
fn turn(at: u64, n: u64) -> Vec<Event> {
    vec![
        ev("turn/start", at, p::turn_start(n)),
        user(at + 1),
        ev("turn/end", at + 2, p::turn_end(n)),
    ]
}

#[test]
fn seed_gets_an_end_seed_marker_once() {
    let s = Session::create(SessionHeader::new("a", 0), turn(0, 1), config()).unwrap();
    assert_eq!(s.len(), 4);
    let marker = s.event(3).unwrap();
    assert_eq!(
        (marker.event_type(), marker.data(), marker.time()),
        ("session/end-seed", &b"{}"[..], 1_000)
    );
    let again: Vec<Event> = s.events().cloned().collect();
    let s2 = Session::create(SessionHeader::new("a", 0), again, config()).unwrap();
    assert_eq!(
        s2.len(),
        4,
        "a seed that ends with the marker gets no second one"
    );
    let empty = Session::create(SessionHeader::new("e", 0), [], config()).unwrap();
    assert_eq!(
        empty.event(0).map(Event::event_type),
        Some("session/end-seed")
    );
}

#[test]
fn seed_surface_event_without_surface_op_is_refused_not_upgraded() {
    let mut seed = turn(0, 1);
    seed[1] = ev("user/message", 1, p::user_message("u", "user", "hi"));
    let err = Session::create(SessionHeader::new("a", 0), seed, config()).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Rejected {
                seq: 1,
                violation: Violation::SurfaceOpMissing { .. },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn seed_must_be_contiguous_from_zero() {
    let err = Session::create(SessionHeader::new("a", 0), turn(1, 1), config()).unwrap_err();
    assert!(matches!(
        err,
        Error::Rejected {
            seq: 1,
            violation: Violation::SeqNotContiguous { expected: 0 },
            ..
        }
    ));
}

#[test]
fn invalid_header_is_refused() {
    let mut h = SessionHeader::new("a", 0);
    h.cwd = Some("relative".into());
    assert!(matches!(
        Session::create(h, [], config()),
        Err(Error::InvalidHeader { .. })
    ));
}

#[test]
fn restore_appends_nothing_and_resume_repairs_then_marks() {
    let mut events = turn(0, 1);
    events.push(ev("turn/start", 3, p::turn_start(2)));
    events.push(ev("step/start", 4, p::step(2, 1)));
    let a = p::assistant_message(
        2,
        1,
        "a",
        None,
        &[("c1", "bash", "{}"), ("c2", "bash", "{}")],
    );
    events.push(ev("assistant/message", 5, a).with_surface_op(SurfaceOp::Append));
    events.push(ev("tool/call", 6, p::tool_call(2, 1, "c1", "bash", "{}")));
    let mut s = Session::restore(SessionHeader::new("a", 0), events, config()).unwrap();
    assert_eq!(s.len(), 7);
    assert!(s.turn_is_open());
    let report = s.resume().unwrap();
    assert_eq!(report.closers, [7, 8, 9, 10]);
    assert_eq!(report.end_seed, Some(11));
    let types: Vec<_> = s.events().skip(7).map(Event::event_type).collect();
    assert_eq!(
        types,
        [
            "tool/result",
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    assert!(
        s.events().skip(7).take(4).all(|e| e.time() == 506),
        "closers take the last real event's time"
    );
    assert!(!s.turn_is_open());
    assert_eq!(s.surface(), &[1, 5, 7, 8]);
    // Resuming again adds nothing.
    assert_eq!(s.resume().unwrap(), crate::ResumeReport::default());
}

fn set_with_parent() -> SessionSet {
    let mut set = SessionSet::new(config());
    let mut seed = turn(0, 1);
    seed.extend(turn(3, 2));
    seed.push(ev("turn/start", 6, p::turn_start(3)));
    set.create(
        SessionHeader {
            cwd: Some("/w".into()),
            ..SessionHeader::new("p", 0)
        },
        seed,
    )
    .unwrap();
    set
}

#[test]
fn fork_inherits_by_reference_and_marks_the_seed() {
    let mut set = set_with_parent();
    let spec = ForkSpec::default().with_boundary(5).with_child_id("c");
    set.fork("p", spec).unwrap();
    let child = set.get("c").unwrap();
    let h = child.header();
    assert_eq!(
        (
            h.parent_session.as_deref(),
            h.seed_length,
            h.cwd.as_deref(),
            h.created_at
        ),
        (Some("p"), Some(6), Some("/w"), 1_000)
    );
    assert_eq!(child.len(), 7);
    assert_eq!(
        child.event(6).map(Event::event_type),
        Some("session/end-seed")
    );
    assert_eq!(child.surface(), &[1, 4]);
    assert!(
        set.get("p").unwrap().shares_events_with(child, 6),
        "inherited events are not copied"
    );
    // Parent and child go on independently.
    set.get_mut("c")
        .unwrap()
        .append(Draft::log(
            &LogType::TURN_START,
            p::turn_start(3).into_bytes(),
        ))
        .unwrap();
    assert_eq!(set.get("p").unwrap().len(), 8);
    assert_eq!(set.get("c").unwrap().len(), 8);
    let minted = set.fork("c", ForkSpec::default().with_boundary(6)).unwrap();
    let id = minted.id().to_owned();
    // A random v4 UUID, as DSH mints ids: never a reused one.
    let hex: Vec<&str> = id.split('-').collect();
    assert_eq!(
        hex.iter().map(|p| p.len()).collect::<Vec<_>>(),
        [8, 4, 4, 4, 12],
        "{id}"
    );
    assert!(
        hex.iter().all(|p| p.chars().all(|c| c.is_ascii_hexdigit())),
        "{id}"
    );
    assert!(
        hex[2].starts_with('4') && matches!(&hex[3][..1], "8" | "9" | "a" | "b"),
        "{id}"
    );
    let again = set
        .fork("c", ForkSpec::default().with_boundary(6))
        .unwrap()
        .id()
        .to_owned();
    assert_ne!(again, id, "every minted id is new");
}

#[test]
fn fork_error_codes() {
    let mut set = set_with_parent();
    let code = |r: crate::Result<&mut Session>| match r {
        Err(Error::Fork { code, .. }) => code,
        other => panic!(
            "expected a fork error, got {:?}",
            other.map(|s| s.id().to_owned())
        ),
    };
    assert_eq!(
        code(set.fork("nope", ForkSpec::default())),
        ForkErrorCode::SessionNotFound
    );
    let taken = ForkSpec::default().with_child_id("p");
    assert_eq!(
        code(set.fork("p", taken)),
        ForkErrorCode::SessionAlreadyExists
    );
    let past = ForkSpec::default().with_boundary(8);
    assert_eq!(code(set.fork("p", past)), ForkErrorCode::InvalidBoundary);
    let inside = ForkSpec::default().with_boundary(1);
    assert_eq!(code(set.fork("p", inside)), ForkErrorCode::OpenTurn);
    // Default boundary = the last event, which is the end-seed marker after an open turn/start.
    assert_eq!(
        code(set.fork("p", ForkSpec::default())),
        ForkErrorCode::OpenTurn
    );
    assert_eq!(set.len(), 1);
}

#[test]
fn fork_of_an_empty_session_is_empty_plus_marker() {
    let mut set = SessionSet::new(config());
    set.insert(Session::restore(SessionHeader::new("e", 0), [], config()).unwrap())
        .unwrap();
    let child = set.fork("e", ForkSpec::default()).unwrap();
    assert_eq!(child.header().seed_length, Some(0));
    assert_eq!(child.len(), 1);
}

#[test]
fn create_refuses_a_taken_id() {
    let mut set = set_with_parent();
    assert!(matches!(
        set.create(SessionHeader::new("p", 0), []),
        Err(Error::SessionExists { .. })
    ));
}

#[test]
fn typed_appends_assign_seq_and_time() {
    let mut s = Session::create(SessionHeader::new("a", 0), [], config()).unwrap();
    let seq = s
        .append(
            Draft::surface(
                SurfaceType::UserMessage,
                p::user_message("u", "user", "x").into_bytes(),
                SurfaceIntent::append(),
            )
            .at(42),
        )
        .unwrap();
    assert_eq!((seq, s.event(seq).unwrap().time()), (1, 42));
    let seq = s
        .append(Draft::log(LogType::new("plugin/x").unwrap(), &b"[]"[..]).ignorable())
        .unwrap();
    let e = s.event(seq).unwrap();
    assert_eq!((e.time(), e.ignorable()), (1_000, true));
}
