//! `sessdb stress` under SIGKILL: a child appends a realistic workload (turns, chunks, tool
//! calls, replaces, forks) and prints `ack <session> <seq>` after each acknowledged write; the
//! parent kills it with SIGKILL after a varying number of acks — sometimes before the first,
//! while the store is still opening — reopens the store and checks that every acknowledged
//! write is there, reads each acknowledged session back whole, and that a full verify finds
//! nothing. Rounds alternate `--sync` and
//! buffered, one and two threads; every third round runs `--churn` on 64 KiB segments (each
//! round's sessions deleted when it ends, the background compaction writing segments again
//! beside the appends): a session whose deletion was acknowledged must stay deleted; every
//! other pair of rounds (`--sync` and buffered) takes a checkpoint every 64 KiB on the checkpointer's thread;
//! a quarter of the rounds, all buffered, append through `try_append_events` first
//! (`--try-first`: written at once where nothing waits, as the Node binding appends).
//! `SESSDB_KILL_ROUNDS` sets the number of rounds (the
//! recorded run in docs/RELIABILITY.md used 500).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use sessdb::store::verify;
use sessdb::{Store, StoreOptions};

#[test]
fn stress_killed_by_sigkill_loses_no_acknowledged_write() {
    let rounds: u64 = std::env::var("SESSDB_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("store");
    // The highest acknowledged seq of every session, over all rounds.
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    // Sessions whose deletion was acknowledged.
    let mut gone: Vec<String> = Vec::new();
    let mut total = 0u64;
    for round in 0..rounds {
        let sync = round % 2 == 0;
        let threads = if round % 4 < 2 { "1" } else { "2" };
        let kill_after = if round % 3 == 2 {
            // Past a few rounds' deletions, so kills land in background compactions.
            [1_500u64, 4_000, 8_000][(round / 3 % 3) as usize]
        } else {
            [0u64, 1, 7, 40, 150, 3, 90, 400][(round % 8) as usize]
        };
        let mut args = vec![
            "stress".to_owned(),
            store_dir.display().to_string(),
            "--seconds".into(),
            "600".into(),
            "--threads".into(),
            threads.into(),
            "--seed".into(),
            round.to_string(),
        ];
        if sync {
            args.push("--sync".into());
        }
        if round % 3 == 2 {
            args.extend(["--churn".into(), "--segment-bytes".into(), "65536".into()]);
        }
        if round / 2 % 2 == 1 {
            // Checkpoints every 64 KiB, taken by the checkpointer's thread: kills land in them.
            args.extend(["--checkpoint-bytes".into(), "65536".into()]);
        }
        if round % 8 == 1 || round % 8 == 3 {
            args.push("--try-first".into());
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_sessdb"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < kill_after {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("round {round}: the child ended on its own"))
                .unwrap();
            let mut parts = line.split(' ');
            let what = parts.next();
            if what == Some("deleting") {
                // Begun: after a kill it may or may not have happened.
                acked.remove(parts.next().unwrap());
                seen += 1;
                continue;
            }
            if what == Some("deleted") {
                let session = parts.next().unwrap().to_owned();
                acked.remove(&session);
                gone.push(session);
                seen += 1;
                continue;
            }
            assert_eq!(what, Some("ack"), "{line}");
            let session = parts.next().unwrap().to_owned();
            let seq: u64 = parts.next().unwrap().parse().unwrap();
            let e = acked.entry(session).or_insert(0);
            *e = (*e).max(seq);
            seen += 1;
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        // What it printed before it died and was not read: a deletion it had begun may have
        // happened (its session need not be there), one it finished must have.
        for line in lines.map_while(Result::ok) {
            let mut parts = line.split(' ');
            match (parts.next(), parts.next()) {
                (Some("deleting"), Some(session)) => {
                    acked.remove(session);
                }
                (Some("deleted"), Some(session)) => {
                    acked.remove(session);
                    gone.push(session.to_owned());
                }
                _ => {}
            }
        }
        assert_eq!(
            status.signal(),
            Some(9),
            "round {round}: the child must die by SIGKILL, not {status}"
        );
        total += seen;
        if !store_dir.join("segments").is_dir() {
            assert_eq!(seen, 0, "round {round}: acks without a store");
            continue;
        }
        let store = Store::open(&store_dir, StoreOptions::default())
            .unwrap_or_else(|e| panic!("round {round}: reopen: {e}"));
        for (session, seq) in &acked {
            let len = store
                .session_len(session)
                .unwrap_or_else(|e| panic!("round {round}: {session} acknowledged: {e}"));
            assert!(
                len > *seq,
                "round {round}: {session} acknowledged seq {seq} but holds {len} events"
            );
            // Read back whole: through the older segments a writable open judges at their
            // first use (DESIGN.md §3.6), as well as the newest.
            let events = store
                .events(session, ..)
                .unwrap_or_else(|e| panic!("round {round}: {session} read: {e}"));
            assert_eq!(events.len() as u64, len, "round {round}: {session}");
        }
        for session in &gone {
            assert!(
                store.info(session).is_none(),
                "round {round}: {session}'s deletion was acknowledged, yet it is back"
            );
        }
        store.close().unwrap();
        drop(store);
        let storage = std::sync::Arc::new(sessdb::storage::FsStorage::new(&store_dir));
        let report = verify(storage).unwrap();
        assert!(report.ok(), "round {round}: verify: {report:?}");
    }
    assert!(total > 0, "the children acknowledged writes");
    eprintln!(
        "{rounds} SIGKILLs: {total} acknowledged writes over {} sessions, 0 lost; {} acknowledged deletions, none back",
        acked.len(),
        gone.len()
    );
    assert!(!gone.is_empty(), "the churn rounds deleted sessions");
}
