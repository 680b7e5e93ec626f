//! The real `sessdb` binary: every command, every exit code, the JSON outputs parsed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use sessdb::json::{JsonRef, validate};
use sessdb::{Draft, Event, Limits, LogType, Store, StoreOptions};
use sessdb_tests::{FIXTURES, renumbered_text};

fn sessdb(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(args: &[&str], cwd: &Path) -> String {
    let out = sessdb(args, cwd);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs and expects `code`; returns stderr, checked to be one human line.
fn fails(args: &[&str], cwd: &Path, code: i32) -> String {
    let out = sessdb(args, cwd);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    if code != 2 {
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("sessdb: "), "{err}");
        assert!(
            !err.contains("panicked") && !err.contains(" { "),
            "no panics, no debug output: {err}"
        );
    }
    err
}

fn json(text: &str) -> JsonRef<'_> {
    let t = text.trim_end().as_bytes();
    validate(t, &Limits::default()).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    JsonRef::new(t)
}

fn demo(dir: &Path) -> Vec<String> {
    ok(&["demo", "store", "--quiet"], dir);
    let ls = ok(&["ls", "store", "--json"], dir);
    json(&ls)
        .elements()
        .map(|s| s.get("id").unwrap().as_str().unwrap().into_owned())
        .collect()
}

#[test]
fn demo_ls_show_tail_stats() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&["demo", "store"], dir.path());
    assert!(out.contains("verify       ok"), "{out}");
    assert!(dir.path().join("store.jsonl").is_dir() && dir.path().join("store.sqlite").is_file());
    // Running it again replaces its own directory.
    ok(&["demo", "store", "-q"], dir.path());

    let ls = ok(&["ls", "store", "--json"], dir.path());
    let sessions = json(&ls);
    assert_eq!(sessions.elements().count(), 5);
    let first = sessions.elements().next().unwrap();
    let id = first.get("id").unwrap().as_str().unwrap().into_owned();
    let events = first.get("events").unwrap().as_i64().unwrap();
    assert!(ok(&["ls", "store"], dir.path()).contains(&id));

    let lines = ok(&["show", "store", &id, "--events"], dir.path());
    let parsed: Vec<Event> = lines
        .lines()
        .map(|l| Event::from_jsonl(l.as_bytes(), &Limits::default()).unwrap())
        .collect();
    assert_eq!(parsed.len() as i64, events);
    assert!(parsed.iter().enumerate().all(|(i, e)| e.seq() == i as u64));
    assert_eq!(
        ok(&["show", "store", &id, "--from", "5"], dir.path())
            .lines()
            .count() as i64,
        events - 5
    );

    let surface = ok(&["show", "store", &id, "--surface", "--json"], dir.path());
    let seqs: Vec<i64> = json(&surface)
        .elements()
        .map(|s| s.as_i64().unwrap())
        .collect();
    assert_eq!(
        seqs.len() as i64,
        first.get("surfaceLength").unwrap().as_i64().unwrap()
    );
    let messages = ok(&["show", "store", &id, "--messages", "--json"], dir.path());
    let msgs = json(&messages);
    assert!(
        msgs.elements().count() > 0
            && msgs.elements().all(|m| {
                m.get("message").is_some_and(|m| m.get("role").is_some())
                    && m.get("seq").and_then(|s| s.as_i64()).is_some()
            })
    );
    // The seqs are the surface's seqs of the messages, in order.
    let message_seqs: Vec<i64> = msgs
        .elements()
        .map(|m| m.get("seq").unwrap().as_i64().unwrap())
        .collect();
    assert!(message_seqs.iter().all(|s| seqs.contains(s)));
    assert!(
        message_seqs
            .windows(2)
            .all(|w| seqs.iter().position(|s| *s == w[0]) < seqs.iter().position(|s| *s == w[1]))
    );

    let tail = ok(&["tail", "store", &id, "-n", "3"], dir.path());
    assert_eq!(tail.lines().count(), 3);
    assert_eq!(tail.lines().last(), lines.lines().last());

    let stats = ok(&["stats", "store", "--json"], dir.path());
    let s = json(&stats);
    assert_eq!(s.get("sessions").unwrap().as_i64(), Some(5));
    assert_eq!(
        s.get("open")
            .unwrap()
            .get("recordsReplayed")
            .unwrap()
            .as_i64(),
        Some(0)
    );
    assert!(ok(&["stats", "store"], dir.path()).contains("segments"));

    fails(&["show", "store", "no-such-session"], dir.path(), 6);
    fails(&["ls", "nowhere"], dir.path(), 6);
}

