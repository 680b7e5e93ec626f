//! The segment header, frame, record and checkpoint-body decoders on arbitrary bytes: no panic,
//! no unbounded allocation; a valid frame's payload re-encodes to the same bytes; a decoded
//! checkpoint's location runs lie in the body and decode only when their CRC holds; a body of
//! layout 3, 4 or 5 has its blocks or pages (and page table), slots, entries and runs (a
//! layout-5 entry's array runs too) read only within it, and an entry's row agrees with its
//! full decoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb::codec::frame::{FRAME_HEADER_LEN, FrameCheck, RecordKind, check_frame};
use sessdb::codec::record::{BodyRef, RecordBody, decode, encode};
use sessdb::codec::segment::SegmentHeader;

fuzz_target!(|data: &[u8]| {
    let _ = SegmentHeader::decode(data);
    if let Ok(body) = sessdb::codec::checkpoint::decode_body(data) {
        for s in &body.sessions {
            assert!(s.locs.start <= data.len());
            if let Ok(locs) = s.locs.decode(data) {
                assert_eq!(locs.len() as u64, s.locs.count);
            }
        }
    }
    indexed_body(data);
    if let FrameCheck::Valid {
        kind, frame_len, ..
    } = check_frame(data, 1 << 20)
    {
        let _ = decode(kind, &data[FRAME_HEADER_LEN..frame_len]);
    }
    let Some((&k, payload)) = data.split_first() else {
        return;
    };
    let Some(kind) = RecordKind::from_byte(k % 7) else {
        return;
    };
    if let Ok(body) = decode(kind, payload) {
        let events: Vec<_>;
        let again = match &body {
            RecordBody::Create {
                session,
                header_json,
                events: e,
            } => {
                events = e.iter().map(|l| l.event.clone()).collect();
                BodyRef::Create {
                    session,
                    header_json,
                    events: &events,
                }
            }
            RecordBody::Append { session, events: e } => {
                events = e.iter().map(|l| l.event.clone()).collect();
                BodyRef::Append {
                    session,
                    events: &events,
                }
            }
            RecordBody::Fork {
                child,
                header_json,
                parent,
                inherited,
                events: e,
            } => {
                events = e.iter().map(|l| l.event.clone()).collect();
                BodyRef::Fork {
                    child,
                    header_json,
                    parent,
                    inherited: *inherited,
                    events: &events,
                }
            }
            RecordBody::Delete { session } => BodyRef::Delete { session },
            // Void payloads are zeros; nothing to re-encode through a body.
            RecordBody::Void => return,
            // An epoch payload is exactly its encoding.
            RecordBody::Epoch(e) => {
                assert_eq!(&e.encode()[..], payload);
                return;
            }
        };
        let mut out = Vec::new();
        assert!(
            encode(&again, &mut out).is_ok(),
            "a decoded body re-encodes"
        );
        assert_eq!(decode(kind, &out).ok(), Some(body));
    }
});

/// A body of layout 3, 4 or 5: every block or page and slot, the entry each names (checked),
/// its row, its parts and runs.
fn indexed_body(data: &[u8]) {
    use sessdb::codec::checkpoint::BodyLayout;
    use sessdb::codec::checkpoint::indexed::{
        Regions, decode_entry, entry_id, entry_row, split_core, split_entry,
    };
    use sessdb::codec::checkpoint::pages::page_slot;
    for layout in [BodyLayout::Indexed, BodyLayout::Paged, BodyLayout::Arrays] {
        let Ok(r) = Regions::of(data, layout) else {
            continue;
        };
        assert!(r.slots_start <= r.entries_start && r.entries_start <= r.runs_start);
        assert!(r.runs_start <= data.len());
        let _ = r.check_pages(data);
        let _ = r.page_for_hash(data, 0x5555);
        let mut slots = Vec::new();
        for b in 0..r.blocks.min(4) {
            let _ = r.check_block(data, b);
            if let Ok(page) = r.page(data, b)
                && let Ok(bytes) = r.page_bytes(data, &page)
            {
                assert_eq!(bytes.len(), page.count as usize * 64);
                slots.extend((0..page.count as usize).map_while(|k| page_slot(bytes, k).ok()));
            }
        }
        for i in 0..r.slots.min(16) {
            let _ = r.page_of_slot(data, i);
            slots.extend(r.slot(data, i));
        }
        for slot in slots.iter().take(16) {
            let Ok(bytes) = r.entry(data, slot) else { continue };
            let id = entry_id(bytes).ok();
            let row = entry_row(r.entries, bytes).ok();
            let parts = split_entry(bytes)
                .ok()
                .and_then(|(_, _, core)| split_core(r.entries, core).ok());
            if let Ok(e) = decode_entry(r.entries, bytes, |run| r.array_run(data, run)) {
                assert!(parts.is_some(), "a decoded entry splits");
                assert_eq!(id, Some(e.id.as_str()));
                let row = row.expect("a decoded entry has a row");
                assert_eq!(row.header_json, &e.header_json[..]);
                assert_eq!(row.surface_len, e.state.surface().seqs().len());
                for run in &e.runs {
                    if let Ok(bytes) = r.run(data, run) {
                        assert_eq!(bytes.len() as u64, run.count * 16);
                    }
                }
            }
        }
    }
}
