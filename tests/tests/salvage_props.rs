//! Salvage, attacked: a generated multi-session store (sealed segments, forks, checkpoints),
//! one to three random byte ranges damaged anywhere in its segments, then a salvaging open.
//! Every session salvage does not name must read back byte for byte as before; every session it
//! names must be an intact prefix of what it was (or gone, if the report says it is lost
//! whole); the dry run must plan exactly what salvage does; the salvaged store must reopen
//! cleanly and verify.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use sessdb::storage::MemStorage;
use sessdb::store::{salvage_plan, verify};
use sessdb::{Clock, Store, StoreOptions};
use sessdb_tests::dump_store;
use sessdb_workload::{WorkloadSpec, generate};

fn opts() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(1_000))
}

type Dump = BTreeMap<String, Vec<Vec<u8>>>;

/// Every session's events as JSONL lines.
fn dump(store: &Store) -> Dump {
    dump_store(store)
        .into_iter()
        .map(|(id, events, _)| (id, events))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn salvage_keeps_every_session_the_damage_did_not_touch(
        seed in any::<u64>(),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), 1usize..24, any::<u8>()), 1..4),
    ) {
        let storage = MemStorage::new();
        let mut store = Store::open_with(Arc::new(storage.clone()), opts()).unwrap();
        generate(&WorkloadSpec { seed, sessions: 4, max_turns: 3, max_chunks: 6, ..WorkloadSpec::default() }, &mut store).unwrap();
        let before = dump(&store);
        store.close().unwrap();
        drop(store);

        let mut files = storage.files();
        let segments: Vec<usize> = files.iter().enumerate().filter(|(_, (p, _))| p.starts_with("segments/")).map(|(i, _)| i).collect();
        for (which, at, len, xor) in &damage {
            let f = segments[which.index(segments.len())];
            let bytes = &mut files[f].1;
            let start = at.index(bytes.len());
            for b in bytes.iter_mut().skip(start).take(*len) {
                *b ^= xor | 1;
            }
        }
        let image = MemStorage::from_files(files);
        let untouched = image.files();
        let plan = salvage_plan(&image, &opts()).unwrap();
        prop_assert_eq!(image.files(), untouched, "a dry run changes nothing");

        let salvaged = Store::open_with(Arc::new(image.clone()), opts().with_salvage(true));
        // Every damage a flip can make is placeable: salvage never refuses here.
        let salvaged = salvaged.unwrap_or_else(|e| panic!("salvage refused: {e}"));
        let report = salvaged.open_report().salvaged.clone().unwrap_or_default();
        prop_assert_eq!(&report.damage, &plan.damage, "the dry run plans what salvage does");
        prop_assert_eq!(&report.sessions, &plan.sessions);
        let after = dump(&salvaged);
        for (id, events) in &before {
            match report.sessions.iter().find(|l| &l.session == id) {
                None => prop_assert!(
                    after.get(id) == Some(events),
                    "{} not named by salvage but changed: {} events before, {:?} after; report {:?}",
                    id,
                    events.len(),
                    after.get(id).map(Vec::len),
                    report
                ),
                Some(loss) => match after.get(id) {
                    None => prop_assert_eq!(loss.kept, 0, "{} gone but reported kept", id),
                    Some(kept) => {
                        prop_assert_eq!(kept.len() as u64, loss.kept, "{}", id);
                        prop_assert!(events[..kept.len()] == kept[..], "{}: not an intact prefix", id);
                    }
                },
            }
        }
        for id in after.keys() {
            prop_assert!(before.contains_key(id), "salvage invented {}", id);
        }
        drop(salvaged);
        let again = Store::open_with(Arc::new(image.clone()), opts()).unwrap();
        prop_assert_eq!(dump(&again), after);
        drop(again);
        let v = verify(Arc::new(image)).unwrap();
        prop_assert!(v.ok(), "{:?}", v.problems);
    }
}