#[test]
fn tail_follow_prints_new_events() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    let id = &ids[0];
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(["tail", "store", id, "-n", "1", "-f"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let last = lines.next().unwrap().unwrap();
    assert!(last.contains("\"type\""));
    // Another process (this test) writes; the follower prints it.
    let store = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let seq = store
        .append(
            id,
            Draft::log(
                LogType::new("plugin/note").unwrap(),
                &br#"{"followed":true}"#[..],
            )
            .ignorable(),
        )
        .unwrap();
    let next = lines.next().unwrap().unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    let e = Event::from_jsonl(next.as_bytes(), &Limits::default()).unwrap();
    assert_eq!((e.seq(), e.data()), (seq, &br#"{"followed":true}"#[..]));
}

#[test]
fn import_every_fixture_then_export_and_reimport() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in FIXTURES.iter().enumerate() {
        let file = dir.path().join(format!("fixture-{i}.jsonl"));
        // Give each fixture its own id: two of them share the placeholder id.
        std::fs::write(
            &file,
            renumbered_text(name).replace("{{sessionId}}", &format!("fixture-{i}")),
        )
        .unwrap();
        ok(
            &["import", "store", "--jsonl", file.to_str().unwrap()],
            dir.path(),
        );
    }
    assert_eq!(
        json(&ok(&["ls", "store", "--json"], dir.path()))
            .elements()
            .count(),
        FIXTURES.len()
    );
    ok(&["export", "store", "--jsonl", "out"], dir.path());
    ok(
        &["export", "store", "--jsonl", "outz", "--zstd", "--no-pack"],
        dir.path(),
    );
    ok(&["export", "store", "--sqlite", "out.sqlite"], dir.path());
    ok(
        &[
            "export",
            "store",
            "--sqlite",
            "one.sqlite",
            "--session",
            "fixture-3",
        ],
        dir.path(),
    );
    for (source, flag) in [
        ("out", "--jsonl"),
        ("outz", "--jsonl"),
        ("out.sqlite", "--sqlite"),
    ] {
        let target = format!("copy-{}", source.replace('.', "-"));
        ok(&["import", &target, flag, source], dir.path());
        assert_eq!(
            ok(&["ls", &target, "--json"], dir.path()),
            ok(&["ls", "store", "--json"], dir.path()),
            "{source}"
        );
    }
    ok(&["import", "one", "--sqlite", "one.sqlite"], dir.path());
    assert_eq!(
        json(&ok(&["ls", "one", "--json"], dir.path()))
            .elements()
            .count(),
        1
    );
    // The same sessions again: all skipped, nothing written.
    let again = sessdb(&["import", "store", "--jsonl", "out"], dir.path());
    assert_eq!(again.status.code(), Some(0));
    let note = String::from_utf8(again.stdout).unwrap();
    assert!(
        note.contains(&format!(
            "imported 0, extended 0, skipped {} session(s); 0 event(s) added",
            FIXTURES.len()
        )),
        "{note}"
    );
    // A damaged file: refused, exit 4, naming the line.
    let bad = dir.path().join("bad.jsonl");
    let text = renumbered_text(FIXTURES[2]).replacen(
        "\"surfaceOp\":\"append\"",
        "\"surfaceOp\":\"prepend\"",
        1,
    );
    std::fs::write(&bad, text).unwrap();
    let err = fails(&["import", "fresh", "--jsonl", "bad.jsonl"], dir.path(), 4);
    assert!(err.contains("bad.jsonl:"), "{err}");
    assert!(err.contains("nothing of this import was stored"), "{err}");
    assert!(
        !dir.path().join("fresh").exists(),
        "a failed import into a new path leaves nothing"
    );
    // Into an existing directory that is not a store: only what the import created goes.
    std::fs::create_dir(dir.path().join("mine")).unwrap();
    std::fs::write(dir.path().join("mine/notes"), b"x").unwrap();
    fails(&["import", "mine", "--jsonl", "bad.jsonl"], dir.path(), 4);
    let left: Vec<_> = std::fs::read_dir(dir.path().join("mine"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("notes")]);
    // Usage errors.
    fails(&["import", "store"], dir.path(), 2);
    fails(
        &["export", "store", "--zstd", "--sqlite", "x"],
        dir.path(),
        2,
    );
}

#[test]
fn fork_verify_repair_and_locking() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    let parent = ids.iter().find(|i| !i.ends_with("-fork")).unwrap().clone();
    // A seq inside an open turn is refused (seq 1 follows turn/start 0... find one).
    let events = ok(&["show", "store", &parent], dir.path());
    let turn_start = events
        .lines()
        .position(|l| l.contains("\"type\":\"turn/start\""))
        .unwrap();
    let turn_end = events
        .lines()
        .position(|l| l.contains("\"type\":\"turn/end\""))
        .unwrap();
    let err = fails(
        &[
            "fork",
            "store",
            &parent,
            "--at",
            &(turn_start + 1).to_string(),
        ],
        dir.path(),
        4,
    );
    assert!(err.contains("OPEN_TURN"), "{err}");
    let child = ok(
        &[
            "fork",
            "store",
            &parent,
            "--at",
            &turn_end.to_string(),
            "--id",
            "kid",
        ],
        dir.path(),
    );
    assert_eq!(child.trim(), "kid");
    fails(&["fork", "store", &parent, "--at", "999999"], dir.path(), 4);
    // Without --at: after the last event; without --id: a new UUID.
    let minted = ok(&["fork", "store", &parent], dir.path());
    assert_eq!(minted.trim().len(), 36, "{minted}");
    assert_ne!(ok(&["fork", "store", &parent], dir.path()), minted);

    let verify = ok(&["verify", "store", "--json"], dir.path());
    assert_eq!(json(&verify).get("ok").unwrap().as_bool(), Some(true));
    assert!(ok(&["verify", "store"], dir.path()).contains("ok: no corruption"));

    // Damage a record: verify finds it (exit 3), repair --salvage keeps every intact session.
    let seg_dir = dir.path().join("store/segments");
    let seg = std::fs::read_dir(&seg_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .min()
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x55;
    std::fs::write(&seg, &bytes).unwrap();
    let out = sessdb(&["verify", "store", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(3));
    let report = String::from_utf8(out.stdout).unwrap();
    assert_eq!(json(&report).get("ok").unwrap().as_bool(), Some(false));
    let err = fails(&["repair", "store"], dir.path(), 3);
    assert!(err.contains("--salvage"), "{err}");
    let repaired = ok(&["repair", "store", "--salvage"], dir.path());
    assert!(repaired.contains("salvaged"), "{repaired}");
    assert!(ok(&["verify", "store"], dir.path()).contains("ok"));
    assert!(ok(&["repair", "store"], dir.path()).contains("nothing to repair"));

    // A live writer locks the store: writing commands exit 5, reading ones work.
    let _writer = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let err = fails(&["fork", "store", &parent, "--at", "0"], dir.path(), 5);
    assert!(err.contains("LOCK"), "{err}");
    fails(&["repair", "store"], dir.path(), 5);
    ok(&["ls", "store"], dir.path());
    ok(&["verify", "store"], dir.path());
}

/// The records of a segment: the file offset where each frame starts, and the end.
fn record_boundaries(segment: &[u8]) -> Vec<usize> {
    use sessdb::codec::frame::{FrameCheck, check_frame};
    let mut out = vec![sessdb::codec::segment::SEGMENT_HEADER_LEN];
    let mut pos = out[0];
    while let FrameCheck::Valid { frame_len, .. } = check_frame(&segment[pos..], u32::MAX) {
        pos += frame_len;
        out.push(pos);
    }
    out
}

#[test]
fn regression_a_log_cut_below_its_checkpoint_is_corruption_to_every_command() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let seg = dir.path().join("store/segments/00000000000000000000.seg");
    let bytes = std::fs::read(&seg).unwrap();
    let b = record_boundaries(&bytes);
    // A cut at a record boundary: the file looks whole, but the checkpoint covers more.
    std::fs::write(&seg, &bytes[..b[b.len() * 9 / 10]]).unwrap();
    let out = sessdb(&["verify", "store"], dir.path());
    assert_eq!(
        out.status.code(),
        Some(3),
        "verify names the damage and exits 3"
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(report.contains("vouches for records up to LSN"), "{report}");
    for args in [
        &["ls", "store"][..],
        &["stats", "store"],
        &["repair", "store"],
    ] {
        let err = fails(args, dir.path(), 3);
        assert!(
            err.contains("vouches for records up to LSN"),
            "{args:?}: {err}"
        );
    }
    let before = std::fs::read(&seg).unwrap();
    assert_eq!(
        before.len(),
        b[b.len() * 9 / 10],
        "a refused repair wrote nothing"
    );
    let plan = ok(&["repair", "store", "--salvage", "--dry-run"], dir.path());
    assert!(plan.contains("lose events"), "{plan}");
    let done = ok(&["repair", "store", "--salvage"], dir.path());
    assert!(done.contains("salvaged"), "{done}");
    assert!(ok(&["verify", "store"], dir.path()).contains("ok: no corruption"));
    ok(&["ls", "store"], dir.path());
}

#[test]
fn regression_a_failed_stdout_write_exits_1_and_a_closed_pipe_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    let id = ids[0].as_str();
    for args in [
        &["ls", "store"][..],
        &["show", "store", id],
        &["show", "store", id, "--jsonl"],
        &["tail", "store", id],
        &["stats", "store", "--json"],
        &["verify", "store", "--json"],
        // Before: these two exited 0 with nothing written.
        &["--help"],
        &["--version"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_sessdb"))
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} > /dev/full: {err}");
        assert!(err.contains("No space left"), "{args:?}: {err}");
    }
    // A reader that goes away (`| head`) is no error.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(["show", "store", id])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn regression_export_sqlite_replaces_only_its_own_databases_and_import_reads_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = demo(dir.path());
    std::fs::write(dir.path().join("notes.txt"), "precious\n").unwrap();
    let err = fails(&["export", "store", "--sqlite", "notes.txt"], dir.path(), 4);
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.txt")).unwrap(),
        "precious\n"
    );
    // An earlier analytics export holding only its schema is replaced.
    let analytics = [
        "export",
        "store",
        "--sqlite",
        "x.sqlite",
        "--layout",
        "analytics",
    ];
    ok(&analytics, dir.path());
    ok(&analytics, dir.path());
    // One a user added a table to is not: that table would go.
    {
        let c = rusqlite::Connection::open(dir.path().join("x.sqlite")).unwrap();
        c.execute_batch("CREATE TABLE my_notes(x); INSERT INTO my_notes VALUES (1);")
            .unwrap();
    }
    let err = fails(&analytics, dir.path(), 4);
    assert!(err.contains("table my_notes"), "{err}");
    // A DSH database — DSH's own, or an earlier export in its layout: nothing tells them
    // apart — is never replaced unforced (the attack: a user's DSH database with 5 sessions
    // and a table of their own, exported over with one session).
    ok(&["export", "store", "--sqlite", "dsh.sqlite"], dir.path());
    {
        let c = rusqlite::Connection::open(dir.path().join("dsh.sqlite")).unwrap();
        c.execute_batch("CREATE TABLE my_notes(x); INSERT INTO my_notes VALUES (1);")
            .unwrap();
    }
    let before = std::fs::read(dir.path().join("dsh.sqlite")).unwrap();
    let one = sessions[0].as_str();
    let err = fails(
        &[
            "export",
            "store",
            "--sqlite",
            "dsh.sqlite",
            "--session",
            one,
        ],
        dir.path(),
        4,
    );
    assert!(
        err.contains("DSH database") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(dir.path().join("dsh.sqlite")).unwrap(),
        before
    );
    ok(
        &["export", "store", "--sqlite", "dsh.sqlite", "--force"],
        dir.path(),
    );
    std::fs::create_dir(dir.path().join("adir")).unwrap();
    fails(&["export", "store", "--sqlite", "adir"], dir.path(), 4);
    fails(&["export", "store", "--sqlite", "-"], dir.path(), 2);
    ok(
        &["export", "store", "--sqlite", "notes.txt", "--force"],
        dir.path(),
    );
    // `import --sqlite -` reads the database from stdin.
    let out = Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(["import", "copy", "--sqlite", "-"])
        .current_dir(dir.path())
        .stdin(std::fs::File::open(dir.path().join("dsh.sqlite")).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ok(&["ls", "copy"], dir.path()),
        ok(&["ls", "store"], dir.path())
    );
}

#[test]
fn regression_a_write_command_creates_a_store_only_in_a_new_or_empty_directory() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    ok(&["export", "store", "--jsonl", "ex"], dir.path());
    // Arguments swapped: a DSH sessions root (or any folder of files) is not turned into a store.
    std::fs::create_dir_all(dir.path().join("dshroot/project")).unwrap();
    std::fs::write(dir.path().join("dshroot/project/file"), "x").unwrap();
    let err = fails(&["import", "dshroot", "--jsonl", "ex"], dir.path(), 4);
    assert!(err.contains("not empty"), "{err}");
    let mut left: Vec<_> = std::fs::read_dir(dir.path().join("dshroot"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["project"], "nothing was added");
    fails(&["stress", "dshroot", "--seconds", "1"], dir.path(), 4);
    std::fs::create_dir(dir.path().join("empty")).unwrap();
    ok(&["import", "empty", "--jsonl", "ex"], dir.path());
    ok(&["import", "fresh", "--jsonl", "ex"], dir.path());
    // An existing store is opened as ever (the import is idempotent).
    ok(&["import", "fresh", "--jsonl", "ex"], dir.path());
}

#[test]
fn regression_consistent_answers_to_a_missing_input_a_misplaced_flag_and_a_negative_number() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let err = fails(&["import", "new", "--jsonl", "/nonexistent"], dir.path(), 6);
    assert!(err.contains("no such file"), "{err}");
    assert!(!dir.path().join("new").exists(), "nothing created");
    fails(
        &["export", "store", "--jsonl", "ex", "--layout", "analytics"],
        dir.path(),
        2,
    );
    let out = sessdb(&["stress", "st", "--seconds", "-1"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--seconds must be"));
}

#[test]
fn help_version_and_usage() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(&["--help"], dir.path());
    assert!(
        help.contains("Exit codes") && help.contains("Examples"),
        "{help}"
    );
    assert!(ok(&["--version"], dir.path()).starts_with("sessdb "));
    fails(&["no-such-command"], dir.path(), 2);
    fails(&["show"], dir.path(), 2);
    assert!(ok(&["export", "--help"], dir.path()).contains("--no-pack"));
}

#[test]
fn ids_with_control_characters_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let evil = "evil\nsession-forged      999\u{1b}[2J";
    let store = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    store
        .create_session(sessdb::SessionHeader::new(evil, 0), Vec::new())
        .unwrap();
    store.close().unwrap();
    drop(store);
    let out = ok(&["ls", "store"], dir.path());
    assert_eq!(out.lines().count(), 2, "a header and one row: {out}");
    assert!(!out.contains('\u{1b}'), "no terminal escape: {out:?}");
    assert!(out.contains("evil\\nsession-forged"), "{out}");
    // JSON output stays exact (escaped by JSON itself).
    let text = ok(&["ls", "store", "--json"], dir.path());
    let listed = json(&text);
    let first = listed.elements().next().unwrap();
    assert_eq!(first.get("id").unwrap().as_str().unwrap(), evil);
}

