//! The engine against the reference model (`sessdb-reference`, the acceptance rules written a
//! second time without engine code) on random candidate events: the same verdict, the same
//! rule on a refusal, the same surface after every step, the same messages at the end. The
//! fuzz targets `replace_validation` and `seed_rejection` do this at length; this property
//! runs a bounded version in every `cargo test`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use proptest::prelude::*;
use sessdb::{Clock, Config, Draft, Error, Session, SessionHeader, SurfaceOp};
use sessdb_reference::{Candidate, Model, Op};

/// One random candidate, resolved against the model's current state.
#[derive(Debug, Clone)]
struct Pick {
    kind: u8,
    start: u16,
    end: u16,
    sources: Vec<u16>,
    cite: bool,
    edit: u8,
}

fn user(seq: u64) -> String {
    format!(
        r#"{{"id":"u{seq}","role":"user","source":{{"kind":"user"}},"content":[{{"type":"text","text":"t{seq}"}}]}}"#
    )
}

fn tool(turn: u64, id: &str, call: &str, text: &str, extra: &str) -> String {
    format!(
        r#"{{"turn":{turn},"step":1,"message":{{"id":"{id}","role":"user","source":{{"kind":"tool","callId":"{call}"}},"content":[{{"type":"tool-result","toolCallId":"{call}","content":[{{"type":"text","text":"{text}"}}]}}]}}{extra}}}"#
    )
}

