//! Hostile inputs: each gets a clear error, no panic, and nothing written outside the target.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb_tests::mem_store as store;
use std::io::Write;
use std::path::Path;

use sessdb::SessionHeader;
use sessdb_formats::jsonl::{ExportOptions, export_jsonl, import_jsonl};
use sessdb_formats::{Error, Outcome};

const HEADER: &str =
    "{\"type\":\"session\",\"version\":0,\"id\":\"h\",\"createdAt\":0,\"delegationDepth\":0}\n";
const TURN_END: &str = "{\"type\":\"turn/end\",\"seq\":1,\"time\":0,\"data\":{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}}\n";

fn import_bytes(dir: &Path, bytes: &[u8]) -> Result<sessdb_formats::jsonl::ImportReport, Error> {
    let p = dir.join("session.jsonl");
    std::fs::write(&p, bytes).unwrap();
    import_jsonl(&store(), &p)
}

#[test]
fn a_line_of_100_mb_is_refused_by_the_data_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = HEADER.as_bytes().to_vec();
    text.extend_from_slice(b"{\"type\":\"plugin/x\",\"seq\":0,\"time\":0,\"data\":{\"x\":\"");
    text.resize(text.len() + 100_000_000, b'a');
    text.extend_from_slice(b"\"},\"ignorable\":true}\n");
    let err = import_bytes(dir.path(), &text).unwrap_err();
    assert!(matches!(err, Error::Invalid { line: Some(2), .. }), "{err}");
    assert!(err.to_string().contains("over the limit"), "{err}");
}

#[test]
fn json_nested_100000_deep_is_named_not_recursed() {
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "{{\"type\":\"plugin/x\",\"seq\":0,\"time\":0,\"data\":{}{},\"ignorable\":true}}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let err = import_bytes(dir.path(), format!("{HEADER}{line}{TURN_END}").as_bytes()).unwrap_err();
    assert!(matches!(err, Error::Corrupt { line: Some(2), .. }), "{err}");
    assert!(err.to_string().contains("nesting deeper"), "{err}");
    // Without a later turn/end the same line is still refused, never dropped as a torn tail:
    // it parses as JSON, so DSH's loader keeps it.
    let err = import_bytes(dir.path(), format!("{HEADER}{line}").as_bytes()).unwrap_err();
    assert!(matches!(err, Error::Corrupt { line: Some(2), .. }), "{err}");
    assert!(err.to_string().contains("DSH's loader reads"), "{err}");
}

/// DSH decodes its files as UTF-8 with replacement: invalid bytes read as U+FFFD, one per
/// maximal invalid subpart, and the session loads.
#[test]
fn invalid_utf8_reads_as_replacement_characters() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = HEADER.as_bytes().to_vec();
    bytes.extend_from_slice(
        b"{\"type\":\"plugin/x\",\"seq\":0,\"time\":0,\"data\":\"\xff\xfe\",\"ignorable\":true}\n",
    );
    bytes.extend_from_slice(TURN_END.as_bytes());
    let s = store();
    let root = dir.path().join("root");
    let file = root.join("_no-cwd/s/session.jsonl");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, &bytes).unwrap();
    let report = import_jsonl(&s, &file).unwrap();
    assert_eq!(
        report.sessions[0].invalid_utf8_lines,
        vec![2],
        "reported with its line"
    );
    let id = s.list().unwrap()[0].header.id.clone();
    assert_eq!(
        s.events(&id, ..1).unwrap()[0].data(),
        "\"\u{fffd}\u{fffd}\"".as_bytes()
    );
}

