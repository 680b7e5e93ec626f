//! Conformance of the session model on DSH v0's own session files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::json::JsonRef;
use sessdb::model::OUTCOME_UNKNOWN_TEXT;
use sessdb::{Clock, Config, Event, ForkSpec, Session, SessionSet, SurfaceOp};
use sessdb_tests::{FIXTURES, json_string, load};

fn config() -> Config {
    Config {
        clock: Clock::fixed(1_800_000_000_000),
        ..Config::default()
    }
}

#[test]
fn every_fixture_seeds_and_restores() {
    for name in FIXTURES {
        let f = load(name);
        let n = f.events.len() as u64;
        let restored = Session::restore(f.header.clone(), f.events.clone(), config())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(restored.len(), n, "{name}: restore appends nothing");
        let created =
            Session::create(f.header, f.events, config()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            created.len(),
            n + 1,
            "{name}: the seed gets its end-seed marker"
        );
        assert!(!created.surface().is_empty(), "{name}");
        // Every event prints as a JSONL line that parses back to itself.
        for e in created.events() {
            let back = Event::from_jsonl(&e.to_jsonl(), &sessdb::Limits::default()).unwrap();
            assert_eq!(&back, e, "{name}");
        }
    }
}

#[test]
fn packed_rows_expand_to_contiguous_chunks() {
    let f = load("acp-tool-call-turn.session.jsonl");
    assert!(
        f.events
            .iter()
            .enumerate()
            .all(|(i, e)| e.seq() == i as u64)
    );
    let chunks = f
        .events
        .iter()
        .filter(|e| e.event_type() == "assistant/chunk")
        .count();
    assert!(chunks > 40, "{chunks}");
}

#[test]
fn compaction_replace_shadows_the_premise() {
    let f = load("headless-compaction-recovery.session.jsonl");
    let s = Session::restore(f.header, f.events, config()).unwrap();
    let replacement = s
        .events()
        .find(|e| matches!(e.surface_op(), Some(SurfaceOp::Replace { .. })))
        .expect("the fixture has a replace");
    assert_eq!(
        replacement.surface_op(),
        Some(SurfaceOp::Replace { start: 4, end: 4 })
    );
    assert_eq!(replacement.seq(), 21);
    assert!(!s.surface().contains(&4), "the premise is shadowed");
    assert_eq!(s.surface(), &[21, 13, 15, 28]);
    let messages = s.messages();
    assert!(messages.iter().all(|m| m.seq != 4));
    assert_eq!(
        messages.first().map(|m| m.json),
        JsonRef::new(replacement.data()).bytes().into()
    );
    let summary = String::from_utf8_lossy(messages[0].json);
    assert!(
        summary.contains("automatically generated checkpoint"),
        "{summary}"
    );
}

#[test]
fn repair_closers_match_dsh_json_for_json() {
    let f = load("headless-tool-outcome-unknown.session.expected.jsonl");
    // Seqs 0..=4 are the crashed turn; 5..=7 are DSH's closers and 8 its end-seed marker.
    let mut s = Session::restore(f.header.clone(), f.events[..5].to_vec(), config()).unwrap();
    assert!(s.turn_is_open());
    let report = s.resume().unwrap();
    assert_eq!(report.closers, [5, 6, 7]);
    assert_eq!(report.end_seed, Some(8));
    let dsh_text = JsonRef::new(f.events[5].data())
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(|c| c.elements().next())
        .and_then(|b| b.get("content"))
        .and_then(|c| c.elements().next())
        .and_then(|t| t.get("text"))
        .and_then(|t| t.as_str())
        .unwrap()
        .into_owned();
    for seq in 5..=8 {
        let ours = s.event(seq).unwrap();
        let theirs = &f.events[seq as usize];
        assert_eq!(ours.event_type(), theirs.event_type(), "seq {seq}");
        assert_eq!(ours.sources(), theirs.sources(), "seq {seq}");
        assert_eq!(ours.surface_op(), theirs.surface_op(), "seq {seq}");
        assert_eq!(
            ours.surface_op_first(),
            theirs.surface_op_first(),
            "seq {seq}: key order"
        );
        // Same JSON, except sessdb's own wording of the closer text.
        let expected = String::from_utf8_lossy(theirs.data())
            .replace(&json_string(&dsh_text), &json_string(OUTCOME_UNKNOWN_TEXT));
        assert!(
            JsonRef::new(ours.data()).deep_eq(&JsonRef::new(expected.as_bytes())),
            "seq {seq}: {}",
            String::from_utf8_lossy(ours.data())
        );
    }
    let last_real = f.events[4].time();
    assert!(
        (5..=7).all(|seq| s.event(seq).unwrap().time() == last_real),
        "closers carry the last real event's time"
    );
    // The file continues after the marker: the repaired session accepts the rest as is.
    for e in &f.events[9..] {
        s.append_event(e.clone()).unwrap();
    }
    assert_eq!(s.len(), f.events.len() as u64);
}

#[test]
fn fork_reproduces_the_dsh_child_seed() {
    let parent = load("acp-subagent-fork-in-process.parent.session.jsonl");
    let child = load("acp-subagent-fork-in-process.child.session.1.jsonl");
    let seed_len = child.header.seed_length.unwrap();
    let mut set = SessionSet::new(config());
    set.insert(Session::restore(parent.header.clone(), parent.events, config()).unwrap())
        .unwrap();
    let spec = ForkSpec::default()
        .with_boundary(seed_len - 1)
        .with_child_id(child.header.id.clone())
        .with_origin(child.header.origin)
        .with_delegation_depth(child.header.delegation_depth);
    let ours = set.fork(&parent.header.id, spec).unwrap();
    let h = ours.header();
    assert_eq!(h.parent_session, child.header.parent_session);
    assert_eq!(h.seed_length, child.header.seed_length);
    assert_eq!(h.cwd, child.header.cwd);
    for seq in 0..=seed_len {
        let (a, b) = (ours.event(seq).unwrap(), &child.events[seq as usize]);
        assert_eq!(
            (a.event_type(), a.data(), a.sources(), a.surface_op()),
            (b.event_type(), b.data(), b.sources(), b.surface_op()),
            "seq {seq}"
        );
    }
    // And the child's own events follow.
    let ours = set.get_mut(&child.header.id).unwrap();
    for e in &child.events[seed_len as usize + 1..] {
        ours.append_event(e.clone()).unwrap();
    }
}
