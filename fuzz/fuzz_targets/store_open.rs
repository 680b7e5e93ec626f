//! Recovery on arbitrary files: a segment and a checkpoint of arbitrary bytes. Open either
//! succeeds (and the store reads back) or fails with an error; it never panics.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use sessdb::storage::MemStorage;
use sessdb::{Store, StoreOptions};

fuzz_target!(|data: &[u8]| {
    // The first byte says where the segment ends and the checkpoint begins.
    let Some((&at, rest)) = data.split_first() else {
        return;
    };
    let (segment, checkpoint) = rest.split_at(usize::from(at) * rest.len() / 256);
    let mut files = vec![(
        "segments/00000000000000000000.seg".to_owned(),
        segment.to_vec(),
    )];
    if !checkpoint.is_empty() {
        files.push((
            "checkpoints/00000000000000000001.ckpt".to_owned(),
            checkpoint.to_vec(),
        ));
    }
    for salvage in [false, true] {
        let storage = MemStorage::from_files(files.clone());
        if let Ok(store) = Store::open_with(
            Arc::new(storage),
            StoreOptions {
                salvage,
                ..StoreOptions::tiny()
            },
        ) {
            for info in store.list() {
                let _ = store.events(&info.header.id, 0, u64::MAX);
                let _ = store.messages(&info.header.id);
            }
        }
    }
});
