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
        let mut sorted = all.clone();
        sorted.sort_by(|a, b| (key(order, a), &a.header.id).cmp(&(key(order, b), &b.header.id)));
        for direction in [Direction::Ascending, Direction::Descending] {
            let mut expected = sorted.clone();
            if direction == Direction::Descending {
                expected.reverse();
            }
            let listed = store
                .list_by(ListOptions::new(order).with_direction(direction))
                .unwrap();
            assert_eq!(ids(&listed), ids(&expected), "{order:?} {direction:?}");
            for limit in 0..=42 {
                let options = ListOptions::new(order)
                    .with_direction(direction)
                    .with_limit(limit);
                let cut = &expected[..limit.min(expected.len())];
                assert_eq!(
                    ids(&store.list_by(options).unwrap()),
                    ids(cut),
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
