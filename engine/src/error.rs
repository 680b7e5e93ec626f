//! The crate's one error type.

use crate::codec::CorruptionKind;
use crate::json::JsonError;

/// Everything that can go wrong in `sessdb`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An event was refused by the acceptance function; the session is unchanged.
    #[error("session {session:?}: event seq {seq} rejected by rule {}: {violation}", violation.rule())]
    Rejected {
        /// The session the event was for.
        session: String,
        /// The seq of the refused event.
        seq: u64,
        /// The rule broken and how.
        violation: Violation,
    },
    /// An event envelope (a JSONL line or a dynamic append) is malformed.
    #[error("invalid event envelope{}: {problem}", seq.map(|s| format!(" (seq {s})")).unwrap_or_default())]
    InvalidEnvelope {
        /// The seq, when it could be read.
        seq: Option<u64>,
        /// What is wrong.
        problem: String,
    },
    /// A session header is malformed.
    #[error("invalid session header: {problem}")]
    InvalidHeader {
        /// What is wrong.
        problem: String,
    },
    /// A header or file declares a format version sessdb does not read.
    #[error("unsupported session format version {found} (sessdb reads version {expected})")]
    UnsupportedFormat {
        /// The version found, as written.
        found: String,
        /// The version sessdb reads.
        expected: u64,
    },
    /// A segment of the store is in a format version this sessdb does not read: the store was
    /// written by another version of sessdb. Not damage: nothing is repaired or salvaged.
    #[error(
        "{file}: segment format version {found}, which this sessdb does not read (it reads version {expected}): the store was written by another sessdb version; export it with that version and import the export here"
    )]
    UnsupportedStore {
        /// The segment file.
        file: String,
        /// Its format version.
        found: u16,
        /// The version this sessdb reads.
        expected: u16,
    },
    /// A log-only type was needed but a surface type (or an empty string) was given.
    #[error("invalid event type {type_name:?}: {problem}")]
    InvalidType {
        /// The type string given.
        type_name: String,
        /// Why it cannot be used here.
        problem: &'static str,
    },
    /// A session with this id exists already.
    #[error("a session {id:?} exists already")]
    SessionExists {
        /// The id.
        id: String,
    },
    /// A directory that holds other files and no store: a store is created only in a new or
    /// empty directory (a typo must not turn a project or a home directory into a store).
    #[error(
        "{path} holds no sessdb store and is not empty: a store is created only in a new or empty directory"
    )]
    NotAStore {
        /// The directory.
        path: String,
    },
    /// No session has this id.
    #[error("no session {id:?}")]
    SessionNotFound {
        /// The id.
        id: String,
    },
    /// An I/O operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file or directory.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The store holds what a salvage that was interrupted left (its `SALVAGING` marker) and
    /// its log does not read as one: finish the salvage (`sessdb repair --salvage`, or
    /// [`StoreOptions::salvage`](crate::StoreOptions)) to open it.
    #[error(
        "a salvage of this store was interrupted (its SALVAGING marker is there) and the log reads as damaged; a salvage run again finishes it (the damage found: {damage})"
    )]
    SalvageInterrupted {
        /// The damage the open found.
        damage: Box<Error>,
    },
    /// A file could not be written for want of disk space: what it needed and what was free.
    /// Nothing is lost (the file was written under a temp name, now removed); the store is
    /// as it was before the file.
    #[error(
        "{op} {path}: the disk is full: this file needs {needed} bytes and {} are free; free that much (or move the store) and run it again",
        available.map_or_else(|| "an unknown number of bytes".to_owned(), |a| a.to_string())
    )]
    NoSpace {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: String,
        /// The file's size.
        needed: u64,
        /// Bytes free on its file system, when known.
        available: Option<u64>,
    },
    /// Stored bytes are damaged.
    #[error("corruption in {segment} at byte {offset}: {kind}")]
    Corruption {
        /// The file (segment or checkpoint) holding the damage.
        segment: String,
        /// Byte offset within that file.
        offset: u64,
        /// What is wrong.
        kind: CorruptionKind,
    },
    /// A read-only view's older segment is no longer the file the view listed when it opened:
    /// the writer's compaction merged it, or a salvage replaced it, before the view first read
    /// it (a read-only view opens its older segments at their first use, `docs/DESIGN.md`
    /// §3.6). The `Store` methods that read build the view again from the files as they are,
    /// as [`Store::refresh`](crate::Store::refresh) does, and read once more; this reaches a
    /// caller only when that could not be done (a salvage is rewriting the store).
    #[error(
        "{segment}: replaced since this read-only view listed it (a compaction or a salvage rewrote the store's older segments); refresh the view and read again"
    )]
    Overtaken {
        /// The segment file.
        segment: String,
    },
    /// Another writer holds the store.
    #[error(
        "the store is locked by another writer (lock file {lock_file}); open it read-only or stop the other writer"
    )]
    Locked {
        /// The lock file.
        lock_file: String,
    },
    /// An earlier write or sync failed; the store refuses writes until it is reopened.
    #[error("the store is poisoned by an earlier failed write ({cause}); reopen it")]
    Poisoned {
        /// The failure that poisoned it.
        cause: String,
    },
    /// A write was attempted on a store opened read-only.
    #[error("the store is open read-only")]
    ReadOnly,
    /// The store was closed.
    #[error("the store is closed")]
    Closed,
    /// A batch of events encodes to more than the maximum record size.
    #[error("the batch encodes to {bytes} bytes, over the maximum record size of {limit}")]
    RecordTooLarge {
        /// Encoded size.
        bytes: usize,
        /// The limit.
        limit: u32,
    },
    /// A fork was refused (DSH `SessionForkError`).
    #[error("fork refused ({code}): {detail}")]
    Fork {
        /// The DSH error code.
        code: ForkErrorCode,
        /// What happened.
        detail: String,
    },
}

