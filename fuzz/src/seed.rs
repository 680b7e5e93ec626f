//! The seed language of `seed_rejection`: a header with one perturbation and a seed built by
//! the operation language of `replace_validation` plus seed-specific events (end-seed
//! markers anywhere, seqs out of place, broken message and marker shapes, a surface event
//! without `surfaceOp`).

use std::sync::Arc;

use arbitrary::Arbitrary;
use sessdb::model::ForkSpec;
use sessdb::storage::MemStorage;
use sessdb::{
    Clock, Config, Error, Event, ForkErrorCode, Session, SessionHeader, Store, StoreOptions,
    SurfaceOp,
};
use sessdb_formats::Error as FormatError;
use sessdb_formats::jsonl::import_jsonl;
use sessdb_reference::{Candidate, Model, Op, check_header};

use crate::data::{Tool, user};
use crate::ops::{Action, Builder, draft};

/// What is wrong with the header, if anything.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum HeaderEdit {
    /// Nothing.
    Valid,
    /// `version: 1`.
    Version,
    /// `version: 0.0` (JavaScript reads 0).
    VersionSpelled,
    /// No `"type":"session"`.
    NoType,
    /// `id: ""`.
    EmptyId,
    /// `createdAt: -1`.
    NegativeCreated,
    /// `cwd: "relative/dir"`.
    RelativeCwd,
    /// `origin: "user"`.
    Origin,
    /// `delegationDepth: -1`.
    NegativeDepth,
    /// `seedLength: 2.0` (JavaScript reads 2).
    SeedLengthSpelled,
    /// `parentSession: 7`.
    ParentNumber,
    /// A retired field (`sandboxMode`).
    Retired,
    /// A field DSH does not know (ignored).
    Unknown,
    /// `id` given twice (the last wins).
    DuplicateId,
}

