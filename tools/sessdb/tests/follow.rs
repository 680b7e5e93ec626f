//! `sessdb tail -f` beside other processes: a buffered `sessdb stress` writer crossing many
//! write windows and rolls, a `sessdb repair --salvage` rewriting the log under it, and a
//! writer deleting sessions while its background compaction writes segments again. A
//! follower never reports damage that is not there (regressions of two failures found under
//! load: "damaged record followed by data" beside a healthy writer, "a stored event is
//! refused" across a salvage) and misses no event.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use sessdb::{Draft, Event, Limits, LogType, Store, StoreOptions};

fn sessdb(args: &[&str], cwd: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sessdb"));
    c.args(args).current_dir(cwd).stdin(Stdio::null());
    c
}

fn follow(cwd: &Path, session: &str) -> Child {
    sessdb(&["tail", "store", session, "-n", "1", "-f"], cwd)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Stops a follower that must still be running; returns what it printed on stderr.
fn stop(mut child: Child) -> String {
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    let _ = child.wait();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(still_running, "the follower ended by itself: {err}");
    err
}

#[test]
fn regression_tail_follow_beside_a_buffered_stress_writer_reports_no_damage() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = sessdb(
        &[
            "stress",
            "store",
            "--seconds",
            "4",
            "--threads",
            "2",
            "--quiet",
        ],
        dir.path(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut acks = BufReader::new(writer.stdout.take().unwrap()).lines();
    let first = acks.next().unwrap().unwrap();
    let session = first.split(' ').nth(1).unwrap().to_owned();
    // Several followers: each reads the whole log's new records at every poll.
    let mut followers: Vec<_> = (0..4).map(|_| follow(dir.path(), &session)).collect();
    let printed: Vec<_> = followers
        .iter_mut()
        .map(|f| {
            let out = f.stdout.take().unwrap();
            std::thread::spawn(move || BufReader::new(out).lines().count())
        })
        .collect();
    // Drain the writer's acks until it ends (its deadline): the followers read beside it all
    // that time.
    let acked = acks.count();
    assert!(writer.wait().unwrap().success());
    assert!(acked > 1000, "{acked} acks");
    for f in followers {
        let err = stop(f);
        assert!(err.is_empty(), "a follower reported: {err}");
    }
    for p in printed {
        assert!(p.join().unwrap() >= 1);
    }
}

#[test]
fn regression_tail_follow_across_a_salvage_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let status = sessdb(&["demo", "store", "--quiet"], dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    // Damage 4 bytes of a record in the middle of the log.
    let seg = dir.path().join("store/segments/00000000000000000000.seg");
    let mut bytes = std::fs::read(&seg).unwrap();
    for b in &mut bytes[56_000..56_004] {
        *b ^= 0x5a;
    }
    std::fs::write(&seg, bytes).unwrap();
    let session = "session-2e7deb97-0002";
    let mut follower = follow(dir.path(), session);
    let mut lines = BufReader::new(follower.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().contains("\"type\""));
    let out = sessdb(&["repair", "store", "--salvage"], dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A writer goes on after the salvage; the follower prints its event.
    let store = Store::open(dir.path().join("store"), StoreOptions::default()).unwrap();
    let seq = store
        .append(
            session,
            Draft::log(
                LogType::new("plugin/note").unwrap(),
                &br#"{"after":"salvage"}"#[..],
            )
            .ignorable(),
        )
        .unwrap();
    store.close().unwrap();
    let next = lines
        .next()
        .expect("the follower ended instead of printing")
        .unwrap();
    let e = Event::from_jsonl(next.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(e.seq(), seq);
    let err = stop(follower);
    assert!(err.is_empty(), "the follower reported: {err}");
}

/// The `seq` of a printed event line.
fn seq_of(line: &str) -> u64 {
    Event::from_jsonl(line.as_bytes(), &Limits::default())
        .unwrap_or_else(|e| panic!("{e}: {line}"))
        .seq()
}

#[test]
fn followers_and_readers_beside_background_compaction_see_no_damage_and_miss_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = sessdb(
        &[
            "stress",
            "store",
            "--seconds",
            "4",
            "--threads",
            "2",
            "--churn",
            "--segment-bytes",
            "65536",
        ],
        dir.path(),
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut acks = BufReader::new(writer.stdout.take().unwrap()).lines();
    // The first round's sessions stay: follow the first one from its start.
    let first = acks.next().unwrap().unwrap();
    let session = first.split(' ').nth(1).unwrap().to_owned();
    let mut followers: Vec<_> = (0..3)
        .map(|_| {
            sessdb(
                &["tail", "store", &session, "-n", "100000", "-f"],
                dir.path(),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    let printed: Vec<_> = followers
        .iter_mut()
        .map(|f| {
            let out = f.stdout.take().unwrap();
            std::thread::spawn(move || {
                BufReader::new(out)
                    .lines()
                    .map(|l| seq_of(&l.unwrap()))
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let acks = std::thread::spawn(move || {
        let (mut acked, mut deleted) = (0u64, 0u64);
        for line in acks {
            let line = line.unwrap();
            if line.starts_with("deleted ") {
                deleted += 1;
            } else if line.starts_with("ack ") {
                acked += 1;
            }
        }
        (acked, deleted)
    });
    // Read-only openers beside it the whole time: each opens the store, lists it and reads
    // the whole log (stats' live and dead bytes); none may see damage.
    let mut opens = 0;
    while writer.try_wait().unwrap().is_none() {
        for args in [
            &["ls", "store", "--json"][..],
            &["stats", "store", "--json"],
        ] {
            let out = sessdb(args, dir.path()).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{args:?} beside the compaction: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            opens += 1;
        }
    }
    let mut err = String::new();
    writer
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(writer.wait().unwrap().success(), "{err}");
    let (acked, deleted) = acks.join().unwrap();
    assert!(
        acked > 1000 && deleted > 10,
        "{acked} acks, {deleted} deletions"
    );
    // The background compaction did run beside them.
    assert!(
        err.contains("background compaction(s)") && !err.contains(" 0 background"),
        "{err}"
    );
    assert!(opens >= 2, "{opens}");
    let store = Store::open_read_only(dir.path().join("store"), StoreOptions::default()).unwrap();
    let last = store.session_len(&session).unwrap() - 1;
    drop(store);
    for (f, p) in followers.into_iter().zip(printed) {
        let err = stop(f);
        assert!(err.is_empty(), "a follower reported: {err}");
        let seqs = p.join().unwrap();
        // Every event once, in order, to the session's last.
        assert_eq!(
            seqs,
            (0..=last).collect::<Vec<_>>(),
            "a follower missed or repeated"
        );
    }
}
