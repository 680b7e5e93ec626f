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

use sessdb::json::JsonRef;
use sessdb_formats::jsonl::import_jsonl;
use sessdb_tests::mem_store;

/// Sessions DSH loads that sessdb refuses, and why (`docs/DESIGN.md` §4).
const REFUSED_WHERE_DSH_LOADS: [&str; 1] = [
    // Decided: a number that overflows to Infinity in `data` stays refused.
    "data-1e400-87f0f076",
];

#[path = "support/load_cases.rs"]
mod load_cases;

use load_cases::cases;

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
        let result = import_jsonl(&store, &file);
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
