//! The digests that make a shipped position name a history, not only a count
//! (`docs/FORMATS.md` §4.1): the shipper writes them beside the rows, every round checks the
//! store's last shipped event against them, and pull recomputes them from the rows it reads.
//!
//! An event's digest is SHA-256 of its fields in one unambiguous layout (every variable part
//! length-prefixed); a session's history chains them from its header:
//! `h0 = SHA-256("sessdb-history-1\0" ‖ header_json)`, `h(n+1) = SHA-256(h(n) ‖ event_n)`.
//! Unkeyed: they find rows changed, reordered, added or removed by anything that did not
//! recompute them, and a store whose history is not the one shipped; they do not
//! authenticate the rows against someone who can write PostgreSQL and recompute them.

use sessdb::{Event, EventRef, SurfaceOp};
use sha2::{Digest, Sha256};

/// One SHA-256 digest.
pub(crate) type Hash = [u8; 32];

/// The fields of an event as shipped (`key_order` as the row's column holds it).
pub(crate) struct Fields<'a, I> {
    pub(crate) seq: u64,
    pub(crate) event_type: &'a str,
    pub(crate) time: i64,
    pub(crate) data: &'a [u8],
    pub(crate) sources: Option<I>,
    pub(crate) op: Option<SurfaceOp>,
    pub(crate) ignorable: bool,
    pub(crate) key_order: bool,
}

/// The digest of one event.
pub(crate) fn event<I: ExactSizeIterator<Item = u64>>(f: Fields<'_, I>) -> Hash {
    let mut h = Sha256::new();
    h.update(f.seq.to_le_bytes());
    h.update(f.time.to_le_bytes());
    h.update((f.event_type.len() as u64).to_le_bytes());
    h.update(f.event_type.as_bytes());
    h.update((f.data.len() as u64).to_le_bytes());
    h.update(f.data);
    match f.sources {
        None => h.update([0]),
        Some(seqs) => {
            h.update([1]);
            h.update((seqs.len() as u64).to_le_bytes());
            for s in seqs {
                h.update(s.to_le_bytes());
            }
        }
    }
    match f.op {
        None => h.update([0]),
        Some(SurfaceOp::Append) => h.update([1]),
        Some(SurfaceOp::Replace { start, end }) => {
            h.update([2]);
            h.update(start.to_le_bytes());
            h.update(end.to_le_bytes());
        }
    }
    h.update([u8::from(f.ignorable) | (u8::from(f.key_order) << 1)]);
    h.finalize().into()
}

/// The digest of a stored event.
pub(crate) fn of_ref(e: &EventRef<'_>) -> Hash {
    event(Fields {
        seq: e.seq(),
        event_type: e.event_type(),
        time: e.time(),
        data: e.data(),
        sources: e.sources(),
        op: e.surface_op(),
        ignorable: e.ignorable(),
        key_order: e.surface_op_first(),
    })
}

/// The digest of an event rebuilt from rows.
pub(crate) fn of_event(e: &Event) -> Hash {
    event(Fields {
        seq: e.seq(),
        event_type: e.event_type(),
        time: e.time(),
        data: e.data(),
        sources: e.sources().map(|s| s.iter().copied()),
        op: e.surface_op(),
        ignorable: e.ignorable(),
        key_order: e.surface_op_first(),
    })
}

/// The history of a session with no event yet.
pub(crate) fn start(header_json: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update(b"sessdb-history-1\0");
    h.update(header_json);
    h.finalize().into()
}

/// The history after one more event.
pub(crate) fn extend(history: &Hash, event: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update(history);
    h.update(event);
    h.finalize().into()
}

/// A digest read from a `bytea` column (`None` when it is not 32 bytes).
pub(crate) fn from_column(bytes: &[u8]) -> Option<Hash> {
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_event_and_its_rebuilt_copy_have_one_digest_and_every_field_counts() {
        let e = Event::new(
            "tool/call",
            3,
            1_700_000_000_000,
            br#"{"name":"ls"}"#.to_vec(),
        )
        .with_sources(vec![1, 2])
        .with_surface_op(SurfaceOp::Append);
        let base = of_event(&e);
        let changed = [
            Event::new(
                "tool/call",
                4,
                1_700_000_000_000,
                br#"{"name":"ls"}"#.to_vec(),
            ),
            Event::new(
                "tool/call",
                3,
                1_700_000_000_001,
                br#"{"name":"ls"}"#.to_vec(),
            ),
            Event::new(
                "tool/cal",
                3,
                1_700_000_000_000,
                br#"{"name":"ls"}"#.to_vec(),
            ),
            Event::new(
                "tool/call",
                3,
                1_700_000_000_000,
                br#"{"name":"rm"}"#.to_vec(),
            ),
        ];
        for c in &changed {
            let c = c
                .clone()
                .with_sources(vec![1, 2])
                .with_surface_op(SurfaceOp::Append);
            assert_ne!(of_event(&c), base);
        }
        assert_ne!(of_event(&e.clone().with_sources(vec![2, 1])), base);
        assert_ne!(of_event(&e.clone().with_ignorable(true)), base);
        assert_eq!(of_event(&e.clone()), base);
        let h0 = start(b"{}");
        assert_ne!(extend(&h0, &base), extend(&start(b"{ }"), &base));
        assert_eq!(from_column(&base), Some(base));
        assert_eq!(from_column(&base[..31]), None);
    }
}
