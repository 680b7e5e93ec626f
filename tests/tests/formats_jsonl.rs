//! DSH JSONL conformance and round trips: every fixture imports, and exports back byte for
//! byte; stores round-trip through JSONL exactly; torn tails and corruption are told apart.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb_tests::mem_store as store;
use std::path::Path;

use sessdb::Store;
use sessdb_formats::Error;
use sessdb_formats::jsonl::{ExportOptions, import_jsonl};
use sessdb_tests::{FIXTURES, load, renumbered_text};
use sessdb_workload::{WorkloadSpec, generate};

fn export_all(store: &Store, root: &Path, options: &ExportOptions) -> Vec<(String, Vec<u8>)> {
    sessdb_tests::export_jsonl_files(store, root, options)
}

#[test]
fn every_fixture_imports_and_exports_byte_for_byte() {
    for name in FIXTURES {
        let s = store();
        let (text, report) = sessdb_tests::import_fixture(&s, name);
        let imported = &report.sessions[0];
        assert!(imported.torn.is_none(), "{name}");
        // The same events as the fixture loader's expansion.
        let expected = load(name);
        assert_eq!(
            s.events(&imported.id, ..).unwrap(),
            expected.events,
            "{name}"
        );
        let out = tempfile::tempdir().unwrap();
        let files = export_all(&s, out.path(), &ExportOptions::default());
        assert_eq!(
            String::from_utf8(files[0].1.clone()).unwrap(),
            text,
            "{name}: export differs from the renumbered input"
        );
    }
}

#[test]
fn a_store_round_trips_through_raw_and_zstd_jsonl() {
    let mut original = store();
    generate(&WorkloadSpec::default(), &mut original).unwrap();
    for (zstd, pack) in [(false, true), (true, true), (false, false)] {
        let options = ExportOptions {
            zstd,
            pack,
            ..ExportOptions::default()
        };
        let a = tempfile::tempdir().unwrap();
        let first = export_all(&original, a.path(), &options);
        let copy = store();
        let report = import_jsonl(&copy, a.path()).unwrap();
        assert_eq!(report.sessions.len(), original.list().unwrap().len());
        let b = tempfile::tempdir().unwrap();
        let second = export_all(&copy, b.path(), &options);
        assert_eq!(first, second, "zstd {zstd} pack {pack}");
        for info in original.list().unwrap() {
            let id = &info.header.id;
            assert_eq!(
                copy.events(id, ..).unwrap(),
                original.events(id, ..).unwrap()
            );
            assert_eq!(copy.state(id).unwrap(), original.state(id).unwrap());
        }
    }
}

fn write_session(dir: &Path, text: &str) -> std::path::PathBuf {
    let p = dir.join("session.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_torn_tail_is_dropped_and_reported_and_a_corrupt_middle_is_refused() {
    let text = renumbered_text("headless-compaction-recovery.session.jsonl");
    let lines: Vec<&str> = text.lines().collect();
    let dir = tempfile::tempdir().unwrap();

    // The last line cut in half: torn.
    let last = lines[lines.len() - 1];
    let torn = format!(
        "{}\n{}",
        lines[..lines.len() - 1].join("\n"),
        &last[..last.len() / 2]
    );
    let s = store();
    let report = import_jsonl(&s, &write_session(dir.path(), &torn)).unwrap();
    let t = report.sessions[0].torn.clone().unwrap();
    assert_eq!(t.line, lines.len() as u64);
    assert_eq!(report.sessions[0].events, lines.len() as u64 - 2);

    // A damaged line early on, with the turn closed later: corruption, nothing stored.
    let mut damaged: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    damaged[5] = damaged[5].replace("\"data\":{", "\"data\":{{");
    let s = store();
    let err =
        import_jsonl(&s, &write_session(dir.path(), &(damaged.join("\n") + "\n"))).unwrap_err();
    assert!(matches!(err, Error::Corrupt { line: Some(6), .. }), "{err}");
    assert!(s.list().unwrap().is_empty());

    // A seq gap with no turn/end after it: torn from there.
    let mut gap: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    gap.remove(10); // the event of line 11 goes missing ...
    gap.pop(); // ... and no turn/end follows
    let s = store();
    let report = import_jsonl(&s, &write_session(dir.path(), &(gap.join("\n") + "\n"))).unwrap();
    let t = report.sessions[0].torn.clone().unwrap();
    assert_eq!(t.line, 11);
    assert!(t.reason.contains("seq gap"), "{}", t.reason);
    assert_eq!(report.sessions[0].events, 9);
    assert_eq!(t.lines_dropped, gap.len() as u64 - 10);
}

#[test]
fn validation_errors_name_the_file_line_seq_and_rule() {
    let text = renumbered_text("acp-tool-call-turn.session.jsonl");
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    // Line 6 is the first user/message: take its surfaceOp away.
    assert!(
        lines[5].contains("\"type\":\"user/message\""),
        "{}",
        lines[5]
    );
    lines[5] = lines[5].replace(",\"surfaceOp\":\"append\"", "");
    let dir = tempfile::tempdir().unwrap();
    let s = store();
    let err = import_jsonl(&s, &write_session(dir.path(), &(lines.join("\n") + "\n"))).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Invalid { line: Some(6), .. }), "{msg}");
    assert!(
        msg.contains("session.jsonl:6")
            && msg.contains("seq 4")
            && msg.contains("surface-op-required"),
        "{msg}"
    );
    assert!(s.list().unwrap().is_empty(), "all or nothing");
}

