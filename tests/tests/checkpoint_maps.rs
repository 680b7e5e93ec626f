//! An open maps the newest file of the checkpoint chain it applies, not every file of the
//! chain: an earlier file is mapped when an entry, page or run in it is first read, and what
//! is read through it is what the store holds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sessdb::storage::{FileView, MemStorage, StorageFile};
use sessdb::{Clock, Draft, LogType, SessionHeader, Store, StoreOptions};

/// Memory storage that counts, per path, how many times a file's bytes were mapped.
#[derive(Debug, Clone, Default)]
struct CountingViews {
    inner: Arc<MemStorage>,
    views: Arc<Mutex<BTreeMap<String, usize>>>,
}

#[derive(Debug)]
struct CountedFile {
    inner: Box<dyn StorageFile>,
    path: String,
    views: Arc<Mutex<BTreeMap<String, usize>>>,
}

sessdb_tests::delegate_storage!(CountingViews, |this, path, file| CountedFile {
    inner: file,
    path: path.to_owned(),
    views: Arc::clone(&this.views),
});

impl StorageFile for CountedFile {
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.inner.sync_data()
    }
    fn view(&self) -> std::io::Result<FileView> {
        *self
            .views
            .lock()
            .unwrap()
            .entry(self.path.clone())
            .or_default() += 1;
        self.inner.view()
    }
    fn preallocate(&self, len: u64) -> std::io::Result<bool> {
        self.inner.preallocate(len)
    }
}

impl CountingViews {
    /// The checkpoint files mapped so far, and how often each.
    fn checkpoint_views(&self) -> BTreeMap<String, usize> {
        let views = self.views.lock().unwrap();
        views
            .iter()
            .filter(|(p, _)| p.starts_with("checkpoints/"))
            .map(|(p, n)| (p.clone(), *n))
            .collect()
    }
}

fn options() -> StoreOptions {
    StoreOptions::default()
        .with_clock(Clock::fixed(1_000))
        .with_checkpoint_merge_every(4)
}

#[test]
fn an_open_maps_the_newest_file_of_its_chain_and_an_earlier_one_when_first_read() {
    let storage = CountingViews::default();
    let store = Store::open_with(Arc::new(storage.clone()), options()).unwrap();
    let note = LogType::new("plugin/note").unwrap();
    // Three checkpoints: a full one holding s0, deltas holding s1 and s2 — each session's
    // entry stays in the file that first wrote it.
    for round in 0..3 {
        let id = format!("s{round}");
        store
            .create_session(SessionHeader::new(id.as_str(), 0), Vec::new())
            .unwrap();
        for k in 0..5 {
            let data = format!("{{\"round\":{round},\"k\":{k}}}");
            store
                .append(&id, Draft::log(&note, data).ignorable())
                .unwrap();
        }
        let info = store.checkpoint().unwrap().unwrap();
        assert_eq!(info.generation, round + 1);
        assert_eq!(info.full, round == 0);
    }
    let before = sessdb_tests::dump_store(&store);
    drop(store);
    storage.views.lock().unwrap().clear();

    let reader = Store::open_read_only_with(Arc::new(storage.clone()), options()).unwrap();
    assert_eq!(reader.open_report().checkpoint, Some(3));
    let newest = "checkpoints/00000000000000000003.ckpt".to_owned();
    assert_eq!(
        storage.checkpoint_views(),
        BTreeMap::from([(newest.clone(), 1)]),
        "the open maps the newest file of the chain alone"
    );
    // s0's entry is in the full checkpoint, generation 1: read, it is mapped then, once.
    assert_eq!(reader.events("s0", ..).unwrap().len(), 6);
    let oldest = "checkpoints/00000000000000000001.ckpt".to_owned();
    assert_eq!(
        storage.checkpoint_views(),
        BTreeMap::from([(oldest.clone(), 1), (newest.clone(), 1)]),
    );
    assert_eq!(sessdb_tests::dump_store(&reader), before);
    let all = storage.checkpoint_views();
    assert_eq!(
        all.len(),
        3,
        "every file of the chain read by the dump: {all:?}"
    );
    assert!(all.values().all(|&n| n == 1), "each mapped once: {all:?}");
}
