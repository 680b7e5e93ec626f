//! What the store test files share: the options, opening (and salvaging), a whole-store dump,
//! a small workload, the last segment's bytes, plain notes and how often a text occurs in
//! the store's files.

#![allow(dead_code, reason = "each test file uses the helpers it needs")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::{Clock, Draft, LogType, SessionHeader, Store, StoreOptions};
use sessdb_tests::Backend;
use sessdb_workload::{WorkloadSpec, generate};

pub fn opts() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(1_000))
}

pub fn open(storage: &Backend) -> Store {
    Store::open_with(storage.storage(), opts()).unwrap()
}

pub fn open_salvaging(storage: &Backend) -> Store {
    let options = opts().with_salvage(true);
    Store::open_with(storage.storage(), options).unwrap()
}

/// Every session's events as JSONL lines plus its state, for whole-store comparisons.
pub fn dump(store: &Store) -> sessdb_tests::StoreDump {
    sessdb_tests::dump_store(store)
}

pub fn workload(store: &mut Store) -> sessdb_workload::WorkloadSummary {
    generate(
        &WorkloadSpec {
            sessions: 3,
            max_turns: 3,
            max_chunks: 6,
            ..WorkloadSpec::default()
        },
        store,
    )
    .unwrap()
}

/// The paths of the store's segment files, oldest first.
pub fn segment_paths(storage: &Backend) -> Vec<String> {
    storage
        .files()
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.starts_with("segments/"))
        .collect()
}

/// The segment files and the byte offsets where each of the last segment's records starts.
pub fn last_segment(storage: &Backend) -> (String, Vec<u8>) {
    storage
        .files()
        .into_iter()
        .rfind(|(p, _)| p.starts_with("segments/"))
        .unwrap()
}

/// Appends one ignorable `plugin/note` event whose data carries `text`.
pub fn note(store: &Store, id: &str, text: &str) {
    let data = format!("{{\"note\":\"{text}\"}}");
    store
        .append(
            id,
            Draft::log(LogType::new("plugin/note").unwrap(), data.as_bytes()).ignorable(),
        )
        .unwrap();
}

/// Creates session `id` with `n` notes, each carrying `marker`.
pub fn session_with(store: &Store, id: &str, marker: &str, n: usize) {
    store
        .create_session(SessionHeader::new(id, 0), Vec::new())
        .unwrap();
    for i in 0..n {
        note(store, id, &format!("{marker} {i}"));
    }
}

/// How many times `needle` occurs in the store's files.
pub fn occurrences(storage: &Backend, needle: &str) -> usize {
    storage
        .files()
        .iter()
        .map(|(_, b)| {
            b.windows(needle.len())
                .filter(|w| *w == needle.as_bytes())
                .count()
        })
        .sum()
}
