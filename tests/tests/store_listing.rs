//! `Store::list_by`: every order, both directions, every limit — the same sessions, in the
//! same order, as sorting the whole list (ties by id), and only as many as asked for.

#![allow(clippy::unwrap_used, reason = "test code fails loudly")]

use std::sync::Arc;

use sessdb::storage::MemStorage;
use sessdb::store::{Direction, ListOptions, ListOrder, SessionInfo};
use sessdb::{Clock, Draft, LogType, SessionHeader, Store, StoreOptions};

/// 40 sessions whose creation times, event counts and last event times repeat (so ties are
/// broken by id), some with no event but the seed's end marker.
fn store() -> Store {
    let store = Store::open_with(
        Arc::new(MemStorage::new()),
        StoreOptions::default().with_clock(Clock::fixed(5)),
    )
    .unwrap();
    let note = LogType::new("plugin/note").unwrap();
    for i in 0..40u64 {
        let id = format!("s{:02}", (i * 17) % 40);
        store
            .create_session(SessionHeader::new(id.as_str(), (i % 7) as i64), Vec::new())
            .unwrap();
        for k in 0..(i % 5) {
            let at = 1_000 + ((i * 31 + k) % 9) as i64;
            store
                .append(&id, Draft::log(&note, b"{}".as_slice()).at(at).ignorable())
                .unwrap();
        }
    }
    store
}

fn key(order: ListOrder, s: &SessionInfo) -> (i64, u64) {
    match order {
        ListOrder::Created => (s.header.created_at, 0),
        ListOrder::Updated => (s.last_time.unwrap_or(i64::MIN), 0),
        ListOrder::Events => (0, s.events),
        _ => (0, 0),
    }
}

/// The ids of `all` sorted by `order` (ties by id) in `direction`: what a listing returns.
fn sorted_ids(all: &[SessionInfo], order: ListOrder, direction: Direction) -> Vec<String> {
    let mut sorted = all.to_vec();
    sorted.sort_by(|a, b| (key(order, a), &a.header.id).cmp(&(key(order, b), &b.header.id)));
    if direction == Direction::Descending {
        sorted.reverse();
    }
    sorted.into_iter().map(|s| s.header.id).collect()
}

#[test]
fn every_order_direction_and_limit_is_the_whole_sorted_list_cut() {
    let store = store();
    let all = store.list().unwrap();
    assert_eq!(all.len(), 40);
    let ids = |v: &[SessionInfo]| v.iter().map(|s| s.header.id.clone()).collect::<Vec<_>>();
    for order in [
        ListOrder::Id,
        ListOrder::Created,
        ListOrder::Updated,
        ListOrder::Events,
    ] {
        for direction in [Direction::Ascending, Direction::Descending] {
            let expected = sorted_ids(&all, order, direction);
            let listed = store
                .list_by(ListOptions::new(order).with_direction(direction))
                .unwrap();
            assert_eq!(ids(&listed), expected, "{order:?} {direction:?}");
            for limit in 0..=42 {
                let options = ListOptions::new(order)
                    .with_direction(direction)
                    .with_limit(limit);
                let cut = &expected[..limit.min(expected.len())];
                assert_eq!(
                    ids(&store.list_by(options).unwrap()),
                    cut,
                    "{order:?} {direction:?} {limit}"
                );
            }
        }
    }
    // The default listing is by id, ascending, all of them.
    assert_eq!(
        ids(&store.list_by(ListOptions::default()).unwrap()),
        ids(&all)
    );
    assert!(ids(&all).windows(2).all(|w| w[0] < w[1]));
}

/// The sessions of `spec` (creation time, notes, the first note's time), created in that
/// order; with `reopen`, closed and opened again, so that the listing reads the checkpoint's
/// index rather than decoded sessions (and `touch` of them decoded again by a read).
fn store_of(spec: &[(i64, u64, i64)], reopen: bool, touch: usize) -> Store {
    let storage = Arc::new(MemStorage::new());
    let options = StoreOptions::default().with_clock(Clock::fixed(5));
    let store = Store::open_with(storage.clone(), options.clone()).unwrap();
    let note = LogType::new("plugin/note").unwrap();
    for (i, &(created, notes, at)) in spec.iter().enumerate() {
        let id = format!("s{:03}", (i * 37) % 1000);
        store
            .create_session(SessionHeader::new(id.as_str(), created), Vec::new())
            .unwrap();
        for k in 0..notes {
            let draft = Draft::log(&note, b"{}".as_slice()).at(at + k as i64);
            store.append(&id, draft.ignorable()).unwrap();
        }
    }
    if !reopen {
        return store;
    }
    store.close().unwrap();
    drop(store);
    let store = Store::open_with(storage, options).unwrap();
    for info in store.list().unwrap().iter().take(touch) {
        store.events(&info.header.id, ..).unwrap();
    }
    store
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(sessdb_tests::proptest_cases(96)))]

    /// A listing with a limit (the first rows kept in a bounded heap as they are read, ties
    /// of the last key kept for the ids to decide) is the whole sorted list cut, in every
    /// keyed order and direction, over decoded sessions, the index's, and both at once.
    #[test]
    fn a_limited_listing_is_the_whole_sorted_list_cut(
        spec in proptest::collection::vec((0i64..4, 0u64..3, 0i64..3), 1..50),
        limit in 0usize..55,
        reopen in proptest::bool::ANY,
        touch in 0usize..10,
    ) {
        let store = store_of(&spec, reopen, touch);
        let all = store.list().unwrap();
        let ids = |v: &[SessionInfo]| v.iter().map(|s| s.header.id.clone()).collect::<Vec<_>>();
        for order in [ListOrder::Created, ListOrder::Updated, ListOrder::Events] {
            for direction in [Direction::Ascending, Direction::Descending] {
                let expected = sorted_ids(&all, order, direction);
                let options = ListOptions::new(order).with_direction(direction).with_limit(limit);
                let listed = store.list_by(options).unwrap();
                proptest::prop_assert_eq!(
                    ids(&listed),
                    &expected[..limit.min(expected.len())],
                    "{:?} {:?}", order, direction
                );
            }
        }
    }
}
