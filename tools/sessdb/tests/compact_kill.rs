//! `sessdb compact` under SIGKILL: a store of many 16 KiB segments, two thirds of its sessions
//! deleted (one of them the parent of a live fork), is compacted by the real binary (which
//! then merges what is left into fewer files), killed
//! at moments spread over a whole compaction's length (the delay only picks the moment; no
//! result depends on it), then reopened: every live session is what it was, no deleted one
//! is back, `verify` is clean, and a compaction after it erases what is left. Each round
//! starts from a copy of the same store. `SESSDB_COMPACT_KILLS` sets the number of rounds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use sessdb::store::verify;
use sessdb::{Clock, Draft, ForkSpec, LogType, SessionHeader, Store, StoreOptions};
use sessdb_tests::dump_store;

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(5))
        .with_segment_bytes_max(16 << 10)
        .with_checkpoint_interval_bytes(256 << 10)
        .with_compaction(None)
}

/// 36 sessions of 60 notes of 200 bytes, interleaved; every session but each third deleted;
/// a fork of a deleted parent.
fn build(dir: &Path) {
    let store = Store::open(dir, options()).unwrap();
    let t = LogType::new("plugin/note").unwrap();
    for i in 0..36 {
        store
            .create_session(SessionHeader::new(format!("s{i:02}"), 0), Vec::new())
            .unwrap();
    }
    for n in 0..60 {
        for i in 0..36 {
            let data = format!(
                "{{\"note\":\"text-of-s{i:02}-{n:03}-{}\"}}",
                "x".repeat(160)
            );
            store
                .append(
                    &format!("s{i:02}"),
                    Draft::log(t.clone(), data.as_bytes()).ignorable(),
                )
                .unwrap();
        }
    }
    let spec = ForkSpec::default().with_child_id("fork-of-s01");
    store.fork("s01", spec).unwrap();
    for i in 0..36 {
        if i % 3 != 0 {
            store.delete_session(&format!("s{i:02}")).unwrap();
        }
    }
    store.close().unwrap();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// How often `needle` occurs in the store's segment and checkpoint files.
fn occurrences(dir: &Path, needle: &str) -> usize {
    ["segments", "checkpoints"]
        .iter()
        .filter_map(|d| std::fs::read_dir(dir.join(d)).ok())
        .flatten()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .map(|b| {
            b.windows(needle.len())
                .filter(|w| *w == needle.as_bytes())
                .count()
        })
        .sum()
}

/// The pristine store's segment files that are gone or changed in `dir` (written again, or
/// merged into a neighbour and removed).
fn changed_segments(pristine: &Path, dir: &Path) -> usize {
    std::fs::read_dir(pristine.join("segments"))
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| {
            std::fs::read(dir.join("segments").join(e.file_name())).ok()
                != std::fs::read(e.path()).ok()
        })
        .count()
}

fn compact(dir: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_sessdb"))
        .args(["compact", &dir.display().to_string(), "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn compact_killed_by_sigkill_loses_nothing_and_brings_nothing_back() {
    let rounds: u32 = std::env::var("SESSDB_COMPACT_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let tmp = tempfile::tempdir().unwrap();
    let pristine = tmp.path().join("pristine");
    build(&pristine);
    let expected = {
        let store = Store::open_read_only(&pristine, options()).unwrap();
        dump_store(&store)
    };
    assert_eq!(expected.len(), 13, "12 live roots and the fork");
    assert!(occurrences(&pristine, "text-of-s02-") >= 60);
    // One whole compaction, timed: the kills are spread over its length.
    let full = tmp.path().join("full");
    copy_dir(&pristine, &full);
    let started = Instant::now();
    assert!(compact(&full).wait().unwrap().success());
    let whole = started.elapsed();
    let all_changed = changed_segments(&pristine, &full);
    assert!(all_changed > 10, "{all_changed} segments written again");
    let (mut partial, mut untouched, mut finished) = (0, 0, 0);
    for round in 0..rounds {
        let dir = tmp.path().join(format!("round-{round}"));
        copy_dir(&pristine, &dir);
        let mut child = compact(&dir);
        // Spread over 0..1.2 of a whole compaction (the process start included).
        let at = whole.mul_f64(1.2 * f64::from(round) / f64::from(rounds.max(1)));
        std::thread::sleep(at);
        let _ = child.kill();
        let status = child.wait().unwrap();
        match changed_segments(&pristine, &dir) {
            0 => untouched += 1,
            n if status.signal() == Some(9) && n < all_changed => partial += 1,
            _ => finished += 1,
        }
        let store = Store::open(&dir, options())
            .unwrap_or_else(|e| panic!("round {round}: reopen after the kill: {e}"));
        assert_eq!(
            dump_store(&store),
            expected,
            "round {round}: the live sessions changed"
        );
        store.close().unwrap();
        drop(store);
        let replayed = Store::open(&dir, options().with_ignore_checkpoints(true)).unwrap();
        assert_eq!(
            dump_store(&replayed),
            expected,
            "round {round}: full replay"
        );
        drop(replayed);
        let report = verify(std::sync::Arc::new(sessdb::storage::FsStorage::new(&dir))).unwrap();
        assert!(report.ok(), "round {round}: verify: {report:?}");
        // Finishing the compaction leaves no byte of a deleted session that no live one reads.
        let store = Store::open(&dir, options()).unwrap();
        store.compact().unwrap();
        assert_eq!(dump_store(&store), expected);
        store.close().unwrap();
        assert_eq!(occurrences(&dir, "text-of-s02-"), 0, "round {round}");
        assert!(occurrences(&dir, "text-of-s03-") >= 60);
        std::fs::remove_dir_all(&dir).unwrap();
    }
    eprintln!(
        "{rounds} SIGKILLs of sessdb compact (a whole one {whole:?}, {all_changed} segments): \
         {partial} mid-compaction, {untouched} before its first rename, {finished} after its last; \
         live sessions identical, none deleted back, verify clean every time"
    );
}