#[test]
fn hostile_ids_and_cwds_stay_inside_the_root() {
    let s = store();
    let ids = [
        "../../x",
        "/etc/passwd",
        ".",
        "..",
        "a\\b",
        "\u{0}nul",
        "~002E",
    ];
    for (i, id) in ids.iter().enumerate() {
        let mut h = SessionHeader::new(*id, 0);
        if i % 2 == 0 {
            h.cwd = Some(format!("/../../{id}"));
        }
        s.create_session(h, Vec::new()).unwrap();
    }
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("root");
    let report = export_jsonl(&s, &root, &ExportOptions::default()).unwrap();
    assert_eq!(report.files.len(), ids.len());
    for (_, file) in &report.files {
        assert!(
            file.starts_with(&root),
            "{} escapes the root",
            file.display()
        );
    }
    // Nothing beside the root.
    let beside: Vec<_> = std::fs::read_dir(parent.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, vec![std::ffi::OsString::from("root")]);
    let copy = store();
    import_jsonl(&copy, &root).unwrap();
    let mut got: Vec<String> = copy
        .list()
        .unwrap()
        .into_iter()
        .map(|i| i.header.id)
        .collect();
    let mut want: Vec<String> = ids.iter().map(|s| (*s).to_owned()).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn a_zstd_frame_that_expands_hugely_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("session.jsonl.zstd");
    let mut out = Vec::new();
    for part in [HEADER.as_bytes().to_vec(), vec![b'x'; 256 << 20]] {
        let mut e = zstd_frame_encoder();
        e.write_all(&part).unwrap();
        out.extend(e.finish().unwrap());
    }
    assert!(
        out.len() < 1 << 20,
        "the bomb is small: {} bytes",
        out.len()
    );
    std::fs::write(&p, &out).unwrap();
    let err = import_jsonl(&store(), &p).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
}

fn zstd_frame_encoder() -> zstd::stream::write::Encoder<'static, Vec<u8>> {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
    e.include_checksum(true).unwrap();
    e
}

#[test]
fn a_packed_row_of_a_million_pieces_is_refused_before_it_expands() {
    // A million empty texts: 3 MB of line, a few KB compressed, hundreds of MB as events.
    let dir = tempfile::tempdir().unwrap();
    let mut line = b"{\"type\":\"text-chunks\",\"seq0\":0,\"time0\":0,\"data\":{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[".to_vec();
    let n = 1_000_000;
    for i in 0..n - 1 {
        if i > 0 {
            line.push(b',');
        }
        line.push(b'0');
    }
    line.extend_from_slice(b"],\"texts\":[");
    for i in 0..n {
        if i > 0 {
            line.push(b',');
        }
        line.extend_from_slice(b"\"\"");
    }
    line.extend_from_slice(b"]}}\n");
    let mut bytes = HEADER.as_bytes().to_vec();
    bytes.extend_from_slice(&line);
    let err = import_bytes(dir.path(), &bytes).unwrap_err();
    assert!(matches!(err, Error::Corrupt { line: Some(2), .. }), "{err}");
    assert!(err.to_string().contains("65536 pieces"), "{err}");
}

#[test]
fn a_row_at_the_piece_cap_still_imports() {
    let dir = tempfile::tempdir().unwrap();
    let n = sessdb_formats::jsonl::MAX_PIECES_PER_ROW;
    let dt = vec!["1"; n - 1].join(",");
    let texts = vec!["\"a\""; n].join(",");
    let line = format!(
        "{{\"type\":\"text-chunks\",\"seq0\":0,\"time0\":0,\"data\":{{\"turn\":1,\"step\":1,\"index\":0,\"dt\":[{dt}],\"texts\":[{texts}]}}}}\n"
    );
    let report = import_bytes(dir.path(), format!("{HEADER}{line}").as_bytes()).unwrap();
    assert_eq!(report.sessions[0].events, n as u64);
}

/// A store with one session `s` (cwd `/w`), for the export target checks.
fn one_session() -> sessdb::Store {
    let s = store();
    let mut header = SessionHeader::new("s", 0);
    header.cwd = Some("/w".into());
    s.create_session(header, Vec::new()).unwrap();
    s
}

fn all_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            }
            out.push(e.path());
        }
    }
    out.sort();
    out
}

