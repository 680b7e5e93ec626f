//! What an import did, whatever it read: the report every importer returns.

use std::path::PathBuf;

use crate::Outcome;

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// The sessions imported, in the order read.
    pub sessions: Vec<ImportedSession>,
}

/// One imported session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportedSession {
    /// Its id.
    pub id: String,
    /// The file it came from.
    pub file: PathBuf,
    /// Events in the input (after any torn tail was dropped).
    pub events: u64,
    /// What the import did with it: imported, extended or skipped.
    pub outcome: Outcome,
    /// The torn tail dropped, if there was one.
    pub torn: Option<TornTail>,
    /// Lines whose invalid UTF-8 was read as U+FFFD, as DSH reads them.
    pub invalid_utf8_lines: Vec<u64>,
    /// Seqs of the events stored in the current shape DSH's loader migrates them to
    /// (pre-identity messages, old `steering/message`; `docs/FORMATS.md` §1.1).
    pub migrated: Vec<u64>,
}

/// A torn tail: from `line` to the end of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// The first dropped line.
    pub line: u64,
    /// Why that line is not an event.
    pub reason: String,
    /// Lines dropped.
    pub lines_dropped: u64,
}