fn candidate(model: &Model, p: &Pick) -> Candidate {
    let seq = model.len();
    let surface = model.surface();
    let at = |i: u16| -> u64 {
        if surface.is_empty() || i % 5 == 4 {
            u64::from(i) % (seq + 2)
        } else {
            surface[usize::from(i) % surface.len()]
        }
    };
    let (start, end) = (at(p.start), at(p.end));
    let shadowed: Vec<u64> = match (
        surface.iter().position(|&s| s == start),
        surface.iter().position(|&s| s == end),
    ) {
        (Some(i), Some(j)) if i <= j => surface[i..=j].to_vec(),
        _ => Vec::new(),
    };
    let mut sources: Vec<u64> = if p.cite { shadowed } else { Vec::new() };
    sources.extend(p.sources.iter().map(|&s| u64::from(s) % (seq + 2)));
    let sources = (!sources.is_empty() || p.edit.is_multiple_of(3)).then_some(sources);
    let replace = Op::Replace { start, end };
    let mut c = match p.kind % 9 {
        0 => Candidate::log(seq, "command/run", br#"{"command":"ls"}"#),
        1 => Candidate::log(seq, "turn/start", br#"{"turn":1}"#),
        2 => Candidate::surface(seq, "user/message", user(seq).as_bytes(), Op::Append),
        3 => Candidate::surface(
            seq,
            "tool/result",
            tool(1, "r", "c", &format!("out {seq}"), "").as_bytes(),
            Op::Append,
        ),
        4 => Candidate::surface(seq, "user/message", user(seq).as_bytes(), replace),
        5 | 6 => {
            // A tool-result replacement: the same fields as a written one but its content,
            // or one field changed.
            let data = match p.edit % 4 {
                0 => tool(1, "r", "c", "pruned", ""),
                1 => tool(2, "r", "c", "pruned", ""),
                2 => tool(1, "r", "c", "pruned", r#","meta":{}"#),
                _ => tool(1, "other", "c", "pruned", ""),
            };
            Candidate::surface(seq, "tool/result", data.as_bytes(), replace)
        }
        7 => {
            let mut c = Candidate::log(seq, "command/run", b"{}");
            c.op = p.edit.is_multiple_of(2).then_some(Op::Append);
            c
        }
        _ => Candidate::log(seq, "user/message", user(seq).as_bytes()),
    };
    if c.op.is_some() {
        c.sources = sources;
    }
    c
}

fn draft(c: &Candidate) -> Draft {
    let mut d = Draft::dynamic(c.ty.as_str(), c.data.clone());
    match c.op {
        Some(Op::Append) => d = d.with_surface_op(SurfaceOp::Append),
        Some(Op::Replace { start, end }) => {
            d = d.with_surface_op(SurfaceOp::Replace { start, end })
        }
        None => {}
    }
    if let Some(s) = &c.sources {
        d = d.with_sources(s.clone());
    }
    d
}

fn pick() -> impl Strategy<Value = Pick> {
    (
        any::<u8>(),
        any::<u16>(),
        any::<u16>(),
        prop::collection::vec(any::<u16>(), 0..3),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(|(kind, start, end, sources, cite, edit)| Pick {
            kind,
            start,
            end,
            sources,
            cite,
            edit,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: sessdb_tests::proptest_cases(256), ..ProptestConfig::default() })]
    #[test]
    fn the_engine_decides_as_the_reference_model(picks in prop::collection::vec(pick(), 1..60)) {
        let config = Config { clock: Clock::fixed(0), ..Config::default() };
        let mut session = Session::restore(SessionHeader::new("s", 0), [], config).unwrap();
        let mut model = Model::new();
        for p in &picks {
            let c = candidate(&model, p);
            let line = String::from_utf8_lossy(&c.to_jsonl()).into_owned();
            match (model.accept(&c), session.append(draft(&c))) {
                (Ok(()), Ok(seq)) => prop_assert_eq!(seq, c.seq),
                (Err(expected), Err(Error::Rejected { violation, .. })) => {
                    prop_assert_eq!(violation.rule(), expected.rule, "{} ({})", line, expected.detail);
                }
                (m, e) => prop_assert!(false, "model {:?}, engine {:?} on {}", m, e, line),
            }
            let surface = model.surface();
            prop_assert_eq!(session.surface(), surface.as_slice(), "after {}", line);
        }
        let messages: Vec<(u64, String)> = session
            .messages()
            .iter()
            .map(|m| (m.seq, String::from_utf8_lossy(m.json).into_owned()))
            .collect();
        prop_assert_eq!(messages, model.messages());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: sessdb_tests::proptest_cases(128), ..ProptestConfig::default() })]
    /// The store's appenders check an event's own rules before the write lock and the
    /// session's under it: the same verdicts, rules, surface and messages as the model, and a
    /// reopen (a replay, which checks every rule in one pass) agrees.
    #[test]
    fn the_store_decides_as_the_reference_model(picks in prop::collection::vec(pick(), 1..60)) {
        let storage: std::sync::Arc<dyn sessdb::storage::Storage> =
            std::sync::Arc::new(sessdb::storage::MemStorage::new());
        let options = || sessdb::StoreOptions::default().with_clock(Clock::fixed(0));
        let store = sessdb::Store::open_with(storage.clone(), options()).unwrap();
        store.create_session(SessionHeader::new("s", 0), Vec::new()).unwrap();
        let mut model = Model::new();
        let created = store.session_len("s").unwrap();
        // The store's session begins with what creating it wrote: the model is fed the same.
        for event in store.events("s", ..).unwrap() {
            let c = Candidate {
                seq: event.seq(),
                ty: event.event_type().to_owned(),
                data: event.data().to_vec(),
                ignorable: event.ignorable(),
                op: event.surface_op().map(|op| match op {
                    SurfaceOp::Append => Op::Append,
                    SurfaceOp::Replace { start, end } => Op::Replace { start, end },
                }),
                sources: event.sources().map(<[u64]>::to_vec),
            };
            model.accept(&c).unwrap();
        }
        prop_assert_eq!(model.len(), created);
        for p in &picks {
            let c = candidate(&model, p);
            let line = String::from_utf8_lossy(&c.to_jsonl()).into_owned();
            match (model.accept(&c), store.append("s", draft(&c))) {
                (Ok(()), Ok(seq)) => prop_assert_eq!(seq, c.seq),
                (Err(expected), Err(Error::Rejected { violation, seq, .. })) => {
                    prop_assert_eq!(seq, c.seq);
                    prop_assert_eq!(violation.rule(), expected.rule, "{} ({})", line, expected.detail);
                }
                (m, e) => prop_assert!(false, "model {:?}, store {:?} on {}", m, e, line),
            }
            prop_assert_eq!(store.surface("s").unwrap(), model.surface(), "after {}", line);
        }
        let messages = |store: &sessdb::Store| -> Vec<(u64, String)> {
            store
                .messages("s")
                .unwrap()
                .iter()
                .map(|m| (m.seq, String::from_utf8_lossy(&m.json).into_owned()))
                .collect()
        };
        prop_assert_eq!(messages(&store), model.messages());
        let state = store.state("s").unwrap();
        store.close().unwrap();
        drop(store);
        let replayed = sessdb::Store::open_with(
            storage,
            options().with_ignore_checkpoints(true),
        )
        .unwrap();
        prop_assert_eq!(replayed.state("s").unwrap(), state);
        prop_assert_eq!(messages(&replayed), model.messages());
    }
}

/// The reference model keeps its own copy of DSH's vocabulary (it shares no code with the
/// engine): the two copies must name the same types.
#[test]
fn the_reference_vocabulary_is_the_engines() {
    let mut names: Vec<&str> = sessdb::LogType::ALL
        .iter()
        .map(sessdb::LogType::as_str)
        .collect();
    names.extend(sessdb::SurfaceType::ALL.iter().map(|t| t.as_str()));
    assert_eq!(names.len(), 50);
    for name in &names {
        assert!(sessdb::event::is_known_type(name), "{name}");
        assert!(
            sessdb_reference::vocabulary::known(name),
            "{name} is missing from the reference's vocabulary"
        );
    }
    for other in [
        "plugin/note",
        "turn/strat",
        "",
        "mode/set",
        "request/header-delta",
    ] {
        assert!(!sessdb::event::is_known_type(other), "{other}");
        assert!(!sessdb_reference::vocabulary::known(other), "{other}");
    }
}