#[test]
fn write_commands_refuse_a_path_that_is_not_a_store_and_create_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["repair", "nope"][..],
        &["repair", "nope", "--salvage"],
        &["repair", "nope", "--salvage", "--dry-run"],
        &["fork", "nope", "x", "--at", "1"],
    ] {
        let err = fails(args, dir.path(), 6);
        assert!(err.contains("no sessdb store"), "{args:?}: {err}");
        assert!(
            !dir.path().join("nope").exists(),
            "{args:?} created the path"
        );
    }
}

#[test]
fn the_demo_is_deterministic_and_touches_only_what_it_made() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["demo", "a", "--quiet"], dir.path());
    ok(&["demo", "b", "--quiet"], dir.path());
    let read_all = |store: &str, sub: &str| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir.path().join(store).join(sub))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    };
    // The same frames, but for each writer's epoch record (its id is random: a store's
    // writers must never share one), whose id and checksum are masked.
    let masked = |files: Vec<(String, Vec<u8>)>| -> Vec<(String, Vec<u8>)> {
        files
            .into_iter()
            .map(|(name, mut b)| {
                let mut at = 40;
                while at + 16 <= b.len() && b[at..at + 16] != [0; 16] {
                    let len = u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
                    if b[at + 8] == sessdb::codec::frame::RecordKind::Epoch as u8 {
                        b[at + 12..at + 16 + len].fill(0);
                    }
                    at += 16 + len;
                }
                (name, b)
            })
            .collect()
    };
    let (a, b) = (read_all("a", "segments"), read_all("b", "segments"));
    assert_ne!(a, b, "each writer's epoch is its own");
    assert_eq!(masked(a), masked(b), "same seed, same log");
    assert_eq!(read_all("a", "checkpoints"), read_all("b", "checkpoints"));
    // A rerun replaces its own files; an unrelated file beside a new demo path is refused.
    ok(&["demo", "a", "--quiet"], dir.path());
    std::fs::write(dir.path().join("c.sqlite"), b"mine").unwrap();
    let err = fails(&["demo", "c"], dir.path(), 4);
    assert!(err.contains("not made by `sessdb demo`"), "{err}");
    assert_eq!(std::fs::read(dir.path().join("c.sqlite")).unwrap(), b"mine");
}