#[test]
fn export_refuses_symbolic_links_on_the_way_out_of_its_root() {
    // (Regression: `--jsonl link` was refused, `--jsonl link/sub` accepted.)
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let s = one_session();
    // The root itself a link.
    let root = dir.path().join("root-link");
    std::os::unix::fs::symlink(&outside, &root).unwrap();
    let err = export_jsonl(&s, &root, &ExportOptions::default()).unwrap_err();
    assert!(matches!(err, Error::Layout { .. }), "{err}");
    // One rule: a directory under the link is a path through it, refused alike (it was
    // accepted before).
    let err = export_jsonl(&s, &root.join("sub"), &ExportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    // A session directory inside the root a link (also with --force).
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("--w--")).unwrap();
    std::os::unix::fs::symlink(&outside, root.join("--w--").join("s")).unwrap();
    for force in [false, true] {
        let options = ExportOptions {
            force,
            ..ExportOptions::default()
        };
        let err = export_jsonl(&s, &root, &options).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
    }
    assert!(all_files(&outside).is_empty(), "nothing written outside");
    // SQLite: the target file a link.
    let target = dir.path().join("db.sqlite");
    std::os::unix::fs::symlink(outside.join("x"), &target).unwrap();
    let options = sessdb_formats::sqlite::SqliteExportOptions {
        layout: sessdb_formats::sqlite::SqliteLayout::Analytics,
        ..Default::default()
    };
    assert!(sessdb_formats::sqlite::export_sqlite(&s, &target, &options).is_err());
    // And a database file in a directory reached through a link.
    let through = dir.path().join("root-link").join("db.sqlite");
    let err = sessdb_formats::sqlite::export_sqlite(&s, &through, &options).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(all_files(&outside).is_empty());
}

#[test]
fn export_refuses_an_unrelated_non_empty_directory_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let s = one_session();
    let root = dir.path().join("home");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("notes.txt"), b"mine").unwrap();
    let err = export_jsonl(&s, &root, &ExportOptions::default()).unwrap_err();
    assert!(err.to_string().contains("--force"), "{err}");
    assert_eq!(all_files(&root), vec![root.join("notes.txt")]);
    let forced = ExportOptions {
        force: true,
        ..ExportOptions::default()
    };
    export_jsonl(&s, &root, &forced).unwrap();
    // An earlier export is a sessions root: exporting again needs no force.
    let again = dir.path().join("again");
    export_jsonl(&s, &again, &ExportOptions::default()).unwrap();
    export_jsonl(&s, &again, &ExportOptions::default()).unwrap();
}

#[test]
fn a_failed_export_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let s = one_session();
    let root = dir.path().join("root");
    // The target file's name is taken by a directory: the final rename fails.
    std::fs::create_dir_all(root.join("--w--").join("s").join("session.jsonl").join("x")).unwrap();
    let before = all_files(&root);
    assert!(export_jsonl(&s, &root, &ExportOptions::default()).is_err());
    assert_eq!(all_files(&root), before, "no temp file left behind");
}

