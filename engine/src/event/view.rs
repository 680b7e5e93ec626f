//! A borrowed view of a stored event: its fields read in place from the segment bytes, for
//! readers that write an event out (export, `show`) or slice it (`messages()`) without
//! building an owned [`Event`] (`docs/DESIGN.md` §3.3).

use super::{Event, PackHint, SurfaceOp, SurfaceType};

/// One stored event, borrowed from the bytes it was decoded from (checksum already checked).
#[derive(Debug, Clone, Copy)]
pub struct EventRef<'a> {
    pub(crate) event_type: &'a str,
    pub(crate) seq: u64,
    pub(crate) time: i64,
    pub(crate) data: &'a [u8],
    /// `sourceEventSeqs` as stored: little-endian `u64`s.
    pub(crate) sources: Option<&'a [u8]>,
    pub(crate) surface_op: Option<SurfaceOp>,
    pub(crate) ignorable: bool,
    pub(crate) surface_op_first: bool,
    pub(crate) pack_hint: PackHint,
    pub(crate) frame_start: bool,
}

impl<'a> EventRef<'a> {
    /// The event type.
    pub fn event_type(&self) -> &'a str {
        self.event_type
    }

    /// The seq.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Unix epoch milliseconds.
    pub fn time(&self) -> i64 {
        self.time
    }

    /// The exact `data` bytes.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    /// `sourceEventSeqs`, when present.
    pub fn sources(&self) -> Option<impl ExactSizeIterator<Item = u64> + 'a> {
        self.sources.map(|raw| {
            raw.chunks_exact(8).map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                u64::from_le_bytes(b)
            })
        })
    }

    /// `surfaceOp`, when present.
    pub fn surface_op(&self) -> Option<SurfaceOp> {
        self.surface_op
    }

    /// Whether `ignorable: true` is set.
    pub fn ignorable(&self) -> bool {
        self.ignorable
    }

    /// Whether the JSONL line writes `surfaceOp` before `sourceEventSeqs` (DSH's closer order;
    /// only when both are present).
    pub fn surface_op_first(&self) -> bool {
        self.surface_op_first && self.sources.is_some() && self.surface_op.is_some()
    }

    /// The surface type of this event, if its type is one.
    pub fn surface_type(&self) -> Option<SurfaceType> {
        SurfaceType::from_name(self.event_type)
    }

    /// Where the JSONL export puts this event relative to packed rows.
    pub fn pack_hint(&self) -> PackHint {
        self.pack_hint
    }

    /// Whether a zstd export begins a frame at this event.
    pub fn frame_start(&self) -> bool {
        self.frame_start
    }

    /// The owned event (all of it: its layout hints too).
    pub fn to_event(&self) -> Event {
        let event = Event::with_type_name(self.event_type, self.seq, self.time, self.data)
            .with_sources_opt(self.sources().map(Iterator::collect))
            .with_surface_op_opt(self.surface_op)
            .with_ignorable(self.ignorable)
            .with_pack_hint(self.pack_hint)
            .with_frame_start(self.frame_start);
        event.with_surface_op_first(self.surface_op_first)
    }

    /// Appends this event as one JSONL line, without the newline: the same bytes as
    /// [`Event::write_jsonl`] of the owned event.
    pub fn write_jsonl(&self, out: &mut Vec<u8>) {
        super::jsonl::write_line(
            out,
            self.event_type,
            self.seq,
            self.time,
            self.data,
            self.sources(),
            self.surface_op,
            self.ignorable,
            self.surface_op_first(),
        );
    }
}