#[test]
fn delete_removes_a_session_and_show_to_bounds_the_range() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["demo", "store", "--quiet"], dir.path());
    let listed = ok(&["ls", "store", "--json", "--sort", "id"], dir.path());
    let ids: Vec<String> = json(&listed)
        .elements()
        .map(|s| s.get("id").unwrap().as_str().unwrap().into_owned())
        .collect();
    let (parent, child) = (&ids[2], &ids[3]);
    assert!(child.starts_with(parent.as_str()), "{ids:?}");
    // show --from/--to (exclusive, as the library's and Node's ranges) and --through
    // (inclusive): exactly the seqs asked for. Before, `--to` was inclusive.
    let seqs_of = |args: &[&str]| -> Vec<i64> {
        ok(args, dir.path())
            .lines()
            .map(|l| {
                JsonRef::new(l.as_bytes())
                    .get("seq")
                    .unwrap()
                    .as_i64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(
        seqs_of(&["show", "store", parent, "--from", "2", "--to", "4"]),
        vec![2, 3]
    );
    assert_eq!(
        seqs_of(&["show", "store", parent, "--from", "2", "--through", "4"]),
        vec![2, 3, 4]
    );
    // A range that ends before it starts is a usage error, not an empty answer.
    let err = fails(
        &["show", "store", parent, "--from", "7", "--to", "5"],
        dir.path(),
        2,
    );
    assert!(err.contains("--from 7"), "{err}");
    // Deleting the parent keeps the fork whole; a missing session is an error naming it.
    let child_before = ok(&["show", "store", child], dir.path());
    ok(&["delete", "store", parent, "--quiet"], dir.path());
    let after = ok(&["ls", "store", "--json"], dir.path());
    assert_eq!(json(&after).elements().count(), ids.len() - 1);
    assert_eq!(ok(&["show", "store", child], dir.path()), child_before);
    let err = fails(&["delete", "store", parent], dir.path(), 6);
    assert!(err.contains(parent.as_str()), "{err}");
    fails(&["delete", "nope", "x"], dir.path(), 6);
    assert!(!dir.path().join("nope").exists());
}

#[test]
fn import_is_incremental_idempotent_and_refuses_conflicts_whole() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    ok(
        &["export", "store", "--jsonl", "root1", "--quiet"],
        dir.path(),
    );
    // The result line is on stdout, and stays there with --quiet.
    let first = sessdb(
        &["import", "copy", "--jsonl", "root1", "--quiet"],
        dir.path(),
    );
    let note = String::from_utf8(first.stdout).unwrap();
    assert!(
        note.contains(&format!("imported {}, extended 0, skipped 0", ids.len())),
        "{note}"
    );
    // Twice: every session skipped, exit 0, the store unchanged.
    let listed = ok(&["ls", "copy", "--json"], dir.path());
    let second = sessdb(&["import", "copy", "--jsonl", "root1"], dir.path());
    assert_eq!(second.status.code(), Some(0));
    let note = String::from_utf8(second.stdout).unwrap();
    assert!(
        note.contains(&format!(
            "imported 0, extended 0, skipped {} session(s); 0 event(s) added",
            ids.len()
        )),
        "{note}"
    );
    assert_eq!(ok(&["ls", "copy", "--json"], dir.path()), listed);

    // A session grew in the source: the root exported again extends it.
    let grown = &ids[0];
    {
        let store = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
        store
            .append(
                grown,
                Draft::log(&LogType::TODO_WRITE, &br#"{"todos":[]}"#[..]),
            )
            .unwrap();
        store.close().unwrap();
    }
    ok(
        &["export", "store", "--jsonl", "root2", "--quiet"],
        dir.path(),
    );
    let len = |store: &str| {
        let s =
            Store::open_read_only(dir.path().join(store), sessdb::StoreOptions::default()).unwrap();
        s.session_len(grown).unwrap()
    };
    let before = len("copy");
    // The dry run prints the plan and writes nothing.
    let plan = ok(
        &["import", "copy", "--jsonl", "root2", "--dry-run"],
        dir.path(),
    );
    assert!(
        plan.contains(&format!(
            "extend  {grown} (1 new events after seq {})",
            before - 1
        )),
        "{plan}"
    );
    assert!(
        plan.contains(&format!(
            "would have: imported 0, extended 1, skipped {} session(s); 1 event(s) added",
            ids.len() - 1
        )),
        "{plan}"
    );
    assert_eq!(len("copy"), before);
    let third = sessdb(&["import", "copy", "--jsonl", "root2"], dir.path());
    assert_eq!(third.status.code(), Some(0));
    assert!(
        String::from_utf8(third.stdout)
            .unwrap()
            .contains("extended 1"),
    );
    assert_eq!(len("copy"), before + 1);
    assert_eq!(len("copy"), len("store"));
    // A dry run into a path that is no store plans against an empty one and creates nothing.
    let fresh = ok(
        &["import", "nothing-here", "--jsonl", "root2", "--dry-run"],
        dir.path(),
    );
    assert!(
        fresh.contains(&format!("would have: imported {}", ids.len())),
        "{fresh}"
    );
    assert!(!dir.path().join("nothing-here").exists());

    // A session that differs from the stored one: a conflict, exit 4, nothing written (the
    // sessions read before it included).
    let file = std::fs::read_dir(dir.path().join("root2"))
        .unwrap()
        .flat_map(|p| std::fs::read_dir(p.unwrap().path()).unwrap())
        .map(|s| s.unwrap().path().join("session.jsonl"))
        .find(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .contains(&format!("\"id\":\"{}\"", ids[ids.len() - 1]))
        })
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let (at, _) = text.match_indices("\"text\":\"").nth(1).unwrap();
    let changed = format!("{}\"text\":\"changed {}", &text[..at], &text[at + 8..]);
    std::fs::write(&file, changed).unwrap();
    let listed = ok(&["ls", "copy", "--json"], dir.path());
    let err = fails(&["import", "copy", "--jsonl", "root2"], dir.path(), 4);
    assert!(err.contains("conflicts with the stored one"), "{err}");
    assert!(
        err.contains("--dry-run"),
        "the conflict says what to do: {err}"
    );
    assert_eq!(ok(&["ls", "copy", "--json"], dir.path()), listed);
}

/// One mapping of exit codes (README): 3 corruption, 4 input refused, 5 locked, 6 not found;
/// `--json` errors are JSON on stdout; the lock error says what to do once.
#[test]
fn exit_codes_and_json_errors_are_consistent() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    // Not found: a store, a session, in every command.
    fails(&["show", "store", "missing"], dir.path(), 6);
    fails(&["fork", "store", "missing", "--at", "1"], dir.path(), 6);
    fails(&["delete", "store", "missing"], dir.path(), 6);
    fails(
        &["export", "store", "--jsonl", "-", "--session", "missing"],
        dir.path(),
        6,
    );
    fails(&["stats", "nowhere"], dir.path(), 6);
    // A garbage input is refused the same way whatever its format.
    std::fs::write(dir.path().join("garbage.sqlite"), b"not a database at all").unwrap();
    std::fs::write(dir.path().join("garbage.jsonl"), b"not a session at all\n").unwrap();
    fails(
        &["import", "g1", "--sqlite", "garbage.sqlite"],
        dir.path(),
        4,
    );
    fails(&["import", "g2", "--jsonl", "garbage.jsonl"], dir.path(), 4);
    // --json: the error as JSON on stdout, the one-line message on stderr.
    for args in [
        &["verify", "nowhere", "--json"][..],
        &["ls", "nowhere", "--json"],
        &["show", "store", "missing", "--json"],
        &["tail", "store", "missing", "--json"],
        &["repair", "nowhere", "--dry-run", "--json"],
    ] {
        let out = sessdb(args, dir.path());
        assert_eq!(out.status.code(), Some(6), "{args:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let error = json(&stdout).get("error").unwrap();
        assert_eq!(
            error.get("code").unwrap().as_str().unwrap(),
            "NOT_FOUND",
            "{stdout}"
        );
        assert_eq!(error.get("exit").unwrap().as_i64(), Some(6), "{stdout}");
        assert!(error.get("message").unwrap().as_str().is_some(), "{stdout}");
    }
    // Locked: the message says what to do, once.
    let writer = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let err = fails(&["delete", "store", &ids[0]], dir.path(), 5);
    assert_eq!(err.matches("read-only").count(), 1, "{err}");
    drop(writer);
    // show --messages --json keeps each message's seq beside it.
    let messages = ok(
        &["show", "store", &ids[0], "--messages", "--json"],
        dir.path(),
    );
    let surface = ok(
        &["show", "store", &ids[0], "--surface", "--json"],
        dir.path(),
    );
    let seqs: Vec<i64> = json(&messages)
        .elements()
        .map(|m| m.get("seq").unwrap().as_i64().unwrap())
        .collect();
    let surface: Vec<i64> = json(&surface)
        .elements()
        .map(|s| s.as_i64().unwrap())
        .collect();
    assert!(!seqs.is_empty());
    assert!(
        seqs.iter().all(|s| surface.contains(s)),
        "{seqs:?} {surface:?}"
    );
}

#[test]
fn streams_sorting_completions_man_and_suggestions() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    // export --jsonl - is the session file; show --jsonl prints the same; import --jsonl -
    // reads it back from stdin.
    let file = ok(
        &["export", "store", "--jsonl", "-", "--session", &ids[1]],
        dir.path(),
    );
    assert_eq!(ok(&["show", "store", &ids[1], "--jsonl"], dir.path()), file);
    assert!(file.starts_with("{\"type\":\"session\""), "{file}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(["import", "piped", "--jsonl", "-"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), file.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        ok(&["show", "piped", &ids[1]], dir.path()),
        ok(&["show", "store", &ids[1]], dir.path())
    );
    // `-` needs exactly one session.
    fails(&["export", "store", "--jsonl", "-"], dir.path(), 2);
    // ls --sort: ascending by the key, newest created last by default.
    let column = |args: &[&str], key: &str| -> Vec<i64> {
        json(&ok(args, dir.path()))
            .elements()
            .map(|s| s.get(key).unwrap().as_i64().unwrap())
            .collect()
    };
    let events = column(&["ls", "store", "--json", "--sort", "events"], "events");
    assert!(events.is_sorted(), "{events:?}");
    let created = column(&["ls", "store", "--json"], "createdAt");
    assert!(created.is_sorted(), "{created:?}");
    let last = column(
        &["ls", "store", "--json", "--sort", "last"],
        "lastEventTime",
    );
    assert!(last.is_sorted(), "{last:?}");
    // `-n N --sort updated -r`: the N most recently updated, newest first (`last` is the
    // older name of `updated`).
    let updated = column(
        &["ls", "store", "--json", "--sort", "updated", "-r"],
        "lastEventTime",
    );
    assert_eq!(updated, last.iter().rev().copied().collect::<Vec<_>>());
    let newest = column(
        &[
            "ls", "store", "--json", "-n", "2", "--sort", "updated", "-r",
        ],
        "lastEventTime",
    );
    assert_eq!(newest, updated[..2.min(updated.len())]);
    assert!(updated.len() > 2, "{updated:?}");
    let none = ok(&["ls", "store", "--json", "-n", "0"], dir.path());
    assert_eq!(json(&none).elements().count(), 0, "{none}");
    // Completions and the man page come from the command definitions.
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(&["completions", shell], dir.path());
        assert!(
            script.contains("verify") && script.contains("import"),
            "{shell}"
        );
    }
    let man = ok(&["man"], dir.path());
    assert!(
        man.contains(".TH sessdb 1") && man.contains("import"),
        "{man}"
    );
    // A mistyped subcommand gets a suggestion.
    let out = sessdb(&["verfy", "store"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'verify'"));
}

/// `s.jsonl` in `dir`: session `t1` (its header and end-seed marker), then a torn last line.
fn write_torn_session(dir: &Path) {
    std::fs::write(
        dir.join("s.jsonl"),
        concat!(
            r#"{"type":"session","version":0,"id":"t1","createdAt":1,"delegationDepth":0}"#,
            "\n",
            r#"{"type":"session/end-seed","seq":0,"time":1,"data":{}}"#,
            "\n",
            r#"{"type":"turn/sta"#,
        ),
    )
    .unwrap();
}

#[test]
fn regression_quiet_silences_chatter_never_a_warning_about_data() {
    let dir = tempfile::tempdir().unwrap();
    // A session whose last line is torn: import drops it, and says so even under `-q`.
    write_torn_session(dir.path());
    let out = sessdb(&["import", "st", "--jsonl", "s.jsonl", "-q"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("warning") && err.contains("torn tail from line 3 dropped"),
        "{err}"
    );
    assert!(!err.contains("imported"), "the summary is chatter: {err}");
    // `stress -q`: its acknowledgements are its output (stdout); no summary on stderr.
    let out = sessdb(&["stress", "st2", "--seconds", "0", "-q"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let out = sessdb(&["stress", "st3", "--seconds", "0"], dir.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("writes acknowledged"));
}

#[test]
fn regression_the_demo_never_shows_a_last_event_before_a_creation() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["demo", "store", "--quiet"], dir.path());
    let listed = ok(&["ls", "store", "--json"], dir.path());
    let rows = json(&listed);
    let mut n = 0;
    for row in rows.elements() {
        let created = row.get("createdAt").and_then(|v| v.as_i64());
        let last = row.get("lastEventTime").and_then(|v| v.as_i64());
        assert!(created.is_some() && last.is_some(), "{listed}");
        assert!(last >= created, "{listed}");
        n += 1;
    }
    assert_eq!(n, 5, "{listed}");
}

#[test]
fn regression_repair_dry_run_without_salvage_plans_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("o.jsonl"),
        concat!(
            r#"{"type":"session","version":0,"id":"t2","createdAt":1,"delegationDepth":0}"#,
            "\n",
            r#"{"type":"session/end-seed","seq":0,"time":1,"data":{}}"#,
            "\n",
            r#"{"type":"turn/start","seq":1,"time":2,"data":{"turn":1}}"#,
            "\n",
        ),
    )
    .unwrap();
    ok(&["import", "st", "--jsonl", "o.jsonl", "-q"], dir.path());
    let log_bytes = |d: &Path| {
        std::fs::read_dir(d.join("st/segments"))
            .unwrap()
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect::<Vec<_>>()
    };
    let before = log_bytes(dir.path());
    let plan = ok(&["repair", "st", "--dry-run"], dir.path());
    assert!(plan.contains("would close the open turn of t2"), "{plan}");
    assert_eq!(log_bytes(dir.path()), before, "a dry run writes nothing");
    let done = ok(&["repair", "st"], dir.path());
    assert!(done.contains("closed the open turn of t2"), "{done}");
    assert_eq!(
        ok(&["repair", "st", "--dry-run"], dir.path()).trim(),
        "nothing to repair"
    );
}

