//! The segment header, frame, record and checkpoint-body decoders on arbitrary bytes: no panic,
//! no unbounded allocation; a valid frame's payload re-encodes to the same bytes; a decoded
//! checkpoint's location runs lie in the body and decode only when their CRC holds.
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
    if let FrameCheck::Valid {
        kind, frame_len, ..
    } = check_frame(data, 1 << 20)
    {
        let _ = decode(kind, &data[FRAME_HEADER_LEN..frame_len]);
    }
    let Some((&k, payload)) = data.split_first() else {
        return;
    };
    let Some(kind) = RecordKind::from_byte(k % 5) else {
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
        };
        let mut out = Vec::new();
        assert!(
            encode(&again, &mut out).is_ok(),
            "a decoded body re-encodes"
        );
        assert_eq!(decode(kind, &out).ok(), Some(body));
    }
});