#[test]
fn headers_of_other_versions_and_unknown_types_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = store();
    let v3 =
        "{\"type\":\"session\",\"version\":3,\"id\":\"x\",\"createdAt\":0,\"delegationDepth\":0}\n";
    let err = import_jsonl(&s, &write_session(dir.path(), v3)).unwrap_err();
    assert!(
        matches!(&err, Error::UnsupportedFormat { found, .. } if found.contains("newer harness")),
        "{err}"
    );
    let plugin = "{\"type\":\"session\",\"version\":0,\"id\":\"x\",\"createdAt\":0,\"delegationDepth\":0}\n{\"type\":\"plugin/x\",\"seq\":0,\"time\":0,\"data\":{}}\n";
    let err = import_jsonl(&s, &write_session(dir.path(), plugin)).unwrap_err();
    assert!(matches!(err, Error::UnsupportedFormat { .. }), "{err}");
    let ignorable = plugin.replace("\"data\":{}", "\"data\":{},\"ignorable\":true");
    import_jsonl(&s, &write_session(dir.path(), &ignorable)).unwrap();
}

/// Found by a differential against DSH's JSONL reader, which requires the header line's
/// `delegationDepth` (its writer always writes it): sessdb imported a header without it.
#[test]
fn regression_a_header_line_without_delegation_depth_is_refused_as_dsh_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = store();
    let without = "{\"type\":\"session\",\"version\":0,\"id\":\"x\",\"createdAt\":0}\n";
    let err = import_jsonl(&s, &write_session(dir.path(), without)).unwrap_err();
    assert!(err.to_string().contains("delegationDepth"), "{err}");
    assert!(s.list().unwrap().is_empty());
    let with = without.replace("\"createdAt\":0", "\"createdAt\":0,\"delegationDepth\":0");
    import_jsonl(&s, &write_session(dir.path(), &with)).unwrap();
}

/// Found by a differential with DSH's own loader (run through the DSH harness): a `null`
/// line anywhere — last, or after a torn line — makes DSH's loader fail, where sessdb took a
/// final one for a torn tail; a final `42` DSH does take for a torn tail.
#[test]
fn regression_a_null_line_is_refused_as_dshs_loader_fails_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let head = "{\"type\":\"session\",\"version\":0,\"id\":\"x\",\"createdAt\":0,\"delegationDepth\":0}\n{\"type\":\"turn/start\",\"seq\":0,\"time\":1,\"data\":{\"turn\":1}}\n";
    for tail in ["null\n", " null \n", "{\"seq\":9}\nnull\n"] {
        let s = store();
        let text = format!("{head}{tail}");
        let err = import_jsonl(&s, &write_session(dir.path(), &text)).unwrap_err();
        assert!(err.to_string().contains("null"), "{tail:?}: {err}");
        assert!(s.list().unwrap().is_empty());
    }
    let s = store();
    let r = import_jsonl(&s, &write_session(dir.path(), &format!("{head}42\n"))).unwrap();
    assert!(r.sessions[0].torn.is_some());
    assert_eq!(s.session_len("x").unwrap(), 1);
}

