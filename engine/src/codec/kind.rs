//! The record kinds: the frame header's kind byte (`docs/FORMAT.md` §3).

/// The kinds of records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RecordKind {
    /// A session was created: header and seed events.
    Create = 1,
    /// A batch of events was appended to a session.
    Append = 2,
    /// A session was forked: the child's header, its parent and inherited length, and its
    /// first own events.
    Fork = 3,
    /// A session was deleted.
    Delete = 4,
    /// Space salvage took over: a damaged record, or an intact one of a session cut at its
    /// last intact event. The payload is zeros; replay skips it. Keeping the space (rather
    /// than cutting the file) keeps every other record at its LSN, so sessions salvage keeps
    /// stay byte for byte where their locations say.
    Void = 5,
    /// A writer's epoch (`docs/FORMAT.md` §4.5): the random id a writable open writes under,
    /// before its first record and first in every segment it creates. Replay skips it;
    /// compaction keeps it. It is what a consumer's remembered position is confirmed by once
    /// compaction has left the remembered record out (`Store::holds_record`).
    Epoch = 6,
}

impl RecordKind {
    /// The kind with this byte.
    pub fn from_byte(b: u8) -> Option<Self> {
        match b {
            1 => Some(Self::Create),
            2 => Some(Self::Append),
            3 => Some(Self::Fork),
            4 => Some(Self::Delete),
            5 => Some(Self::Void),
            6 => Some(Self::Epoch),
            _ => None,
        }
    }
}
