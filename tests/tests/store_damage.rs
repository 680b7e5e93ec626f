//! Damage on open: a torn tail cut at every offset of the final records, a flipped byte in
//! a sealed record reported at its offset, a log shorter than a checkpoint vouches for,
//! preallocated zeros as a clean end; `verify` on a sound store and on damage (salvage: `salvage.rs`).
//! Each scenario runs on memory and on real files (`on_both_storages!`) unless it needs the
//! crash simulator.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::CorruptionKind;
use sessdb::codec::segment::SEGMENT_HEADER_LEN;
use sessdb::store::verify;
use sessdb::{Draft, Error, LogType, SessionHeader, Store, SurfaceIntent, SurfaceType};
use sessdb_tests::{Backend, on_both_storages};
use sessdb_workload::{WorkloadSpec, generate, payload as p};

#[path = "support/store.rs"]
mod support;
use support::*;

fn a_torn_tail_is_cut_at_every_offset_of_the_final_records(storage: &Backend) {
    let store = Store::open_with(
        storage.storage(),
        opts().with_checkpoint_interval_bytes(u64::MAX),
    )
    .unwrap();
    store
        .create_session(SessionHeader::new("s", 0), Vec::new())
        .unwrap();
    let mut ends = vec![(1, last_segment(storage).1.len())];
    for turn in 1..=3 {
        store
            .append(
                "s",
                Draft::log(&LogType::TURN_START, p::turn_start(turn).into_bytes()),
            )
            .unwrap();
        ends.push((
            store.session_len("s").unwrap(),
            last_segment(storage).1.len(),
        ));
        store
            .append(
                "s",
                Draft::surface(
                    SurfaceType::UserMessage,
                    p::user_message("u", "user", "hello there").into_bytes(),
                    SurfaceIntent::append(),
                ),
            )
            .unwrap();
        ends.push((
            store.session_len("s").unwrap(),
            last_segment(storage).1.len(),
        ));
    }
    assert_eq!(
        storage
            .files()
            .iter()
            .filter(|(p, _)| p.starts_with("segments/"))
            .count(),
        1,
        "one segment"
    );
    drop(store);
    let (path, full) = last_segment(storage);
    for cut in ends[0].1..=full.len() {
        let image = storage.image_with(&path, &full[..cut]);
        let store = Store::open_with(image.storage(), opts())
            .unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        let (expected_len, kept_end) = *ends.iter().rfind(|(_, end)| *end <= cut).unwrap();
        assert_eq!(
            store.session_len("s").unwrap(),
            expected_len,
            "cut at {cut}"
        );
        assert_eq!(
            store.open_report().bytes_truncated as usize,
            cut - kept_end,
            "cut at {cut}"
        );
    }
    eprintln!(
        "{} torn cuts, each recovered to the last whole record",
        full.len() + 1 - ends[0].1
    );
}