#[test]
fn import_export_and_fork_speak_json_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    write_torn_session(dir.path());
    let out = ok(
        &["import", "st", "--jsonl", "s.jsonl", "--json", "-q"],
        dir.path(),
    );
    let report = json(&out);
    let first = report.get("sessions").unwrap().elements().next().unwrap();
    assert!(first.get("id").unwrap().str_eq("t1"), "{out}");
    assert!(first.get("outcome").unwrap().str_eq("imported"), "{out}");
    assert_eq!(first.get("events").unwrap().as_i64(), Some(1), "{out}");
    assert_eq!(
        first.get("tornFromLine").unwrap().as_i64(),
        Some(3),
        "{out}"
    );
    assert_eq!(report.get("added").unwrap().as_i64(), Some(1), "{out}");

    let out = ok(&["fork", "st", "t1", "--id", "t1-b", "--json"], dir.path());
    let fork = json(&out);
    assert!(fork.get("child").unwrap().str_eq("t1-b"), "{out}");
    assert!(fork.get("parent").unwrap().str_eq("t1"), "{out}");
    assert_eq!(fork.get("inherited").unwrap().as_i64(), Some(1), "{out}");

    let out = ok(
        &["export", "st", "--jsonl", "root", "--json", "-q"],
        dir.path(),
    );
    let export = json(&out);
    assert_eq!(export.get("files").unwrap().elements().count(), 2, "{out}");
    // An error is JSON on stdout too when --json was asked for.
    let out = sessdb(&["fork", "st", "nope", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(6));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(json(&text).get("error").is_some(), "{text}");
}

