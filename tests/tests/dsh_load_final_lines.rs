//! What DSH's own loader decided on logs whose last line is torn, or parses but is not a
//! valid event (`tests/fixtures/dsh-load/`, copied from the conformance data DSH's code made).
//! sessdb must never keep fewer events than DSH while reporting success (a silent loss): where
//! it imports, it keeps exactly DSH's events; where DSH refuses, it refuses.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::PathBuf;

use sessdb::json::JsonRef;
use sessdb_formats::jsonl::import_jsonl;
use sessdb_tests::mem_store;

fn cases() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dsh-load");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

#[test]
fn a_final_line_is_kept_dropped_or_refused_as_dsh_decides_never_lost_silently() {
    let cases = cases();
    assert_eq!(cases.len(), 18);
    let (mut agree, mut refused_where_dsh_keeps) = (0, Vec::new());
    for case in &cases {
        let expect = std::fs::read(case.join("expect.json")).unwrap();
        let expect = JsonRef::new(expect.trim_ascii());
        let dsh_loads = expect.get("dshLoads").unwrap().bytes() == b"true";
        let store = mem_store();
        let result = import_jsonl(&store, &case.join("root"));
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        match (dsh_loads, result) {
            (true, Ok(report)) => {
                let stored = expect.get("storedEvents").unwrap().as_i64().unwrap();
                assert_eq!(report.sessions[0].events as i64, stored, "{name}");
                agree += 1;
            }
            (false, Err(_)) => agree += 1,
            (false, Ok(report)) => panic!("{name}: DSH refuses, sessdb imported {report:?}"),
            // Lines DSH reads but sessdb cannot store losslessly: refused loudly, naming the
            // line — never dropped as a torn tail.
            (true, Err(e)) => {
                assert!(
                    matches!(
                        e,
                        sessdb_formats::Error::Corrupt { line: Some(_), .. }
                            | sessdb_formats::Error::Invalid { line: Some(_), .. }
                    ),
                    "{name}: {e}"
                );
                refused_where_dsh_keeps.push(name);
            }
        }
    }
    assert_eq!(
        agree, 18,
        "refused where DSH keeps: {refused_where_dsh_keeps:?}"
    );
}
