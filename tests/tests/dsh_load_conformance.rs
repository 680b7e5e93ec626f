//! Every load case of the conformance data DSH's own code made (`tests/fixtures/dsh-load/
//! all-cases.bundle.zst`: 1,264 sessions, mostly mutated, with what DSH's loader decided):
//! sessdb imports exactly the sessions DSH loads, with DSH's stored events and surface, and
//! refuses the ones DSH refuses — except the listed, documented differences.
//!
//! The bundle is zstd-compressed records, each four length-prefixed (u32 LE) parts: the case
//! name, the session file's name, DSH's decision as JSON (`dshLoads`, `storedEvents`,
//! `storedSurface`), the session file's bytes. The 8 cases DSH's data marks as deliberate
//! differences are left out of it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::PathBuf;

use sessdb::json::JsonRef;
use sessdb_formats::jsonl::import_jsonl;
use sessdb_tests::mem_store;

/// Sessions DSH loads that sessdb refuses, and why (`docs/DESIGN.md` §4).
const REFUSED_WHERE_DSH_LOADS: [&str; 1] = [
    // Decided: a number that overflows to Infinity in `data` stays refused.
    "data-1e400-87f0f076",
];

struct Case {
    name: String,
    file: String,
    expect: Vec<u8>,
    bytes: Vec<u8>,
}

fn cases() -> Vec<Case> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dsh-load/all-cases.bundle.zst");
    let packed = std::fs::read(path).unwrap();
    let mut decoder = zstd::stream::read::Decoder::new(&packed[..]).unwrap();
    decoder.window_log_max(27).unwrap();
    let mut bundle = Vec::new();
    std::io::Read::read_to_end(&mut decoder, &mut bundle).unwrap();
    fn part(rest: &mut &[u8]) -> Vec<u8> {
        let (len, tail) = rest.split_at(4);
        let len = u32::from_le_bytes(len.try_into().unwrap()) as usize;
        let (bytes, tail) = tail.split_at(len);
        *rest = tail;
        bytes.to_vec()
    }
    let mut rest = &bundle[..];
    let mut out = Vec::new();
    while !rest.is_empty() {
        out.push(Case {
            name: String::from_utf8(part(&mut rest)).unwrap(),
            file: String::from_utf8(part(&mut rest)).unwrap(),
            expect: part(&mut rest),
            bytes: part(&mut rest),
        });
    }
    out
}

#[test]
fn every_load_case_decides_as_dsh_decides() {
    let cases = cases();
    assert_eq!(cases.len(), 1264);
    let dir = tempfile::tempdir().unwrap();
    let mut refused_where_dsh_loads = Vec::new();
    for case in &cases {
        let expect = JsonRef::new(&case.expect);
        let dsh_loads = expect.get("dshLoads").unwrap().bytes() == b"true";
        let file = dir.path().join(&case.file);
        std::fs::write(&file, &case.bytes).unwrap();
        let store = mem_store();
        let result = import_jsonl(&store, &file, &mut |_| {});
        match (dsh_loads, result) {
            (true, Ok(report)) => {
                let id = &report.sessions[0].id;
                let events = expect.get("storedEvents").unwrap().as_i64().unwrap();
                let surface: Vec<u64> = expect
                    .get("storedSurface")
                    .unwrap()
                    .elements()
                    .map(|s| s.as_i64().unwrap().unsigned_abs())
                    .collect();
                assert_eq!(
                    store.session_len(id).unwrap() as i64,
                    events,
                    "{}",
                    case.name
                );
                assert_eq!(store.surface(id).unwrap(), surface, "{}", case.name);
            }
            (false, Err(_)) => {}
            (false, Ok(_)) => panic!("{}: DSH refuses it, sessdb imported it", case.name),
            (true, Err(_)) => refused_where_dsh_loads.push(case.name.clone()),
        }
    }
    assert_eq!(refused_where_dsh_loads, REFUSED_WHERE_DSH_LOADS);
}
