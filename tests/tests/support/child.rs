//! What the test files that run themselves again as a child process share (a child's
//! working directory and limits are its own): small segments, notes that fill them, a store
//! directory's bytes and the child's run.

#![allow(dead_code, reason = "each test file uses the helpers it needs")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::path::Path;
use std::process::Command;

use sessdb::{Draft, LogType, StoreOptions};

/// Small segments: a few notes fill one.
pub fn options() -> StoreOptions {
    StoreOptions::default()
        .with_segment_bytes_max(8 << 10)
        .with_preallocate_bytes(0)
}

/// An ignorable `plugin/note` of about 2 KB, numbered `i`.
pub fn note(i: u64) -> Draft {
    let text = format!("{i:04}").repeat(500);
    Draft::log(
        LogType::new("plugin/note").unwrap(),
        format!("{{\"i\":{i},\"text\":\"{text}\"}}").into_bytes(),
    )
    .ignorable()
}

/// Every file of the store in `dir`, with its bytes.
pub fn image(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for sub in ["segments", "checkpoints"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let entry = entry.unwrap();
            out.push((
                format!("{sub}/{}", entry.file_name().to_string_lossy()),
                std::fs::read(entry.path()).unwrap(),
            ));
        }
    }
    out.sort();
    out
}

/// Runs `test` of this test binary again as a child, `env` set to `value`; returns its
/// stdout, after asserting the child succeeded.
pub fn run_child(test: &str, env: &str, value: &Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(env, value)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the child failed ({}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// One test of the binary at a time, held for the test's whole body. A child process
/// spawned by one test keeps a copy of every descriptor the process holds until its exec,
/// so beside two busy loops another test's store was found locked after its close (as
/// `kill_recovery.rs` found first).
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