/// The codes of DSH v0 `SessionForkError` that sessdb can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ForkErrorCode {
    /// The source session does not exist.
    SessionNotFound,
    /// The child id is taken.
    SessionAlreadyExists,
    /// The boundary is not a seq of the source.
    InvalidBoundary,
    /// The boundary lies inside an open turn.
    OpenTurn,
}

impl std::fmt::Display for ForkErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::SessionNotFound => "SESSION_NOT_FOUND",
            Self::SessionAlreadyExists => "SESSION_ALREADY_EXISTS",
            Self::InvalidBoundary => "INVALID_BOUNDARY",
            Self::OpenTurn => "OPEN_TURN",
        })
    }
}

/// One variant per acceptance rule (`docs/DESIGN.md` §2.1).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// The seq is not the session's next seq.
    #[error("expected seq {expected}")]
    SeqNotContiguous {
        /// The session's next seq.
        expected: u64,
    },
    /// The event type is the empty string on an event that is not ignorable.
    #[error("the event type is empty (allowed only on an ignorable event, as DSH loads it)")]
    EmptyType,
    /// The event type is longer than the data limit (`Limits::max_data_bytes`).
    #[error("the event type is {len} bytes long, over the limit of {limit}")]
    TypeTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A type outside DSH's v0 vocabulary on an event not marked `"ignorable":true`: DSH's
    /// loader refuses the whole session for it (reference §3.5), so it is refused here.
    #[error(
        "event type {type_name:?} is not in DSH's v0 vocabulary: mark the event \"ignorable\":true (DSH's loader refuses a session holding it otherwise)"
    )]
    UnknownType {
        /// The event type.
        type_name: String,
    },
    /// A retired DSH type or reason (`request/header-delta`, `request/header` with reason
    /// `fallback`).
    #[error("legacy vocabulary is refused: {what}")]
    LegacyVocabulary {
        /// What was legacy.
        what: &'static str,
    },
    /// `data` is not lossless JSON within the limits.
    #[error("data is not lossless JSON: {0}")]
    InvalidData(JsonError),
    /// A log-only type carries `surfaceOp`.
    #[error("type {type_name:?} is log-only and may not carry surfaceOp")]
    SurfaceOpOnLogType {
        /// The event type.
        type_name: String,
    },
    /// A log-only type carries `sourceEventSeqs`.
    #[error("type {type_name:?} is log-only and may not carry sourceEventSeqs")]
    SourcesOnLogType {
        /// The event type.
        type_name: String,
    },
    /// A surface type without `surfaceOp`.
    #[error("type {type_name:?} requires a surfaceOp")]
    SurfaceOpMissing {
        /// The event type.
        type_name: String,
    },
    /// `sourceEventSeqs: []` on a type other than `assistant/message`.
    #[error("empty sourceEventSeqs is allowed only on assistant/message")]
    EmptySources,
    /// A source seq appears twice.
    #[error("sourceEventSeqs lists {source_seq} twice")]
    DuplicateSource {
        /// The repeated seq.
        source_seq: u64,
    },
    /// A source seq is not before the event's own seq.
    #[error("sourceEventSeqs member {source_seq} is not before the event's own seq")]
    SourceNotEarlier {
        /// The offending seq.
        source_seq: u64,
    },
    /// A replace endpoint is not on the current surface.
    #[error("replace {which} {endpoint} is not on the current surface")]
    ReplaceEndpointNotOnSurface {
        /// `"start"` or `"end"`.
        which: &'static str,
        /// The endpoint seq.
        endpoint: u64,
    },
    /// The replace start comes after its end in surface order.
    #[error("replace start {start} comes after end {end} in surface order")]
    ReplaceOutOfOrder {
        /// The start seq.
        start: u64,
        /// The end seq.
        end: u64,
    },
    /// The replacement does not cite a shadowed seq.
    #[error("replacement must cite every shadowed seq in sourceEventSeqs; {missing} is missing")]
    ReplaceSourcesIncomplete {
        /// The first shadowed seq not cited.
        missing: u64,
    },
    /// A `tool/result` replacement shadows other than exactly one node.
    #[error("a tool/result replacement must shadow exactly one node, not {shadowed}")]
    ToolResultReplaceWidth {
        /// How many nodes the range covers.
        shadowed: usize,
    },
    /// A `tool/result` replacement shadows a node that is not a `tool/result`.
    #[error(
        "a tool/result replacement must shadow a tool/result, but seq {target} is {target_type:?}"
    )]
    ToolResultReplaceTarget {
        /// The shadowed seq.
        target: u64,
        /// Its type.
        target_type: String,
    },
    /// A `tool/result` replacement changes more than the tool-result block's content.
    #[error(
        "a tool/result replacement may change only the tool-result block's content (seq {target} differs elsewhere)"
    )]
    ToolResultReplaceChanged {
        /// The shadowed seq.
        target: u64,
    },
    /// A surface event's message does not have the DSH v0 shape.
    #[error("message shape: {problem}")]
    MessageShape {
        /// The first failed check.
        problem: &'static str,
    },
    /// A `request/header` event does not have the DSH v0 shape.
    #[error("request/header shape: {problem}")]
    RequestHeaderShape {
        /// The first failed check.
        problem: &'static str,
    },
    /// A turn or step marker or a `tool/call` that DSH's loader refuses (its checks of
    /// pre-react-loop shapes, and the fields its restore reads).
    #[error("{type_name} shape: {problem}")]
    MarkerShape {
        /// The event type.
        type_name: &'static str,
        /// The first failed check.
        problem: &'static str,
    },
}