/// Found by `seed_rejection`: a final line whose seq is negative, fractional, a string or
/// past the safe range is a seq gap to DSH's scanner (it compares the seq before decoding),
/// so with no `turn/end` from there on it is a torn tail, not a refused file; the same line
/// that closes a turn is corruption.
#[test]
fn regression_a_final_line_with_an_impossible_seq_is_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let head = concat!(
        r#"{"type":"session","version":0,"id":"s","createdAt":1,"cwd":"/w","delegationDepth":0}"#,
        "\n",
        r#"{"type":"command/run","seq":0,"time":0,"data":{}}"#,
        "\n"
    );
    for seq in ["-1", "1.5", "\"1\"", "18446744073709551615", "null"] {
        let text =
            format!("{head}{{\"type\":\"command/run\",\"seq\":{seq},\"time\":0,\"data\":{{}}}}\n");
        let s = store();
        let report = import_jsonl(&s, &write_session(dir.path(), &text)).unwrap();
        let torn = report.sessions[0].torn.clone().unwrap();
        assert!(torn.reason.contains("seq gap"), "{seq}: {}", torn.reason);
        assert_eq!(report.sessions[0].events, 1, "{seq}");
        let closes = format!(
            "{head}{{\"type\":\"turn/end\",\"seq\":{seq},\"time\":0,\"data\":{{\"turn\":1,\"reason\":{{\"kind\":\"completed\"}}}}}}\n"
        );
        let err = import_jsonl(&store(), &write_session(dir.path(), &closes)).unwrap_err();
        assert!(
            matches!(err, Error::Corrupt { line: Some(3), .. }),
            "{seq}: {err}"
        );
    }
}

/// A reader that hands out at most 7 bytes a call and counts what it was asked for: the
/// import must read the whole input once, through any chunking.
struct Trickle {
    bytes: Vec<u8>,
    at: usize,
    calls: std::rc::Rc<std::cell::Cell<usize>>,
}

impl std::io::Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.calls.set(self.calls.get() + 1);
        let n = buf.len().min(7).min(self.bytes.len() - self.at);
        buf[..n].copy_from_slice(&self.bytes[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn a_session_imports_from_a_reader_as_from_its_file_raw_or_zstd() {
    use sessdb_formats::jsonl::{import_jsonl_reader, plan_jsonl_reader};
    let text = renumbered_text("headless-compaction-recovery.session.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let from_file = store();
    import_jsonl(&from_file, &write_session(dir.path(), &text)).unwrap();
    let id = from_file.list().unwrap()[0].header.id.clone();
    let zstd = zstd::bulk::compress(text.as_bytes(), 3).unwrap();
    for input in [text.clone().into_bytes(), zstd] {
        let calls = std::rc::Rc::new(std::cell::Cell::new(0));
        let reader = |bytes: &[u8]| Trickle {
            bytes: bytes.to_vec(),
            at: 0,
            calls: calls.clone(),
        };
        let s = store();
        // The plan stores nothing; the import stores what the file import stores.
        let plan = plan_jsonl_reader(&s, reader(&input), Path::new("stdin")).unwrap();
        assert_eq!(plan.sessions[0].outcome, sessdb_formats::Outcome::Imported);
        assert!(s.list().unwrap().is_empty());
        let report = import_jsonl_reader(&s, reader(&input), Path::new("stdin")).unwrap();
        assert_eq!(report.sessions[0].file, Path::new("stdin"));
        assert!(calls.get() > input.len() / 7, "read in small pieces");
        assert_eq!(
            s.events(&id, ..).unwrap(),
            from_file.events(&id, ..).unwrap()
        );
        // Again: the same session, skipped.
        let again = import_jsonl_reader(&s, reader(&input), Path::new("stdin")).unwrap();
        assert_eq!(again.sessions[0].outcome, sessdb_formats::Outcome::Skipped);
    }
    // A refusal names the reader's name and the line.
    let bad = text.replacen(",\"surfaceOp\":\"append\"", "", 1);
    let line = bad
        .lines()
        .position(|l| l.contains("user/message"))
        .unwrap()
        + 1;
    let s = store();
    let err = import_jsonl_reader(&s, std::io::Cursor::new(bad), Path::new("stdin"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("stdin:{line}:")) && err.contains("surface-op-required"),
        "{err}"
    );
    assert!(s.list().unwrap().is_empty(), "all or nothing");
}
