//! Property tests of the formats: random generated sessions round-trip through JSONL (raw,
//! zstd, unpacked) and SQLite exactly; random damage to a JSONL file is either a torn tail
//! (the events kept are exactly a prefix, and the tail is reported) or refused — never a
//! silently different session.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb_tests::mem_store as store;

use proptest::prelude::*;
use sessdb::{Draft, Event, ForkSpec, LogType, SessionHeader, Store, SurfaceIntent, SurfaceType};
use sessdb_formats::jsonl::{ExportOptions, export_jsonl, import_jsonl};
use sessdb_formats::sqlite::{SqliteExportOptions, export_sqlite, import_sqlite};
use sessdb_workload::{WorkloadSpec, generate};

fn all_events(s: &Store) -> Vec<(String, Vec<Event>)> {
    s.list()
        .unwrap()
        .into_iter()
        .map(|i| (i.header.id.clone(), s.events(&i.header.id, ..).unwrap()))
        .collect()
}

/// One damage to a JSONL text.
#[derive(Debug, Clone)]
enum Damage {
    Truncate(prop::sample::Index),
    DropLine(prop::sample::Index),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    Garbage(prop::sample::Index, Vec<u8>),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Damage::Truncate),
        any::<prop::sample::Index>().prop_map(Damage::DropLine),
        any::<prop::sample::Index>().prop_map(Damage::DuplicateLine),
        (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(a, b)| Damage::SwapLines(a, b)),
        (
            any::<prop::sample::Index>(),
            prop::collection::vec(any::<u8>(), 1..12)
        )
            .prop_map(|(a, g)| Damage::Garbage(a, g)),
    ]
}

fn apply(text: &[u8], d: &Damage) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    // Line 0 is the header: damage events only.
    let pick = |i: &prop::sample::Index| 1 + i.index(lines.len() - 1);
    let header_end = lines[0].len();
    match d {
        Damage::Truncate(i) => {
            return text[..header_end + i.index(text.len() - header_end)].to_vec();
        }
        Damage::DropLine(i) => {
            let at = pick(i);
            lines.remove(at);
        }
        Damage::DuplicateLine(i) => {
            let at = pick(i);
            let l = lines[at].clone();
            lines.insert(at, l);
        }
        Damage::SwapLines(a, b) => {
            let (a, b) = (pick(a), pick(b));
            lines.swap(a, b);
        }
        Damage::Garbage(i, g) => {
            let at = pick(i);
            let mut l = g.clone();
            l.push(b'\n');
            lines.insert(at, l);
        }
    }
    lines.concat()
}

/// One write a user may attempt; the store accepts it or refuses it.
#[derive(Debug, Clone)]
enum Attempt {
    /// An event of a type outside DSH's vocabulary, marked ignorable or not.
    Unknown { ty: String, ignorable: bool, n: u32 },
    /// A known log type through `Draft::dynamic` (a name given at run time).
    Dynamic { n: u32 },
    /// A user message.
    User { n: u32 },
    /// A new session with a seed.
    Create { n: u32 },
    /// A fork at the session's end.
    Fork,
}

fn attempt() -> impl Strategy<Value = Attempt> {
    prop_oneof![
        ("[a-z]{1,8}/[a-z]{1,8}", any::<bool>(), any::<u32>())
            .prop_map(|(ty, ignorable, n)| Attempt::Unknown { ty, ignorable, n }),
        any::<u32>().prop_map(|n| Attempt::Dynamic { n }),
        any::<u32>().prop_map(|n| Attempt::User { n }),
        any::<u32>().prop_map(|n| Attempt::Create { n }),
        Just(Attempt::Fork),
    ]
}