impl Violation {
    /// A short stable name of the rule, for messages and tooling.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::SeqNotContiguous { .. } => "seq-contiguity",
            Self::EmptyType => "type-non-empty",
            Self::TypeTooLong { .. } => "type-length",
            Self::UnknownType { .. } => "unknown-type-needs-ignorable",
            Self::LegacyVocabulary { .. } => "legacy-vocabulary",
            Self::InvalidData(_) => "lossless-json",
            Self::SurfaceOpOnLogType { .. } | Self::SourcesOnLogType { .. } => {
                "surface-metadata-only-on-surface-types"
            }
            Self::SurfaceOpMissing { .. } => "surface-op-required",
            Self::EmptySources => "empty-sources-only-on-assistant",
            Self::DuplicateSource { .. } => "sources-unique",
            Self::SourceNotEarlier { .. } => "sources-earlier",
            Self::ReplaceEndpointNotOnSurface { .. } => "replace-endpoints-on-surface",
            Self::ReplaceOutOfOrder { .. } => "replace-endpoints-ordered",
            Self::ReplaceSourcesIncomplete { .. } => "replace-cites-shadowed",
            Self::ToolResultReplaceWidth { .. }
            | Self::ToolResultReplaceTarget { .. }
            | Self::ToolResultReplaceChanged { .. } => "tool-result-replacement",
            Self::MessageShape { .. } => "message-shape",
            Self::RequestHeaderShape { .. } => "request-header-shape",
            Self::MarkerShape { .. } => "marker-shape",
        }
    }
}

impl Error {
    /// An I/O error with its context.
    pub(crate) fn io(op: &'static str, path: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    /// A failed write of a file of `needed` bytes: [`Error::NoSpace`] when the disk is full,
    /// with what `storage` has free (asked now: a caller first removes its partial file), else
    /// [`Error::Io`].
    pub(crate) fn write_failed(
        storage: &dyn crate::storage::Storage,
        op: &'static str,
        path: impl Into<String>,
        source: std::io::Error,
        needed: u64,
    ) -> Self {
        let path = path.into();
        if source.kind() != std::io::ErrorKind::StorageFull {
            return Self::io(op, path, source);
        }
        let available = storage
            .available_bytes(crate::storage::parent_dir(&path))
            .ok()
            .flatten();
        Self::NoSpace {
            op,
            path,
            needed,
            available,
        }
    }

    /// Corruption of `kind` at `offset` of the file `segment`.
    pub(crate) fn corruption(segment: &str, offset: u64, kind: CorruptionKind) -> Self {
        Self::Corruption {
            segment: segment.to_owned(),
            offset,
            kind,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
