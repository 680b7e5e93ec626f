//! Recovery on arbitrary files: a segment and a checkpoint of arbitrary bytes. Open either
//! succeeds (and the store reads back) or fails with an error; it never panics. A writable
//! open that refuses leaves every file as it was; a salvage that succeeds leaves a store
//! that opens again without salvage. A compaction of a store that opened refuses damage or
//! keeps every session it read as it was, and the store opens again with them.
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
        let opened = Store::open_with(
            Arc::new(storage.clone()),
            StoreOptions::tiny().with_salvage(salvage),
        );
        match opened {
            Ok(store) => {
                let mut before = Vec::new();
                for info in store.list().unwrap_or_default() {
                    let events = store.events(&info.header.id, ..);
                    let _ = store.messages(&info.header.id);
                    before.push((info.header.id, events.ok()));
                }
                // A compaction refuses damage or keeps every live session as it was, and
                // leaves a store that opens again.
                if store.compact().is_ok() {
                    for (id, events) in &before {
                        if let Some(events) = events {
                            let after = store.events(id, ..);
                            assert!(after.as_ref().ok() == Some(events), "{id} changed");
                        }
                    }
                    drop(store);
                    let reopened = Store::open_with(Arc::new(storage.clone()), StoreOptions::tiny())
                        .unwrap_or_else(|e| panic!("a compacted store does not reopen: {e}"));
                    for (id, events) in &before {
                        if let Some(events) = events {
                            assert!(reopened.events(id, ..).ok().as_ref() == Some(events));
                        }
                    }
                } else {
                    drop(store);
                }
                if salvage {
                    // Salvage always ends in a store that opens.
                    if let Err(e) = Store::open_with(Arc::new(storage), StoreOptions::tiny()) {
                        panic!("a salvaged store does not reopen: {e}");
                    }
                }
            }
            Err(_) => {
                // An open that refuses writes nothing (the lock file is the lock).
                let mut after = storage.files();
                after.retain(|(p, _)| p != "LOCK");
                let mut before = files.clone();
                before.sort();
                after.sort();
                assert!(after == before, "a refused open changed the files");
            }
        }
    }
});