fn a_flipped_byte_in_a_sealed_record_is_corruption_at_its_offset(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    drop(store);
    let segments: Vec<(String, Vec<u8>)> = storage
        .files()
        .into_iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .collect();
    assert!(segments.len() >= 3);
    let (path, bytes) = &segments[1];
    // The segment's first frame is the writer's epoch record (32 bytes, no session's): the
    // byte flipped is inside the first session record's payload after it.
    assert_eq!(
        bytes[SEGMENT_HEADER_LEN + 8],
        sessdb::codec::frame::RecordKind::Epoch as u8
    );
    let first = SEGMENT_HEADER_LEN + 32;
    let at = first + 20;
    let mut damaged = bytes.clone();
    damaged[at] ^= 0x01;
    let image = storage.without_checkpoints().image_with(path, &damaged);
    let err = Store::open_with(image.storage(), opts()).unwrap_err();
    match err {
        Error::Corruption {
            segment,
            offset,
            kind,
        } => {
            assert_eq!(&segment, path);
            assert_eq!(offset, first as u64);
            assert_eq!(kind, CorruptionKind::ChecksumMismatch);
        }
        other => panic!("expected corruption, got {other}"),
    }
    // Salvage voids the damaged record, cuts only the session it belonged to (at its last
    // intact event), and keeps every other session whole, byte for byte.
    let before = dump(&Store::open_read_only_with(storage.storage(), opts()).unwrap());
    let untouched = image.files();
    let dry = sessdb::store::salvage_plan(&*image.storage(), &opts()).unwrap();
    assert_eq!(image.files(), untouched, "a dry run changes nothing");
    let salvaged = open_salvaging(&image);
    let s = salvaged.open_report().salvaged.clone().unwrap();
    assert_eq!(s.damage, dry.damage, "the dry run plans what salvage does");
    assert_eq!(s.sessions, dry.sessions);
    assert_eq!(s.damage.len(), 1, "{s:?}");
    let d = &s.damage[0];
    assert_eq!(
        (d.segment.as_str(), d.offset, d.kind, d.repair),
        (
            path.as_str(),
            first as u64,
            CorruptionKind::ChecksumMismatch,
            sessdb::store::DamageRepair::Voided
        )
    );
    // The damaged record's session (its id was damaged too, so its next record shows the
    // gap) and the fork of it that inherits the lost events.
    assert!(!s.sessions.is_empty(), "{s:?}");
    let after: std::collections::BTreeMap<_, _> = dump(&salvaged)
        .into_iter()
        .map(|(id, events, state)| (id, (events, state)))
        .collect();
    let mut whole = 0;
    for (id, events, state) in &before {
        match s.sessions.iter().find(|l| &l.session == id) {
            Some(loss) if loss.kept == 0 => assert!(!after.contains_key(id), "{id} lost whole"),
            Some(loss) => {
                let (kept, _) = &after[id];
                assert_eq!(kept.len() as u64, loss.kept, "{id}");
                assert_eq!(&events[..kept.len()], &kept[..], "{id}: an intact prefix");
                assert!(loss.lost_through.unwrap() >= loss.kept, "{loss:?}");
            }
            None => {
                whole += 1;
                assert_eq!(
                    after.get(id),
                    Some(&(events.clone(), state.clone())),
                    "{id} kept whole"
                );
            }
        }
    }
    assert!(whole >= 2, "the other sessions are kept whole");
    let after = dump(&salvaged);
    drop(salvaged);
    let again = open(&image);
    assert!(again.open_report().salvaged.is_none());
    assert_eq!(dump(&again), after, "the salvaged store reopens the same");
}

fn a_log_shorter_than_a_checkpoint_vouches_for_is_corruption_to_every_view(storage: &Backend) {
    // The older segments beside a newer checkpoint. A reader reads the checkpoint headers
    // before it lists the segments, so a live writer cannot make it see this: records a
    // checkpoint vouches for are gone, for readers, verify and writers alike.
    let mut store = open(storage);
    workload(&mut store);
    store.checkpoint().unwrap();
    let early = storage.files();
    generate(
        &WorkloadSpec {
            seed: 9,
            sessions: 2,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    store.checkpoint().unwrap();
    let late = storage.files();
    drop(store);
    let image = storage.image(
        early
            .into_iter()
            .filter(|(p, _)| p.starts_with("segments/"))
            .chain(
                late.into_iter()
                    .filter(|(p, _)| p.starts_with("checkpoints/")),
            ),
    );
    let missing = |r: Result<Store, Error>| match r {
        Err(Error::Corruption { kind, .. }) => {
            assert!(
                matches!(kind, CorruptionKind::MissingRecords { .. }),
                "{kind}"
            );
        }
        other => panic!("expected missing records, got {other:?}"),
    };
    missing(Store::open_read_only_with(image.storage(), opts()));
    let report = verify(image.storage()).unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.contains("vouches for records up to LSN")),
        "{:?}",
        report.problems
    );
    let before = image.fingerprint();
    missing(Store::open_with(image.storage(), opts()));
    assert_eq!(image.fingerprint(), before, "a refused open writes nothing");
}