#[test]
fn a_multi_session_import_stores_nothing_when_any_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let source = store();
    for id in ["a", "b", "c"] {
        source
            .create_session(SessionHeader::new(id, 0), Vec::new())
            .unwrap();
    }
    let report = export_jsonl(&source, &root, &ExportOptions::default()).unwrap();
    // The last session read gets a line that breaks a rule, followed by a turn/end (so it is
    // corruption, not a torn tail).
    let (_, last) = report.files.last().unwrap();
    let original = std::fs::read(last).unwrap();
    let mut bytes = original.clone();
    bytes.extend_from_slice(b"{\"type\":\"user/message\",\"seq\":1,\"time\":0,\"data\":{}}\n");
    bytes.extend_from_slice(TURN_END.replace("\"seq\":1", "\"seq\":2").as_bytes());
    std::fs::write(last, &bytes).unwrap();
    let target = store();
    assert!(import_jsonl(&target, &root).is_err());
    assert!(
        target.list().unwrap().is_empty(),
        "nothing of the invocation is stored"
    );

    // A different session the store already holds under one of the ids: a conflict, refused
    // before anything is written.
    std::fs::write(last, &original).unwrap();
    let target = store();
    target
        .create_session(SessionHeader::new("b", 5), Vec::new())
        .unwrap();
    let err = import_jsonl(&target, &root).unwrap_err();
    assert!(
        matches!(&err, Error::Conflict { id, .. } if id == "b"),
        "{err}"
    );
    assert_eq!(
        target.list().unwrap().len(),
        1,
        "only the session that was there"
    );
    // The same session already there: skipped, the others imported.
    let target = store();
    target
        .create_session(SessionHeader::new("b", 0), Vec::new())
        .unwrap();
    let report = import_jsonl(&target, &root).unwrap();
    let outcomes: Vec<_> = report
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.outcome))
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("a", Outcome::Imported),
            ("b", Outcome::Skipped),
            ("c", Outcome::Imported)
        ]
    );
    assert_eq!(target.list().unwrap().len(), 3);
}

/// Final lines that `JSON.parse` accepts but sessdb's lossless rules refuse, or that parse but
/// break the envelope or close a turn out of order: each is refused naming its line, never
/// dropped as a torn tail (which silently lost a completed `turn/end`).
#[test]
fn a_final_line_dsh_keeps_is_never_dropped_as_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let start = "{\"type\":\"turn/start\",\"seq\":0,\"time\":0,\"data\":{\"turn\":1}}\n";
    let end = |body: &str| format!("{HEADER}{start}{body}\n");
    for body in [
        // JSON.parse accepts this; the lossless validator does not.
        r#"{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"},"x":1e400}}"#,
        // Parses, but the envelope is not an event.
        r#"{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}},"foo":1}"#,
        r#"{"type":"turn/end","seq":1,"time":0}"#,
        // Closes a turn out of seq order.
        r#"{"type":"turn/end","seq":5,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
    ] {
        let err =
            import_bytes(dir.path(), end(body).as_bytes()).expect_err(&format!("refused: {body}"));
        assert!(
            matches!(
                err,
                Error::Corrupt { line: Some(3), .. } | Error::Invalid { line: Some(3), .. }
            ),
            "{body}: {err}"
        );
    }
    // Whitespace around a line (CRLF files, trailing spaces) is ignored, as JSON.parse does;
    // a lone surrogate escape is kept as DSH keeps it (DSH writes them itself).
    for body in [
        r#"{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"error","message":"\ud800"}}}"#,
        r#"{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}} "#,
        "{\"type\":\"turn/end\",\"seq\":1,\"time\":0,\"data\":{\"turn\":1,\"reason\":{\"kind\":\"completed\"}}}\r",
    ] {
        let report = import_bytes(dir.path(), end(body).as_bytes()).unwrap();
        assert_eq!(report.sessions[0].events, 2, "{body:?}");
        assert!(report.sessions[0].torn.is_none());
    }
    let crlf = end(
        r#"{"type":"turn/end","seq":1,"time":0,"data":{"turn":1,"reason":{"kind":"completed"}}}"#,
    )
    .replace('\n', "\r\n");
    assert_eq!(
        import_bytes(dir.path(), crlf.as_bytes()).unwrap().sessions[0].events,
        2
    );
    // What DSH drops too: a line that does not parse, or is cut short.
    for body in [r#"{"type":"turn/end","seq":1,"#, r#"{"type":"plugin/x" "#] {
        let report = import_bytes(dir.path(), end(body).as_bytes()).unwrap();
        assert_eq!(
            report.sessions[0].torn.as_ref().map(|t| t.line),
            Some(3),
            "{body}"
        );
        assert_eq!(report.sessions[0].events, 1);
    }
}
