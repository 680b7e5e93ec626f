//! `docs/FORMAT.md` is the specification of the bytes on disk; these tests build each of its
//! worked examples with the real encoders and require the document's hex to match exactly.

use super::checkpoint::{BodyWriter, CheckpointMeta, SessionRef};
use super::frame::encode_frame;
use super::location::EventLoc;
use super::record::{BodyRef, encode};
use super::segment::SegmentHeader;
use crate::event::{Event, SurfaceOp};
use crate::model::{RepairState, SessionState, SurfaceManager, TurnMarks};

const DOC: &str = include_str!("../../../docs/FORMAT.md");

/// The bytes of the fenced block that follows the line "```hex <name>".
fn doc_hex(name: &str) -> Vec<u8> {
    let start = DOC
        .find(&format!("```hex {name}\n"))
        .unwrap_or_else(|| panic!("no hex block {name} in FORMAT.md"));
    let body = &DOC[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let body = &body[..body.find("```").unwrap()];
    body.lines()
        .flat_map(|line| {
            // "0000: 53 45 ..  |text|": offset, bytes, optional ASCII column.
            let hex = line.split_once(':').map_or(line, |(_, rest)| rest);
            let hex = hex.split('|').next().unwrap_or("");
            hex.split_whitespace()
                .map(|b| u8::from_str_radix(b, 16).unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Formats bytes the way the document shows them.
fn hexdump(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .enumerate()
        .map(|(i, c)| {
            let hex: Vec<String> = c.iter().map(|b| format!("{b:02x}")).collect();
            let text: String = c
                .iter()
                .map(|&b| {
                    if (0x20..0x7f).contains(&b) {
                        b as char
                    } else {
                        '.'
                    }
                })
                .collect();
            format!("{:04x}: {:<47}  |{text}|", i * 16, hex.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn segment_header() -> Vec<u8> {
    SegmentHeader::new(0, 1_767_225_600_000, false)
        .encode()
        .to_vec()
}

/// The run and tombstone tables and the footer of a compacted segment (first LSN 100) that
/// kept the records at LSNs 100..160 and 300..340, stored at file offsets 40..100 and
/// 100..140, and left out records at LSNs 160 (frame CRC 0x11223344) and 230 (0xAABBCCDD).
fn compacted_trailer() -> Vec<u8> {
    use super::compacted::{Run, Runs, Tombstone};
    let runs = vec![
        Run {
            lsn: 100,
            offset: 40,
        },
        Run {
            lsn: 300,
            offset: 100,
        },
    ];
    let tombstones = vec![
        Tombstone {
            lsn: 160,
            crc: 0x1122_3344,
        },
        Tombstone {
            lsn: 230,
            crc: 0xAABB_CCDD,
        },
    ];
    Runs::new(runs, 100, 140, 340)
        .and_then(|r| r.with_tombstones(tombstones))
        .unwrap()
        .encode()
}

/// The example record in layout 2, as the write path seals it.
fn append_frame() -> Vec<u8> {
    let payload = append_frame_layout1();
    let mut frame = vec![0; super::frame::FRAME_HEADER_LEN];
    frame.extend_from_slice(&payload[super::frame::FRAME_HEADER_LEN..]);
    let (_, locs) = encode(
        &BodyRef::Append {
            session: "s1",
            events: &example_events(),
        },
        &mut Vec::new(),
    )
    .unwrap();
    super::frame::seal_frame(
        super::frame::RecordKind::Append,
        &mut frame,
        super::frame::FrameLayout::Split,
        &locs,
    );
    frame
}

/// An epoch record, as the writer seals it in a segment of format 6: id
/// `0x0123456789ABCDEF`, started 2026-01-01T00:00:00Z.
fn epoch_frame() -> Vec<u8> {
    let epoch = super::record::WriterEpoch {
        id: 0x0123_4567_89AB_CDEF,
        started_ms: 1_767_225_600_000,
    };
    let mut frame = vec![0; super::frame::FRAME_HEADER_LEN];
    frame.extend_from_slice(&epoch.encode());
    super::frame::seal_frame(
        super::frame::RecordKind::Epoch,
        &mut frame,
        super::frame::FrameLayout::Split,
        &[],
    );
    let payload = &frame[super::frame::FRAME_HEADER_LEN..];
    assert_eq!(super::record::WriterEpoch::decode(payload), Ok(epoch));
    frame
}

/// The header of the same record in layout 1 (the payload is the same).
fn append_frame_layout1_header() -> Vec<u8> {
    append_frame_layout1()[..super::frame::FRAME_HEADER_LEN].to_vec()
}

fn example_events() -> [Event; 2] {
    [
        Event::new("turn/start", 1, 1_767_225_600_000, &br#"{"turn":1}"#[..]),
        Event::new(
            "user/message",
            2,
            1_767_225_600_007,
            &br#"{"id":"u1","role":"user","source":{"kind":"user"},"content":[]}"#[..],
        )
        .with_surface_op(SurfaceOp::Append),
    ]
}

fn append_frame_layout1() -> Vec<u8> {
    let mut payload = Vec::new();
    let (kind, _) = encode(
        &BodyRef::Append {
            session: "s1",
            events: &example_events(),
        },
        &mut payload,
    )
    .unwrap();
    let mut frame = Vec::new();
    encode_frame(kind, &payload, &mut frame);
    frame
}

fn checkpoint_header() -> Vec<u8> {
    let meta = CheckpointMeta {
        generation: 3,
        base: 2,
        covered_lsn: 4096,
        last_record: Some(crate::codec::frame::RecordLink {
            lsn: 3990,
            crc: 0x1234_5678,
        }),
    };
    meta.encode_header(super::checkpoint::BodyLayout::CURRENT, b"body")
        .to_vec()
}

fn checkpoint_body() -> Vec<u8> {
    let state = SessionState {
        next_seq: 3,
        last_time: Some(1_767_225_600_007),
        surface: SurfaceManager::from_parts(vec![2], 0),
        repair: RepairState {
            open_turn: Some(Some(crate::model::ShortStr::new("1"))),
            open_step: None,
            pending: Vec::new(),
        },
        turns: TurnMarks::from_encoded(vec![3]),
    };
    let locs = [
        EventLoc {
            lsn: 0,
            offset: 14,
            len: 31,
        },
        EventLoc {
            lsn: 76,
            offset: 20,
            len: 31,
        },
        EventLoc {
            lsn: 76,
            offset: 55,
            len: 99,
        },
    ];
    let mut w = BodyWriter::new();
    w.session(
        &SessionRef {
            id: "s1",
            header_json:
                br#"{"type":"session","version":0,"id":"s1","createdAt":0,"delegationDepth":0}"#,
            created_lsn: 0,
            parent: None,
            loc_base: 0,
            state: &state,
        },
        locs.into_iter(),
    )
    .unwrap();
    w.finish(["old"].into_iter()).unwrap()
}

/// A layout-5 delta (generation 2): session `s1` (the state above, its surface now `[1, 2]`)
/// whose first two locations are a run of generation 1 and whose third is written here, whose
/// surface's first seq is a run of generation 1 and second is written here, its turn marks
/// written here; its slot in a page written here, and a page of generation 1 (an untouched
/// session's slot) named where it is.
fn checkpoint_arrays_body() -> Vec<u8> {
    use super::checkpoint::arrays::{ArrayOut, ArraysOut, encode_values};
    use super::checkpoint::indexed::{IndexedWriter, RunRef};
    use super::checkpoint::pages::PageRef;
    let state = SessionState {
        next_seq: 3,
        last_time: Some(1_767_225_600_007),
        surface: SurfaceManager::from_parts(vec![1, 2], 0),
        repair: RepairState::default(),
        turns: TurnMarks::from_encoded(vec![3]),
    };
    let mut third = Vec::new();
    EventLoc {
        lsn: 76,
        offset: 55,
        len: 99,
    }
    .encode(&mut third);
    let surface_new = encode_values(&[2]);
    let turns = encode_values(&[3]);
    let mut w = IndexedWriter::new(2);
    let (slot, _, _) = w
        .entry(
            &SessionRef {
                id: "s1",
                header_json: br#"{"type":"session","version":0,"id":"s1","createdAt":0}"#,
                created_lsn: 0,
                parent: None,
                loc_base: 0,
                state: &state,
            },
            0,
            &[RunRef {
                generation: 1,
                start: 0,
                count: 2,
                crc: 0x0102_0304,
            }],
            1,
            &[&third],
            ArraysOut {
                surface: ArrayOut {
                    earlier: &[RunRef {
                        generation: 1,
                        start: 32,
                        count: 1,
                        crc: 0x0506_0708,
                    }],
                    pieces: &[&surface_new],
                },
                turns: ArrayOut {
                    earlier: &[],
                    pieces: &[&turns],
                },
            },
        )
        .unwrap();
    // s1's id hash is 0x08d8ff07b578d149: its page comes before the page of generation 1
    // (first hash 0x1111222233334444).
    w.write_page(&[slot]).unwrap();
    w.carry_page(PageRef {
        first_hash: 0x1111_2222_3333_4444,
        first_slot: 0,
        generation: 1,
        at: 0,
        count: 1,
        crc: 0xAABB_CCDD,
    });
    w.finish().unwrap()
}

/// The layout-4 example of FORMAT.md (a body this release reads and no longer writes) reads
/// as the document says: two pages, `s1`'s entry written here with its arrays inline.
#[test]
fn the_layout_4_example_reads_as_the_document_says() {
    use super::checkpoint::BodyLayout;
    use super::checkpoint::indexed::{EntryForm, Regions, decode_entry, entry_row, page_slot};
    let body = doc_hex("checkpoint-paged-body");
    let r = Regions::of(&body, BodyLayout::Paged).unwrap();
    assert_eq!((r.slots, r.blocks, r.entries), (2, 2, EntryForm::Inline));
    r.check_pages(&body).unwrap();
    let first = r.page(&body, 0).unwrap();
    assert_eq!(r.page(&body, 1).unwrap().generation, 1);
    let slot = page_slot(r.page_bytes(&body, &first).unwrap(), 0).unwrap();
    assert_eq!(slot.generation, 2);
    let bytes = r.entry(&body, &slot).unwrap();
    let e = decode_entry(r.entries, bytes, |_| Err("no runs inline")).unwrap();
    assert_eq!(
        (e.id.as_str(), e.state.next_seq(), e.runs.len(), e.arrays),
        ("s1", 3, 2, None)
    );
    assert_eq!(e.state.surface().seqs(), &[2]);
    assert_eq!(e.state.turns.encoded(), &[3]);
    assert_eq!(entry_row(r.entries, bytes).unwrap().surface_len, 1);
}

/// The layout-3 example of FORMAT.md (a body this release reads and no longer writes) reads
/// as the document says: two slots, `s1`'s entry written here, a slot of generation 1.
#[test]
fn the_layout_3_example_reads_as_the_document_says() {
    use super::checkpoint::BodyLayout;
    use super::checkpoint::indexed::{Regions, decode_entry};
    let body = doc_hex("checkpoint-indexed-body");
    let r = Regions::of(&body, BodyLayout::Indexed).unwrap();
    assert_eq!((r.slots, r.blocks), (2, 1));
    assert_eq!(
        super::checkpoint::checked_part(&body),
        &body[..r.slots_start]
    );
    let slots: Vec<_> = (0..2).map(|i| r.slot_checked(&body, i).unwrap()).collect();
    assert_eq!(slots[1].id_hash, 0x1111_2222_3333_4444);
    assert_eq!((slots[1].generation, slots[1].entry_crc), (1, 0xAABB_CCDD));
    assert_eq!(slots[0].generation, 2);
    let e = decode_entry(r.entries, r.entry(&body, &slots[0]).unwrap(), |_| {
        Err("no runs inline")
    })
    .unwrap();
    assert_eq!(
        (e.id.as_str(), e.state.next_seq(), e.runs.len()),
        ("s1", 3, 2)
    );
}

#[test]
fn the_document_shows_exactly_the_bytes_the_code_writes() {
    for (name, bytes) in [
        ("segment-header", segment_header()),
        ("compacted-trailer", compacted_trailer()),
        ("append-frame", append_frame()),
        ("append-frame-layout1-header", append_frame_layout1_header()),
        ("epoch-frame", epoch_frame()),
        ("checkpoint-header", checkpoint_header()),
        ("checkpoint-body", checkpoint_body()),
        ("checkpoint-arrays-body", checkpoint_arrays_body()),
    ] {
        // On a mismatch the message carries the block the document should hold.
        assert!(
            doc_hex(name) == bytes,
            "FORMAT.md block {name} should be:\n```hex {name}\n{}\n```",
            hexdump(&bytes)
        );
    }
}