impl HeaderEdit {
    /// The header line.
    pub fn line(self, id: &str) -> String {
        let id = crate::data::json_str(id);
        let base = |extra: &str| {
            format!(
                r#"{{"type":"session","version":0,"id":{id},"createdAt":1,"cwd":"/w"{extra},"delegationDepth":0}}"#
            )
        };
        match self {
            Self::Valid => base(""),
            Self::Version => base("").replace(r#""version":0"#, r#""version":1"#),
            Self::VersionSpelled => base("").replace(r#""version":0"#, r#""version":0.0"#),
            Self::NoType => base("").replace(r#""type":"session","#, ""),
            Self::EmptyId => base("").replace(&format!(r#""id":{id}"#), r#""id":"""#),
            Self::NegativeCreated => base("").replace(r#""createdAt":1"#, r#""createdAt":-1"#),
            Self::RelativeCwd => base("").replace(r#""cwd":"/w""#, r#""cwd":"relative/dir""#),
            Self::Origin => base(r#","origin":"user""#),
            Self::NegativeDepth => {
                base("").replace(r#""delegationDepth":0"#, r#""delegationDepth":-1"#)
            }
            Self::SeedLengthSpelled => base(r#","seedLength":2.0"#),
            Self::ParentNumber => base(r#","parentSession":7"#),
            Self::Retired => base(r#","sandboxMode":"x""#),
            Self::Unknown => base(r#","fancy":{"a":[1]}"#),
            Self::DuplicateId => {
                base("").replace(r#""type":"session","#, r#""type":"session","id":"first","#)
            }
        }
    }
}

/// One seed event.
#[derive(Debug, Clone, Arbitrary)]
pub enum SeedEvent {
    /// An operation of the replace language (checkpoints and reopens are ignored here).
    Op(Action),
    /// `session/end-seed {}`.
    EndSeed,
    /// An event whose seq is one off (`true`: one ahead).
    WrongSeq(bool),
    /// A user message without `id`.
    NoMessageId,
    /// A user message with role `assistant`.
    WrongRole,
    /// A user message without `surfaceOp`.
    NoSurfaceOp,
    /// `turn/start` with `data: null`.
    NullTurnStart,
    /// `turn/end` with a `reason` that is not an object.
    BadTurnEnd,
    /// `session/end-seed` carrying `surfaceOp`.
    EndSeedWithSurfaceOp,
    /// A tool result with both a broken shape and a duplicated source (rule order).
    BrokenToolDuplicateSources,
}

/// A header and a seed.
#[derive(Debug, Clone, Arbitrary)]
pub struct SeedCase {
    /// The header perturbation.
    pub header: HeaderEdit,
    /// The seed.
    pub events: Vec<SeedEvent>,
    /// Where to fork the created session (modulo its length).
    pub boundary: u16,
}

impl SeedCase {
    /// The seed's candidates, built against a model of the events so far (a refused event
    /// is still part of the seed; the model just does not advance).
    pub fn candidates(&self) -> Vec<Candidate> {
        let mut builder = Builder::new();
        let mut out = Vec::new();
        for event in self.events.iter().take(64) {
            let seq = out.len() as u64;
            let c = match event {
                SeedEvent::Op(Action::Checkpoint | Action::Reopen) => continue,
                SeedEvent::Op(action) => match builder.candidate(action, seq) {
                    Some(c) => c,
                    None => continue,
                },
                SeedEvent::EndSeed => Candidate::log(seq, "session/end-seed", b"{}"),
                SeedEvent::WrongSeq(ahead) => {
                    let seq = if *ahead { seq + 1 } else { seq.wrapping_sub(1) };
                    Candidate::log(seq, "command/run", br#"{"command":"ls"}"#)
                }
                SeedEvent::NoMessageId => Candidate::surface(
                    seq,
                    "user/message",
                    br#"{"role":"user","source":{"kind":"user"},"content":[]}"#,
                    Op::Append,
                ),
                SeedEvent::WrongRole => Candidate::surface(
                    seq,
                    "user/message",
                    user(seq, "x")
                        .replace(r#""role":"user""#, r#""role":"assistant""#)
                        .as_bytes(),
                    Op::Append,
                ),
                SeedEvent::NoSurfaceOp => {
                    Candidate::log(seq, "user/message", user(seq, "y").as_bytes())
                }
                SeedEvent::NullTurnStart => Candidate::log(seq, "turn/start", b"null"),
                SeedEvent::BadTurnEnd => {
                    Candidate::log(seq, "turn/end", br#"{"turn":1,"reason":"done"}"#)
                }
                SeedEvent::EndSeedWithSurfaceOp => {
                    let mut c = Candidate::log(seq, "session/end-seed", b"{}");
                    c.op = Some(Op::Append);
                    c
                }
                SeedEvent::BrokenToolDuplicateSources => {
                    let data = Tool::new(seq)
                        .data()
                        .replace(r#""kind":"tool""#, r#""kind":"user""#);
                    Candidate::surface(seq, "tool/result", data.as_bytes(), Op::Append)
                        .with_sources(vec![0, 0])
                }
            };
            let _ = builder.offer(&c);
            out.push(c);
        }
        out
    }
}

/// The reference decision on a whole seed: the model of the created session, or the index
/// of the first refused event and its rule.
pub fn decide(seed: &[Candidate]) -> Result<Model, (usize, &'static str)> {
    Model::from_seed(seed).map_err(|(i, r)| (i, r.rule))
}

fn config() -> Config {
    Config {
        clock: Clock::fixed(0),
        ..Config::default()
    }
}

fn open(storage: &Arc<MemStorage>) -> Store {
    Store::open_with(
        storage.clone(),
        StoreOptions::tiny().with_clock(Clock::fixed(0)),
    )
    .expect("open")
}

/// The class of an engine refusal: the rule name, or the header's class.
fn class(e: &Error) -> &'static str {
    match e {
        Error::Rejected { violation, .. } => violation.rule(),
        Error::InvalidHeader { .. } => "invalid-header",
        Error::UnsupportedFormat { .. } => "unsupported-format",
        other => panic!("unexpected error {other:?}"),
    }
}

/// Runs `case` through every path and compares each with the model.
pub fn check(case: &SeedCase) {
    const ID: &str = "seeded";
    let line = case.header.line(ID);
    let seed = case.candidates();
    let events: Vec<Event> = seed.iter().map(|c| draft(c).into_event(c.seq, 0)).collect();
    let header_verdict = check_header(line.as_bytes());
    let header = SessionHeader::from_json(line.as_bytes());
    match (&header_verdict, &header) {
        (Ok(()), Ok(_)) => {}
        (Err(expected), Err(e)) => {
            assert_eq!(class(e), *expected, "header {line}");
        }
        _ => panic!("header {line}: model {header_verdict:?}, engine {header:?}"),
    }
    import(&line, &seed, header_verdict);
    let Ok(header) = header else { return };
    let expected = decide(&seed);
    let lines: Vec<String> = seed
        .iter()
        .map(|c| String::from_utf8_lossy(&c.to_jsonl()).into_owned())
        .collect();

    // Session::create.
    let session = Session::create(header.clone(), events.clone(), config());
    match (&expected, &session) {
        (Ok(model), Ok(s)) => {
            assert_eq!(s.len(), model.len(), "{lines:#?}");
            assert_eq!(s.surface(), model.surface().as_slice(), "{lines:#?}");
        }
        (Err((_, rule)), Err(e)) => assert_eq!(class(e), *rule, "{lines:#?}"),
        _ => panic!("Session::create: model {expected:?}, engine {session:?}\n{lines:#?}"),
    }

    // Store::create_session: a refusal leaves the store's bytes as they were.
    let storage = Arc::new(MemStorage::new());
    let store = open(&storage);
    store.sync().expect("sync");
    let before = storage.files();
    let created = store
        .create_session(header, events)
        .and_then(|handle| handle.len());
    match (&expected, &created) {
        (Ok(model), Ok(len)) => {
            assert_eq!(*len, model.len(), "{lines:#?}");
            assert_eq!(store.surface(ID).expect("surface"), model.surface());
            let last = store.last_events(ID, 2).expect("read");
            let markers = last
                .iter()
                .filter(|e| e.event_type() == "session/end-seed")
                .count();
            let seed_ends_with_marker = seed.last().is_some_and(|c| c.ty == "session/end-seed");
            assert_eq!(last.last().map(Event::event_type), Some("session/end-seed"));
            if !seed_ends_with_marker {
                assert_eq!(markers, 1, "one marker added, not two: {lines:#?}");
            }
            if let Some(child) = fork(&store, ID, model, case.boundary) {
                // The fork record replays to the same child.
                let len = store.session_len(&child).expect("len");
                let surface = store.surface(&child).expect("surface");
                store.close().expect("close");
                let store = open(&storage);
                assert_eq!(store.session_len(&child).expect("len after reopen"), len);
                assert_eq!(
                    store.surface(&child).expect("surface after reopen"),
                    surface
                );
                assert_eq!(
                    store.session_len(ID).expect("len after reopen"),
                    model.len()
                );
                return;
            }
        }
        (Err((_, rule)), Err(e)) => {
            assert_eq!(class(e), *rule, "{lines:#?}");
            store.sync().expect("sync");
            assert!(
                storage.files() == before,
                "a refused seed changed the store's bytes"
            );
        }
        _ => panic!("Store::create_session: model {expected:?}, engine {created:?}\n{lines:#?}"),
    }
    store.close().expect("close");
}

/// Forks the created session at `boundary` (modulo its length) and compares with the model.
fn fork(store: &Store, id: &str, model: &Model, boundary: u16) -> Option<String> {
    let b = u64::from(boundary) % model.len();
    let result = store.fork(
        id,
        ForkSpec::default().with_boundary(b).with_child_id("child"),
    );
    if model.turn_open_at(b) {
        assert!(
            matches!(
                result,
                Err(Error::Fork {
                    code: ForkErrorCode::OpenTurn,
                    ..
                })
            ),
            "fork at {b} inside a turn: {result:?}"
        );
        return None;
    }
    let child = result.expect("fork");
    // The child: the prefix, then one marker unless the prefix ends with one (§3.2 item 9).
    let ends_with_marker = model
        .event(b)
        .is_some_and(|(ty, _)| ty == "session/end-seed");
    let expected_len = b + 1 + u64::from(!ends_with_marker);
    assert_eq!(
        store.session_len(&child).expect("len"),
        expected_len,
        "fork at {b}"
    );
    let prefix = store.events(id, ..b + 1).expect("read");
    let mut replay = Model::new();
    for e in &prefix {
        let c = candidate_of(e);
        replay.accept(&c).expect("an accepted prefix replays");
    }
    assert_eq!(
        store.surface(&child).expect("surface"),
        replay.surface(),
        "fork at {b}"
    );
    Some(child)
}

/// The JSONL import of the header line and the seed: DSH's load path (reference §4.5). Lines
/// are kept up to the first one whose seq does not continue; if that line or any later one is
/// a `turn/end` the log is corrupt, else the rest is a torn tail. The kept events are
/// restored as stored (nothing appended).
fn import(line: &str, seed: &[Candidate], header: Result<(), &'static str>) {
    let bad = seed
        .iter()
        .enumerate()
        .position(|(i, c)| c.seq != i as u64)
        .unwrap_or(seed.len());
    let (kept, torn) = seed.split_at(bad);
    let mut restored = Model::new();
    let mut verdict: Result<(), &'static str> = header;
    if verdict.is_ok() && torn.iter().any(|c| c.ty == "turn/end") {
        verdict = Err("corrupt");
    }
    if verdict.is_ok() {
        for c in kept {
            if let Err(r) = restored.accept(c) {
                verdict = Err(r.rule);
                break;
            }
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("session.jsonl");
    let mut file = line.as_bytes().to_vec();
    for c in seed {
        file.push(b'\n');
        file.extend_from_slice(&c.to_jsonl());
    }
    file.push(b'\n');
    std::fs::write(&path, &file).expect("write");
    let store =
        Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default()).expect("open");
    let result = import_jsonl(&store, &path);
    let text = String::from_utf8_lossy(&file);
    match (verdict, &result) {
        (Ok(()), Ok(report)) => {
            let id = &report.sessions.first().expect("one session").id;
            assert_eq!(
                store.session_len(id).expect("len"),
                restored.len(),
                "{text}"
            );
            assert_eq!(
                store.surface(id).expect("surface"),
                restored.surface(),
                "{text}"
            );
        }
        // DSH's loader checks retired vocabulary and marker shapes over the whole file before
        // it restores the events, so its refusal may name a later line than the model's.
        (Err(_), Err(_)) if seed.iter().any(prepass_refuses) => {}
        (Err(rule), Err(e)) => match e {
            FormatError::Invalid { source, .. } => {
                assert_eq!(class(source), rule, "import of {text}")
            }
            FormatError::UnsupportedFormat { .. } => {
                assert_eq!(rule, "unsupported-format", "import of {text}");
            }
            FormatError::Corrupt { .. } => assert_eq!(rule, "corrupt", "import of {text}"),
            other => panic!("import of {text}: unexpected {other:?}"),
        },
        (verdict, _) => panic!("import: model {verdict:?}, engine {result:?}\n{text}"),
    }
}

/// Whether DSH's load pre-pass refuses `c` (a retired type, a marker shape it cannot read).
fn prepass_refuses(c: &Candidate) -> bool {
    let data = serde_json::from_slice::<serde_json::Value>(&c.data).unwrap_or_default();
    c.ty == "mode/set"
        || (matches!(
            c.ty.as_str(),
            "turn/start" | "turn/end" | "step/start" | "tool/call"
        ) && (data.is_null() || (c.ty == "turn/end" && !data["reason"].is_object())))
}

/// The model's candidate for a stored event.
fn candidate_of(e: &Event) -> Candidate {
    Candidate {
        seq: e.seq(),
        ty: e.event_type().to_owned(),
        data: e.data().to_vec(),
        ignorable: e.ignorable(),
        op: e.surface_op().map(|op| match op {
            SurfaceOp::Append => Op::Append,
            SurfaceOp::Replace { start, end } => Op::Replace { start, end },
        }),
        sources: e.sources().map(<[u64]>::to_vec),
    }
}