#[test]
fn regression_man_writes_every_page_the_top_page_names() {
    let dir = tempfile::tempdir().unwrap();
    let listed = ok(&["man", "pages"], dir.path());
    let top = std::fs::read_to_string(dir.path().join("pages/sessdb.1")).unwrap();
    // roff escapes the hyphen in the references: `sessdb\-ls(1)`.
    let named: Vec<String> = top
        .split("sessdb\\-")
        .skip(1)
        .filter_map(|rest| rest.split('(').next())
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase()))
        .map(|n| format!("sessdb-{n}.1"))
        .collect();
    assert!(named.len() >= 10, "{top}");
    for page in &named {
        assert!(
            dir.path().join("pages").join(page).is_file(),
            "{page} missing"
        );
        assert!(listed.contains(page.as_str()), "{listed}");
    }
    // Without a directory: the top page on stdout, as before.
    assert!(ok(&["man"], dir.path()).starts_with(".ie"));
}

/// Before: `import STORE --sqlite DIR` said `open DIR: no such file` and exited 1, where
/// `--jsonl` on a path of the wrong kind says what it is and exits 4. One rule for both.
#[test]
fn regression_import_sqlite_of_a_directory_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    let err = fails(&["import", "st", "--sqlite", "d"], dir.path(), 4);
    assert!(
        err.contains("is a directory, not a SQLite database file"),
        "{err}"
    );
    let err = fails(&["import", "st", "--jsonl", "d"], dir.path(), 4);
    assert!(err.contains("no session.jsonl"), "{err}");
    assert!(
        !dir.path().join("st").exists(),
        "a refused import makes no store"
    );
}