/// Tries `a` on session `id`; a refusal leaves the store as it was (that is checked).
fn try_attempt(s: &Store, id: &str, a: &Attempt, k: usize) {
    let before = all_events(s);
    let result = match a {
        Attempt::Unknown { ty, ignorable, n } => {
            let d = Draft::dynamic(ty.as_str(), format!(r#"{{"n":{n}}}"#));
            s.append(id, if *ignorable { d.ignorable() } else { d })
                .map(drop)
        }
        Attempt::Dynamic { n } => s
            .append(
                id,
                Draft::dynamic("session/title", format!(r#"{{"title":"t{n}"}}"#)),
            )
            .map(drop),
        Attempt::User { n } => s
            .append(
                id,
                Draft::surface(
                    SurfaceType::UserMessage,
                    sessdb_workload::payload::user_message(&format!("u{k}-{n}"), "user", "hi"),
                    SurfaceIntent::append(),
                ),
            )
            .map(drop),
        Attempt::Create { n } => s
            .create_session(
                SessionHeader::new(format!("new-{k}-{n}"), 1_000),
                vec![
                    Draft::log(&LogType::SESSION_TITLE, r#"{"title":"seeded"}"#)
                        .into_event(0, 1_000),
                ],
            )
            .map(drop),
        Attempt::Fork => s
            .fork(id, ForkSpec::default().with_child_id(format!("{id}-f{k}")))
            .map(drop),
    };
    if result.is_err() {
        assert_eq!(all_events(s), before, "{a:?}: a refusal changed the store");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: sessdb_tests::proptest_cases(24), ..ProptestConfig::default() })]

    /// Whatever append, create and fork accept, every export restores exactly: the store
    /// refuses (at write) what DSH's loader and the importers refuse (an unknown type without
    /// `ignorable`), so no store holds an event its own export cannot bring back.
    #[test]
    fn accepted_writes_restore_exactly_through_every_format(seed in any::<u64>(), attempts in prop::collection::vec(attempt(), 1..24)) {
        let mut original = store();
        let summary = generate(&WorkloadSpec { seed, sessions: 2, max_turns: 2, max_chunks: 6, ..WorkloadSpec::default() }, &mut original).unwrap();
        for (k, a) in attempts.iter().enumerate() {
            let id = &summary.sessions[k % summary.sessions.len()];
            try_attempt(&original, id, a, k);
        }
        let expected = all_events(&original);
        for copy in exported_and_imported(&original, &[SqliteExportOptions::default(), analytics()]) {
            prop_assert_eq!(all_events(&copy), expected.clone());
        }
    }

    #[test]
    fn generated_stores_round_trip_exactly(seed in any::<u64>(), sessions in 1usize..4, turns in 1u64..5) {
        let mut original = store();
        generate(&WorkloadSpec { seed, sessions, max_turns: turns, max_chunks: 12, ..WorkloadSpec::default() }, &mut original).unwrap();
        let expected = all_events(&original);
        for copy in exported_and_imported(&original, &[analytics()]) {
            prop_assert_eq!(all_events(&copy), expected.clone());
        }
    }

    #[test]
    fn damaged_jsonl_is_a_reported_torn_tail_or_refused(seed in any::<u64>(), damages in prop::collection::vec(damage(), 1..3)) {
        let mut original = store();
        let summary = generate(&WorkloadSpec { seed, sessions: 1, max_turns: 3, max_chunks: 8, ..WorkloadSpec::default() }, &mut original).unwrap();
        let id = &summary.sessions[0];
        let events = original.events(id, ..).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let report = export_jsonl(&original, dir.path(), &ExportOptions { sessions: vec![id.clone()], ..ExportOptions::default() }).unwrap();
        let text = std::fs::read(&report.files[0].1).unwrap();
        let mut damaged = text.clone();
        for d in &damages {
            damaged = apply(&damaged, d);
        }
        let target = dir.path().join("damaged.jsonl");
        std::fs::write(&target, &damaged).unwrap();
        let copy = store();
        match import_jsonl(&copy, &target) {
            Err(_) => prop_assert!(copy.list().unwrap().is_empty(), "a refused import stores nothing"),
            Ok(r) => {
                let got = copy.events(id, ..).unwrap();
                prop_assert!(got.len() <= events.len() && got[..] == events[..got.len()], "not a prefix after {:?}", damages);
                // A file cut inside a line always reports the torn tail.
                if let [Damage::Truncate(_)] = damages.as_slice()
                    && !damaged.ends_with(b"\n")
                {
                    prop_assert!(r.sessions[0].torn.is_some(), "a cut line went unreported");
                }
            }
        }
    }
}

/// `original` exported through raw, zstd and unpacked JSONL and each SQLite `layout`, and
/// each export imported into a fresh store.
fn exported_and_imported(original: &Store, layouts: &[SqliteExportOptions]) -> Vec<Store> {
    let mut copies = Vec::new();
    for options in [
        ExportOptions::default(),
        ExportOptions {
            zstd: true,
            ..ExportOptions::default()
        },
        ExportOptions {
            pack: false,
            ..ExportOptions::default()
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        export_jsonl(original, dir.path(), &options).unwrap();
        let copy = store();
        import_jsonl(&copy, dir.path()).unwrap();
        copies.push(copy);
    }
    for layout in layouts {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.sqlite");
        export_sqlite(original, &db, layout).unwrap();
        let copy = store();
        import_sqlite(&copy, &db).unwrap();
        copies.push(copy);
    }
    copies
}

/// sessdb's own, lossless layout (the default writes DSH's schema 17).
fn analytics() -> SqliteExportOptions {
    SqliteExportOptions {
        layout: sessdb_formats::sqlite::SqliteLayout::Analytics,
        ..SqliteExportOptions::default()
    }
}