fn preallocated_space_is_a_clean_end_not_a_torn_tail(storage: &Backend) {
    let options = opts()
        .with_preallocate_bytes(4096)
        .with_segment_bytes_max(16_384);
    let mut store = Store::open_with(storage.storage(), options.clone()).unwrap();
    workload(&mut store);
    let before = dump(&store);
    let log_bytes = store.stats().end_lsn;
    // The files as a crash would leave them: taken while the store is open (a clean close
    // cuts the allocated space off, below).
    let mut segments: Vec<(String, Vec<u8>)> = storage
        .files()
        .into_iter()
        .filter(|(p, _)| p.starts_with("segments/"))
        .collect();
    drop(store);
    segments.sort();
    assert!(segments.len() >= 3, "rolls happened");
    // Sealed segments are exactly their records; the active one ends in allocated zeros.
    let lsn = |p: &str| -> u64 { p[9..29].parse().unwrap() };
    for pair in segments.windows(2) {
        assert_eq!(
            lsn(&pair[0].0) + pair[0].1.len() as u64 - SEGMENT_HEADER_LEN as u64,
            lsn(&pair[1].0),
            "{} is exact",
            pair[0].0
        );
    }
    let (last_path, last) = segments.last().unwrap().clone();
    let used = (log_bytes - lsn(&last_path)) as usize + SEGMENT_HEADER_LEN;
    assert!(last.len() > used, "the active segment has allocated space");
    assert!(last[used..].iter().all(|&b| b == 0));
    // The last handle dropped cut the allocated space off: the next open reads no zeros.
    let closed = storage.files();
    let (_, trimmed) = closed.iter().find(|(p, _)| *p == last_path).unwrap();
    assert_eq!(
        trimmed.len(),
        used,
        "a closed store's active segment ends at its records"
    );
    // Put back as a crash leaves it.
    storage.put(&last_path, last.clone());
    // A reader sees a clean end; a writer reopens without cutting anything.
    let reader = Store::open_read_only_with(storage.storage(), options.clone()).unwrap();
    assert_eq!(reader.open_report().torn_tail_ignored, 0);
    assert_eq!(reader.stats().end_lsn, log_bytes);
    assert_eq!(dump(&reader), before);
    drop(reader);
    let report = verify(storage.storage()).unwrap();
    assert!(
        report.ok() && report.incomplete_tail_bytes == 0,
        "{report:?}"
    );
    let store = Store::open_with(storage.storage(), options.clone()).unwrap();
    assert_eq!(store.open_report().bytes_truncated, 0);
    assert_eq!(dump(&store), before);
    drop(store);
    // A frame header torn inside the allocated space is still a torn tail, cut.
    let mut torn = last.clone();
    torn[used..used + 6].copy_from_slice(&[0x30, 0, 0, 0, 0x12, 0x34]);
    let image = storage.image_with(&last_path, &torn);
    let store = Store::open_with(image.storage(), options).unwrap();
    assert!(store.open_report().bytes_truncated > 0);
    assert_eq!(dump(&store), before);
}

fn verify_finds_nothing_on_a_sound_store_and_names_damage(storage: &Backend) {
    let mut store = open(storage);
    workload(&mut store);
    store.close().unwrap();
    let report = verify(storage.storage()).unwrap();
    assert!(report.ok(), "{:?}", report.problems);
    assert!(
        report.records > 10 && report.sessions == 4 && report.checkpoint.is_some(),
        "{report:?}"
    );
    // A byte flipped in a sealed segment, before the checkpoint: a normal open would not
    // look there, verify does.
    let (path, mut bytes) = storage
        .files()
        .into_iter()
        .find(|(p, _)| p.starts_with("segments/"))
        .unwrap();
    bytes[SEGMENT_HEADER_LEN + 30] ^= 0x20;
    storage.put(&path, bytes);
    let report = verify(storage.storage()).unwrap();
    assert!(!report.ok());
    assert!(report.problems[0].contains(&path), "{:?}", report.problems);
}

on_both_storages!(
    a_torn_tail_is_cut_at_every_offset_of_the_final_records,
    a_flipped_byte_in_a_sealed_record_is_corruption_at_its_offset,
    a_log_shorter_than_a_checkpoint_vouches_for_is_corruption_to_every_view,
    preallocated_space_is_a_clean_end_not_a_torn_tail,
    verify_finds_nothing_on_a_sound_store_and_names_damage,
);
