//! The kinds of damage a decoder or the recovery scan can find, as `Error::Corruption`
//! reports them.

/// What is wrong with a log or a checkpoint, as `Error::Corruption` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptionKind {
    /// A frame header was cut short inside the log.
    #[error("frame header cut short")]
    ShortHeader,
    /// The length field fails its checksum or exceeds the maximum record size.
    #[error("record length fails its check")]
    BadLength,
    /// A frame runs past the end of its segment.
    #[error("record runs past the end of its segment")]
    Incomplete,
    /// The frame checksum does not match.
    #[error("record checksum mismatch")]
    ChecksumMismatch,
    /// An event's own checksum does not match: the bytes a read would hand out are damaged.
    #[error("event checksum mismatch")]
    EventChecksumMismatch,
    /// Checksums hold but the record kind is unknown.
    #[error("unknown record kind {0}")]
    UnknownKind(u8),
    /// The segment header is damaged or of another version.
    #[error("bad segment header: {0}")]
    SegmentHeader(SegmentHeaderError),
    /// The segment's first LSN does not continue the previous segment.
    #[error("segment does not continue the log (expected first LSN {expected})")]
    SegmentGap {
        /// The LSN the segment should start at.
        expected: u64,
    },
    /// A record's payload does not decode.
    #[error("record payload does not decode: {0}")]
    BadPayload(&'static str),
    /// A record decodes but contradicts the log before it (unknown session, seq gap,
    /// an event the acceptance function refuses).
    #[error("record contradicts the log: {0}")]
    Inconsistent(&'static str),
    /// The bytes after the frame are not zero: something follows a damaged record.
    #[error("damaged record followed by data")]
    DataAfterDamage,
    /// A checkpoint's run of one session's locations fails its CRC (found when the session's
    /// locations are first used; `verify` checks every run).
    #[error("a checkpoint's location run fails its checksum")]
    CheckpointLocations,
    /// A checkpoint's entry of one session (header and state, layout 3) fails its CRC or does
    /// not decode (found when the session is first read; `verify` checks every entry).
    #[error("a checkpoint's session entry is damaged")]
    CheckpointEntry,
    /// A block of a checkpoint's index (layout 3) fails its CRC (found when a slot of it is
    /// first read; `verify` reads every block).
    #[error("a checkpoint's index block fails its checksum")]
    CheckpointIndex,
    /// A compacted segment's footer or run table (what maps its LSNs) is damaged.
    #[error("a compacted segment's run table is damaged: {0}")]
    RunTable(&'static str),
    /// The log ends, or holds only zeros, before a position a checkpoint vouches for: records
    /// that were durable are missing from here on.
    #[error("the log ends here, but a checkpoint vouches for records up to LSN {vouched_to}")]
    MissingRecords {
        /// The LSN up to which a checkpoint vouches for the log.
        vouched_to: u64,
    },
}

/// Why a segment header is not acceptable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum SegmentHeaderError {
    /// Fewer than the 40 bytes of a segment header.
    #[error("segment header is short")]
    Short,
    /// The magic is wrong.
    #[error("bad segment magic")]
    BadMagic,
    /// The header checksum fails.
    #[error("segment header checksum mismatch")]
    BadChecksum,
    /// A version this code does not read.
    #[error("segment format version {0} is not supported")]
    UnsupportedVersion(u16),
}