/// Flips one byte of the demo store's (one) segment, `at` bytes into its records (past the
/// 40-byte segment header).
fn flip_record_byte(dir: &Path, at: usize) {
    let seg = std::fs::read_dir(dir.join("store/segments"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .next()
        .unwrap();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[40 + at] ^= 0x5a;
    std::fs::write(&seg, &bytes).unwrap();
}

/// Before: `verify` on a store with one damaged record said `0 record(s), 0 log byte(s): 0
/// session(s)` and "no checkpoint to compare" although the log was intact around the damage
/// and a checkpoint existed. Now it counts what it read and names the checkpoint it could
/// not compare.
#[test]
fn regression_verify_on_a_damaged_store_counts_what_it_read() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let sound = json(&ok(&["verify", "store", "--json"], dir.path()))
        .get("records")
        .unwrap()
        .as_f64()
        .unwrap();
    let sound_bytes = json(&ok(&["verify", "store", "--json"], dir.path()))
        .get("logBytes")
        .unwrap()
        .as_f64()
        .unwrap() as u64;
    // A third of the way into the records.
    flip_record_byte(dir.path(), usize::try_from(sound_bytes).unwrap() / 3);
    let out = sessdb(&["verify", "store", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    let r = json(&text);
    let records = r.get("records").unwrap().as_f64().unwrap();
    assert!(records > 0.0 && records < sound, "{text}");
    assert!(r.get("logBytes").unwrap().as_f64().unwrap() > 0.0, "{text}");
    assert!(r.get("sessions").unwrap().as_f64().unwrap() > 0.0, "{text}");
    assert!(r.get("checkpoint").unwrap().as_f64().is_some(), "{text}");
    assert_eq!(r.get("compared").unwrap().bytes(), b"false", "{text}");
    let human = String::from_utf8(sessdb(&["verify", "store"], dir.path()).stdout).unwrap();
    assert!(human.contains("not compared"), "{human}");
}

/// Before: `repair --salvage --dry-run` showed the sessions salvage cuts but not the writes
/// the real run makes after it: the closers of every open turn it leaves. Now the dry run
/// names every session the real run then closes, and no other.
#[test]
fn regression_the_salvage_dry_run_shows_the_turns_the_real_run_closes() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    flip_record_byte(dir.path(), 55_000);
    let ids = |text: &str, prefix: &str| -> Vec<String> {
        let mut v: Vec<String> = text
            .lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|l| l.split([' ', ':']).next().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let plan = ok(&["repair", "store", "--salvage", "--dry-run"], dir.path());
    let would = ids(&plan, "would close the open turn of ");
    let done = ok(&["repair", "store", "--salvage"], dir.path());
    let closed = ids(&done, "closed the open turn of ");
    assert!(!closed.is_empty(), "the cut leaves a turn open: {done}");
    assert_eq!(would, closed, "dry run:\n{plan}\nreal run:\n{done}");
}

/// `repair --json` says what the lines say: the salvage plan and the open turns the real run
/// closes (their closers known only after it), and a repair with nothing to do.
#[test]
fn repair_json_reports_the_salvage_and_the_turns_it_closes() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let clean = ok(&["repair", "store", "--json"], dir.path());
    assert_eq!(
        clean.trim_end(),
        r#"{"dryRun":false,"tornTailBytes":0,"segmentsRemoved":[],"salvage":null,"openTurns":[]}"#
    );
    flip_record_byte(dir.path(), 55_000);
    let turns = |text: &str, done: bool| -> Vec<String> {
        let turns = json(text).get("openTurns").unwrap();
        let mut v: Vec<String> = turns
            .elements()
            .map(|t| {
                assert_eq!(t.get("closers").unwrap().as_i64().is_some(), done, "{text}");
                t.get("session").unwrap().as_str().unwrap().into_owned()
            })
            .collect();
        v.sort();
        v
    };
    let plan = ok(
        &["repair", "store", "--salvage", "--dry-run", "--json"],
        dir.path(),
    );
    let salvage = json(&plan).get("salvage").unwrap();
    assert!(
        salvage.get("damage").unwrap().elements().count() > 0,
        "{plan}"
    );
    let first = salvage.get("damage").unwrap().elements().next().unwrap();
    assert_eq!(
        first.get("repair").unwrap().as_str().unwrap(),
        "voided",
        "{plan}"
    );
    let done = ok(&["repair", "store", "--salvage", "--json"], dir.path());
    assert!(!turns(&done, true).is_empty(), "{done}");
    assert_eq!(turns(&plan, false), turns(&done, true), "{plan}\n{done}");
    // A failure under --json is the error object, with its stable code and the exit status.
    let writer = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let out = sessdb(&["repair", "store", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(5));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let error = json(&stdout).get("error").unwrap();
    assert_eq!(
        error.get("code").unwrap().as_str().unwrap(),
        "LOCKED",
        "{stdout}"
    );
    drop(writer);
}

#[test]
fn compact_erases_a_deleted_session_and_a_dry_run_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    for id in ["keep", "gone"] {
        store
            .create_session(sessdb::SessionHeader::new(id, 0), Vec::new())
            .unwrap();
        let data = format!("{{\"note\":\"text-of-{id}\"}}");
        for _ in 0..20 {
            store
                .append(
                    id,
                    Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
                )
                .unwrap();
        }
    }
    // A writer holds the store: refused, exit 5.
    fails(&["compact", "store"], dir.path(), 5);
    store.close().unwrap();
    drop(store);
    ok(&["delete", "store", "gone"], dir.path());
    let in_files = |needle: &str| -> usize {
        ["segments", "checkpoints"]
            .iter()
            .flat_map(|d| std::fs::read_dir(dir.path().join("store").join(d)).unwrap())
            .map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .map(|b| {
                b.windows(needle.len())
                    .filter(|w| *w == needle.as_bytes())
                    .count()
            })
            .sum()
    };
    assert!(in_files("text-of-gone") >= 20);
    let plan = ok(&["compact", "store", "--dry-run"], dir.path());
    assert!(
        plan.contains("segments/") && plan.contains("record(s) left out"),
        "{plan}"
    );
    assert!(
        in_files("text-of-gone") >= 20,
        "a dry run changed the files"
    );
    ok(&["compact", "store"], dir.path());
    assert_eq!(in_files("text-of-gone"), 0);
    assert!(in_files("text-of-keep") >= 20);
    assert!(ok(&["verify", "store"], dir.path()).contains("ok"));
    let listed = ok(&["ls", "store"], dir.path());
    assert!(
        listed.contains("keep") && !listed.contains("gone"),
        "{listed}"
    );
}

#[test]
fn delete_takes_several_ids_or_an_age_and_stats_says_what_is_dead() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    let stats = |dir: &Path| {
        let text = ok(&["stats", "store", "--json", "--space"], dir);
        json(&text);
        text
    };
    let before = stats(dir.path());
    assert!(before.contains("\"deadBytes\":0"), "{before}");
    // One unknown id deletes nothing (exit 6, naming it).
    let err = fails(&["delete", "store", &ids[0], "nope"], dir.path(), 6);
    assert!(err.contains("nope"), "{err}");
    assert_eq!(
        json(&ok(&["ls", "store", "--json"], dir.path()))
            .elements()
            .count(),
        ids.len()
    );
    // Several at once, each printed.
    let out = ok(
        &["delete", "store", &ids[0], &ids[1], "--quiet"],
        dir.path(),
    );
    assert_eq!(out.lines().collect::<Vec<_>>(), [&ids[0][..], &ids[1][..]]);
    let after = stats(dir.path());
    assert!(!after.contains("\"deadBytes\":0"), "{after}");
    // By age: the demo's sessions were written in 2026-01; a dry run lists, changes nothing.
    let plan = ok(
        &["delete", "store", "--older-than", "1h", "--dry-run"],
        dir.path(),
    );
    assert_eq!(plan.lines().count(), ids.len() - 2, "{plan}");
    assert!(plan.contains("\t2026-01-01T"), "{plan}");
    assert_eq!(
        json(&ok(&["ls", "store", "--json"], dir.path()))
            .elements()
            .count(),
        ids.len() - 2
    );
    assert!(ok(&["delete", "store", "--older-than", "36500d"], dir.path()).is_empty());
    let done = ok(&["delete", "store", "--older-than", "0s"], dir.path());
    assert_eq!(done, plan);
    assert!(ok(&["ls", "store"], dir.path()).lines().count() <= 1);
    // A duration in another unit is a usage error; ids and an age together too.
    fails(&["delete", "store", "--older-than", "3w"], dir.path(), 2);
    fails(
        &["delete", "store", "x", "--older-than", "3d"],
        dir.path(),
        2,
    );
    let compacted = ok(&["compact", "store", "--json"], dir.path());
    let c = json(&compacted);
    assert!(
        c.get("reclaimedBytes")
            .and_then(|v| v.as_safe_integer())
            .is_some_and(|n| n > 0),
        "{compacted}"
    );
    let after = stats(dir.path());
    assert!(after.contains("\"deadBytes\":0"), "{after}");
    // The records left out are named by tombstones in the compacted segments' tables.
    assert!(
        json(&after)
            .get("tableBytes")
            .and_then(|v| v.as_safe_integer())
            .is_some_and(|n| n >= 12),
        "{after}"
    );
    let text = ok(&["stats", "store", "--space"], dir.path());
    assert!(text.contains("tables             "), "{text}");
    // --json: the deleted sessions as objects, an error as one too.
    let none = ok(
        &["delete", "store", "--older-than", "0s", "--json"],
        dir.path(),
    );
    assert_eq!(none.trim_end(), r#"{"dryRun":false,"deleted":[]}"#);
    let out = sessdb(&["delete", "store", "nope", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"error\""));
}

/// Before: a hint said `sessdb ls STORE` whatever the store was. Now it names the store the
/// command was given, quoted for a shell when it has to be, so it runs as printed.
#[test]
fn regression_hints_name_the_store_given() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let err = fails(&["show", "store", "missing"], dir.path(), 6);
    assert!(
        err.contains("`sessdb ls store` lists the sessions"),
        "{err}"
    );
    std::fs::rename(dir.path().join("store"), dir.path().join("my store")).unwrap();
    let err = fails(&["tail", "my store", "missing"], dir.path(), 6);
    assert!(
        err.contains("`sessdb ls 'my store'` lists the sessions"),
        "{err}"
    );
}

/// Deleting the parent of a live fork reclaims nothing (the fork reads what it inherited):
/// `compact` says so, instead of an unexplained "0 bytes".
#[test]
fn compact_says_why_a_deleted_parent_of_a_live_fork_reclaims_nothing() {
    let dir = tempfile::tempdir().unwrap();
    ok(&["demo", "store", "--quiet"], dir.path());
    let listed = ok(&["ls", "store", "--json"], dir.path());
    let parent = json(&listed)
        .elements()
        .find_map(|e| e.get("parent")?.as_str().map(|p| p.into_owned()))
        .expect("the demo has a fork");
    ok(&["delete", "store", &parent], dir.path());
    let out = sessdb(&["compact", "store"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("1 deleted session(s) kept in part: live forks read them"),
        "{said}"
    );
    let again = ok(&["compact", "store", "--json"], dir.path());
    assert_eq!(
        json(&again)
            .get("sessionsKept")
            .and_then(|v| v.as_safe_integer()),
        Some(1),
        "{again}"
    );
}

/// Before: after a salvage killed midway (its `SALVAGING` marker left), `ls` and `show` said
/// only "record contradicts the log" (exit 3). Now they name the interrupted salvage and the
/// command that finishes it; that command then makes the store readable again.
#[test]
fn regression_an_interrupted_salvage_is_named_with_the_way_to_finish_it() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    // The checkpoint goes too: the open then reads the whole log, as after a salvage's cut.
    for e in std::fs::read_dir(dir.path().join("store/checkpoints")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    flip_record_byte(dir.path(), 55_000);
    std::fs::write(dir.path().join("store/SALVAGING"), b"").unwrap();
    for args in [
        &["ls", "store"][..],
        &["show", "store", "session-0c9d4078-0001"],
    ] {
        let text = fails(args, dir.path(), 3);
        assert!(
            text.contains("salvage")
                && text.contains("interrupted")
                && text.contains("repair store --salvage"),
            "{args:?}: {text}"
        );
    }
    // `verify` reports the damage, and the interrupted salvage with it.
    let verified = sessdb(&["verify", "store"], dir.path());
    assert_eq!(verified.status.code(), Some(3));
    let text = String::from_utf8(verified.stdout).unwrap();
    assert!(
        text.contains("interrupted") && text.contains("repair --salvage"),
        "{text}"
    );
    let out = sessdb(&["ls", "store", "--json"], dir.path());
    assert_eq!(out.status.code(), Some(3));
    let json_err = String::from_utf8(out.stdout).unwrap();
    assert!(json_err.contains("\"code\":\"CORRUPTION\""), "{json_err}");
    ok(&["repair", "store", "--salvage"], dir.path());
    assert!(!dir.path().join("store/SALVAGING").exists());
    ok(&["ls", "store"], dir.path());
}

/// Before: `compact --dry-run` and `delete --older-than … --dry-run` exited 5 while an
/// application held the store, and the compaction's dry run predicted other figures than the
/// run (the tables and the void the run writes were left out: 65,350 bytes and 333 records
/// against 61,301 and 334 on the demo); `compact -q` printed a line per segment. Now the dry
/// runs read the store beside its writer and say what the run then does, figure for figure.
/// Waits until no process holds the lock of the store in `store`. A writer of this process
/// releases it at `close`, but a child process another test of this binary spawns at that
/// moment holds a copy of the lock file's descriptor from its fork until its exec (a lock is
/// shared by the copies of a descriptor): seen once in CI, `compact` then found the store
/// locked. Bounded: a lock still held after this many looks is a real one, and the command
/// after it says so.
fn until_unlocked(store: &Path) {
    for _ in 0..100_000 {
        let Ok(file) = std::fs::File::open(store.join("LOCK")) else {
            return;
        };
        if file.try_lock().is_ok() {
            return;
        }
        std::thread::yield_now();
    }
}

#[test]
fn regression_dry_runs_go_beside_a_writer_and_predict_the_run() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    ok(&["delete", "store", "session-0c9d4078-0001"], dir.path());
    let writer = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let plan = ok(&["compact", "store", "--dry-run", "--json"], dir.path());
    let older = ok(
        &[
            "delete",
            "store",
            "--older-than",
            "1s",
            "--dry-run",
            "--json",
        ],
        dir.path(),
    );
    assert!(older.contains("\"dryRun\":true"), "{older}");
    assert!(older.contains("session-2feb6e95-0000"), "{older}");
    // Refused for real while the writer holds it.
    fails(&["compact", "store"], dir.path(), 5);
    writer.close().unwrap();
    drop(writer);
    until_unlocked(&dir.path().join("store"));
    let done = ok(&["compact", "store", "--json"], dir.path());
    assert_eq!(
        plan.replace("\"dryRun\":true", "\"dryRun\":false"),
        done,
        "the dry run's figures are the run's"
    );
    assert!(done.contains("\"recordsDropped\":334"), "{done}");
    // Quiet: nothing on stdout, nothing on stderr.
    ok(&["delete", "store", "session-2e7deb97-0002"], dir.path());
    let out = sessdb(&["compact", "store", "-q"], dir.path());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}

/// Before: `stats` read the whole log (seconds and a GB of memory on a large store) and its
/// "log bytes" was the log's end position, unchanged by a compaction that freed much. Now it
/// reads metadata only, says the bytes on disk, names the position a position, and reads the
/// log for the live and dead bytes only with `--space`.
#[test]
fn regression_stats_reads_metadata_and_says_the_bytes_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    let files = |sub: &str| -> u64 {
        std::fs::read_dir(dir.path().join("store").join(sub))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum()
    };
    let field = |text: &str, key: &str| json(text).get(key).unwrap().as_f64().unwrap() as u64;
    let before = ok(&["stats", "store", "--json"], dir.path());
    assert_eq!(
        field(&before, "diskBytes"),
        files("segments") + files("checkpoints"),
        "{before}"
    );
    assert_eq!(field(&before, "segmentBytes"), files("segments"));
    assert!(
        json(&before).get("liveBytes").unwrap().bytes() == b"null",
        "{before}"
    );
    let spaced = ok(&["stats", "store", "--json", "--space"], dir.path());
    assert!(field(&spaced, "liveBytes") > 0, "{spaced}");
    ok(&["delete", "store", "session-0c9d4078-0001"], dir.path());
    ok(&["compact", "store", "-q"], dir.path());
    let after = ok(&["stats", "store", "--json"], dir.path());
    assert!(
        field(&after, "diskBytes") + 40_000 < field(&before, "diskBytes"),
        "{before}\n{after}"
    );
    assert!(field(&after, "endLsn") >= field(&before, "endLsn"));
    let human = ok(&["stats", "store"], dir.path());
    assert!(
        human.contains("on disk") && human.contains("log end position"),
        "{human}"
    );
}

