//! Real process kills. The test re-runs its own binary as a child that appends to a store
//! under `Durability::Sync` and prints every acknowledged seq; the parent kills it (SIGKILL)
//! after a varying number of acknowledgements — sometimes while the child is still opening
//! the store — reopens the store and checks that every acknowledged event is there and that
//! the session is a prefix of what the child would have written. A child that exits in any
//! other way than the planned kill fails the test. A second test does the same with the
//! space preallocated ahead, small windows and segments, `Buffered` and `Sync` in turn: the
//! kills then land while windows are retired, zero-fills run ahead on the helper thread and
//! segments roll.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use sessdb::{
    Clock, Draft, Durability, LogType, SessionHeader, Store, StoreOptions, SurfaceIntent,
    SurfaceType,
};
use sessdb_workload::payload as p;

const CHILD_ENV: &str = "SESSDB_KILL_CHILD_STORE";
/// The child's options: unset for `options()`, `buffered` or `sync` for `preallocated(..)`.
const MODE_ENV: &str = "SESSDB_KILL_CHILD_MODE";

fn options() -> StoreOptions {
    StoreOptions::tiny()
        .with_durability(Durability::Sync)
        .with_clock(Clock::fixed(7))
        .with_segment_bytes_max(8192)
        .with_checkpoint_interval_bytes(16_384)
}

/// Space allocated 16 KiB ahead (mapped windows under `Buffered`, zero-filled on the helper
/// under `Sync`), 64 KiB segments.
fn preallocated(durability: Durability) -> StoreOptions {
    StoreOptions::default()
        .with_durability(durability)
        .with_clock(Clock::fixed(7))
        .with_segment_bytes_max(64 << 10)
        .with_preallocate_bytes(16 << 10)
        .with_checkpoint_interval_bytes(128 << 10)
}

fn mode_options(mode: Option<&str>) -> StoreOptions {
    match mode {
        Some("buffered") => preallocated(Durability::Buffered),
        Some("sync") => preallocated(Durability::Sync),
        _ => options(),
    }
}

/// The i-th draft the child appends: a deterministic stream of turns.
fn draft(i: u64) -> Draft {
    let turn = i / 3 + 1;
    match i % 3 {
        0 => Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
        1 => Draft::surface(
            SurfaceType::UserMessage,
            p::user_message(&format!("u{i}"), "user", "kill me maybe").into_bytes(),
            SurfaceIntent::append(),
        ),
        _ => Draft::log(&LogType::TURN_END, p::turn_end(turn).into_bytes()),
    }
}

/// The child: open (creating), append forever, print each acknowledged seq.
fn child(dir: &Path) -> ! {
    let mode = std::env::var(MODE_ENV).ok();
    let store = Store::open(dir, mode_options(mode.as_deref())).expect("child open");
    if store.session_len("k").is_err() {
        store
            .create_session(SessionHeader::new("k", 0), Vec::new())
            .expect("create");
        println!("created");
    }
    let mut out = std::io::stdout().lock();
    loop {
        let next = store.session_len("k").expect("len");
        // Seq `next` holds draft `next - 1` (seq 0 is the end-seed marker).
        let seq = store.append("k", draft(next - 1)).expect("append");
        use std::io::Write;
        writeln!(out, "{seq}").expect("stdout");
        out.flush().expect("flush");
    }
}

#[test]
fn killed_writers_lose_no_acknowledged_event() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&dir));
    }
    // Kill after 0 (during open), then a varying number of acknowledgements.
    let kills = [0u64, 1, 37, 5, 120, 0, 64, 250, 3, 90].map(|k| (k, None));
    let acked = kill_rounds("killed_writers_lose_no_acknowledged_event", &kills);
    assert!(acked > 300, "the children made progress: {acked}");
}

#[test]
fn killed_writers_with_space_preallocated_lose_no_acknowledged_event() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&dir));
    }
    // Each event is ~100 bytes: a few hundred acknowledgements cross a 16 KiB window, a
    // few thousand a 64 KiB segment.
    let kills = [
        (0, "sync"),
        (900, "buffered"),
        (2500, "sync"),
        (170, "buffered"),
        (4000, "buffered"),
        (1300, "sync"),
        (333, "sync"),
        (6000, "buffered"),
    ]
    .map(|(k, m)| (k, Some(m)));
    let acked = kill_rounds(
        "killed_writers_with_space_preallocated_lose_no_acknowledged_event",
        &kills,
    );
    assert!(acked > 10_000, "the children made progress: {acked}");
}

/// Runs the kill rounds of `test` (its own name: the child re-runs it), each `(kill after
/// this many acknowledgements, the child's mode)`, reopening and checking after each;
/// returns how many events were acknowledged in all.
fn kill_rounds(test: &str, kills: &[(u64, Option<&str>)]) -> u64 {
    // One test's rounds at a time. Regression (red once beside two busy loops): a child the
    // other test spawned while this one's reopened store held the lock file kept a copy of
    // that descriptor until its exec, so this test's next child found the store locked.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let mut acked: u64 = 0;
    for (round, &(kill_after, mode)) in kills.iter().enumerate() {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path());
        if let Some(mode) = mode {
            command.env(MODE_ENV, mode);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < kill_after {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Ok(seq) = line.trim().parse::<u64>() {
                        acked = acked.max(seq + 1);
                        seen += 1;
                    }
                }
                _ => {
                    let status = child.wait().unwrap();
                    let mut err = String::new();
                    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err)
                        .unwrap();
                    panic!("round {round}: the child ended on its own ({status}): {err}");
                }
            }
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        // Death by SIGKILL and nothing else: a child that panicked or exited on its own
        // would also be "not success".
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9),
            "round {round}: the child must die by the kill, not {status}"
        );
        // Reopen: every acknowledged event is there, and the session is a prefix.
        let store = Store::open(dir.path(), mode_options(mode))
            .unwrap_or_else(|e| panic!("round {round}: reopen: {e}"));
        let len = store.session_len("k").unwrap_or(0);
        assert!(
            len >= acked,
            "round {round}: {len} events, {acked} acknowledged"
        );
        let events = if len > 0 {
            store.events("k", 1..len).unwrap()
        } else {
            Vec::new()
        };
        for (i, e) in events.iter().enumerate() {
            let expected = draft(i as u64).into_event(i as u64 + 1, 7);
            assert_eq!(e, &expected, "round {round}: seq {} differs", i + 1);
        }
        store.close().unwrap();
        let report = sessdb::store::verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(
            dir.path(),
        )))
        .unwrap();
        assert!(report.ok(), "round {round}: {:?}", report.problems);
    }
    acked
}