/// Found trying the CLI as a new user would: `import --dry-run --json` printed text; a usage
/// error under `--json` printed no JSON; `tail -f … | head -1` waited for the next event
/// before it noticed the closed pipe; `demo` refusing to overwrite exited 1 where `export`
/// exits 4; `export --help` left out `left`; `pull --help` had a stray space.
#[test]
fn regression_json_usage_errors_a_closed_follow_and_help_texts() {
    let dir = tempfile::tempdir().unwrap();
    demo(dir.path());
    ok(
        &["export", "store", "--jsonl", "out", "--quiet"],
        dir.path(),
    );
    let planned = ok(
        &["import", "fresh", "--jsonl", "out", "--dry-run", "--json"],
        dir.path(),
    );
    let plan = json(&planned);
    assert_eq!(plan.get("dryRun").unwrap().bytes(), b"true", "{planned}");
    assert_eq!(plan.get("sessions").unwrap().elements().count(), 5);
    assert!(!dir.path().join("fresh").exists());
    // A usage error under --json: JSON on stdout, clap's text on stderr, exit 2.
    let out = sessdb(&["ls", "store", "--json", "--sort", "bogus"], dir.path());
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8(out.stdout).unwrap();
    let err = json(&text);
    let body = err.get("error").unwrap();
    assert_eq!(
        body.get("code").unwrap().as_str().unwrap(),
        "USAGE",
        "{text}"
    );
    assert!(
        body.get("message")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("bogus"),
        "{text}"
    );
    assert!(!out.stderr.is_empty());
    // One refusal to overwrite, one exit code.
    std::fs::create_dir(dir.path().join("occupied")).unwrap();
    std::fs::write(dir.path().join("occupied/notes.txt"), b"mine").unwrap();
    fails(&["demo", "occupied"], dir.path(), 4);
    let help = ok(&["export", "--help"], dir.path());
    assert!(help.contains("\"left\""), "{help}");
    let help = ok(&["pull", "--help"], dir.path());
    assert!(
        help.contains("\"pulled\"|\"extended\"|\"present\""),
        "{help}"
    );
    // `tail -f` whose reader goes: it ends at once, not at the next event.
    let mut child = Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(["tail", "-f", "-n", "1", "store", "session-2feb6e95-0000"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    drop(stdout);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait().unwrap();
        tx.send(status).unwrap();
    });
    // The wait only tells a hang (no event ever comes) from an exit.
    let status = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("tail -f went on after its reader left");
    waiter.join().unwrap();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn backup_copies_a_store_into_a_new_directory_and_never_over_one() {
    let dir = tempfile::tempdir().unwrap();
    let ids = demo(dir.path());
    let out = ok(&["backup", "store", "copy", "--json"], dir.path());
    let r = json(&out);
    assert_eq!(
        r.get("sessions").unwrap().as_i64().unwrap(),
        ids.len() as i64,
        "{out}"
    );
    assert!(r.get("records").unwrap().as_i64().unwrap() > 0, "{out}");
    // The copy lists and verifies as the store does.
    assert_eq!(
        ok(&["ls", "copy", "--json"], dir.path()),
        ok(&["ls", "store", "--json"], dir.path())
    );
    assert!(ok(&["verify", "copy"], dir.path()).contains("ok: no corruption"));
    // Never into a directory that is there: refused, the copy left as it is.
    let err = fails(&["backup", "store", "copy"], dir.path(), 1);
    assert!(err.contains("there already"), "{err}");
    assert!(ok(&["verify", "copy"], dir.path()).contains("ok: no corruption"));
}
