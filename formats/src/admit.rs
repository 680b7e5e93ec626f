//! The one import pipeline every importer ends in (`docs/FORMATS.md` §1.1): a session read
//! from any source — JSONL lines, a sessdb SQLite export, a DSH database — goes through the
//! same steps in the same order, so every importer decides a session alike:
//!
//! 1. **migrate**: DSH's read-time migrations of legacy shapes ([`crate::legacy`]);
//! 2. **vocabulary**: an event type outside DSH v0's vocabulary must carry `ignorable`, as
//!    DSH's loader requires (an unsupported format, named at the event's place);
//! 3. **target**: the dry run or the store, whose acceptance function decides every event
//!    (`Rejected`, placed at the event's line or row), and which imports, extends, skips or
//!    finds a conflict.
//!
//! The readers decide only what their format alone has: lines, torn tails, packed rows,
//! column types; the envelope's field rules are the engine's ([`sessdb::event::envelope`]).

use std::path::Path;

use sessdb::{Error as StoreError, Event, SessionHeader};

use crate::report::ImportedSession;
use crate::target::{Refusal, RestoreTarget};
use crate::{Error, Result};

/// Where a session's header and events were read, to place a refusal.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Places<'a> {
    /// A JSONL file: the header is line 1, event `i` is on line `lines[i]`.
    Lines(&'a [u64]),
    /// A database: the header's row in `sessions`, event `i` from row `events[i]` of
    /// `events`.
    #[cfg_attr(
        not(feature = "sqlite"),
        allow(dead_code, reason = "the database readers' alone")
    )]
    Rows {
        /// The `sessions` row.
        header: i64,
        /// The `events` row of each event.
        events: &'a [i64],
    },
    /// A source without lines or rows to name (the refusal names the seq).
    Seqs,
}

impl Places<'_> {
    /// The error refusing `source` at the header's place.
    fn header_error(self, file: &Path, source: StoreError) -> Error {
        match self {
            Places::Lines(_) => Error::Invalid {
                file: file.to_owned(),
                line: Some(1),
                source,
            },
            Places::Rows { header, .. } => Error::InvalidRow {
                file: file.to_owned(),
                table: "sessions",
                rowid: header,
                source,
            },
            Places::Seqs => Error::Invalid {
                file: file.to_owned(),
                line: None,
                source,
            },
        }
    }

    /// The error refusing `source` at event `seq`'s place.
    fn event_error(self, file: &Path, seq: u64, source: StoreError) -> Error {
        let index = usize::try_from(seq).ok();
        match self {
            Places::Lines(lines) => Error::Invalid {
                file: file.to_owned(),
                line: index.and_then(|i| lines.get(i)).copied(),
                source,
            },
            Places::Rows { events, .. } => Error::InvalidRow {
                file: file.to_owned(),
                table: "events",
                rowid: index.and_then(|i| events.get(i)).copied().unwrap_or(0),
                source,
            },
            Places::Seqs => Error::Invalid {
                file: file.to_owned(),
                line: None,
                source,
            },
        }
    }

    /// Event `seq`'s place in words.
    fn describe(self, seq: u64) -> String {
        let index = usize::try_from(seq).ok();
        match self {
            Places::Lines(lines) => match index.and_then(|i| lines.get(i)) {
                Some(line) => format!("line {line}"),
                None => format!("seq {seq}"),
            },
            Places::Rows { events, .. } => match index.and_then(|i| events.get(i)) {
                Some(row) => format!("events row {row}"),
                None => format!("seq {seq}"),
            },
            Places::Seqs => format!("seq {seq}"),
        }
    }
}

/// Takes one session read from `file` through the pipeline into `target`. The report's
/// reader-specific parts (`torn`, `invalid_utf8_lines`) are left empty for the reader.
///
/// # Errors
/// `UnsupportedFormat` for an event outside the vocabulary without `ignorable`, `Invalid` /
/// `InvalidRow` for a refusal of the acceptance function, `Conflict`, store errors.
pub(crate) fn admit(
    target: &dyn RestoreTarget,
    file: &Path,
    header: SessionHeader,
    mut events: Vec<Event>,
    places: Places<'_>,
) -> Result<ImportedSession> {
    let migrated = crate::legacy::migrate(&header.id, &mut events);
    if let Some(e) = events.iter().find(|e| e.outside_vocabulary()) {
        return Err(Error::UnsupportedFormat {
            file: file.to_owned(),
            found: format!(
                "event type {:?} without \"ignorable\":true at {}",
                e.event_type(),
                places.describe(e.seq())
            ),
            expected: "the DSH v0 event vocabulary".into(),
        });
    }
    let id = header.id.clone();
    let count = events.len() as u64;
    let outcome = target.restore(header, events).map_err(|e| match e {
        Refusal::Conflict(problem) => Error::Conflict {
            file: file.to_owned(),
            id: id.clone(),
            problem,
        },
        Refusal::Store(e @ StoreError::Rejected { seq, .. }) => places.event_error(file, seq, e),
        Refusal::Store(
            e @ (StoreError::InvalidHeader { .. } | StoreError::SessionExists { .. }),
        ) => places.header_error(file, e),
        Refusal::Store(other) => Error::Store(other),
    })?;
    Ok(ImportedSession {
        id,
        file: file.to_owned(),
        events: count,
        outcome,
        torn: None,
        invalid_utf8_lines: Vec::new(),
        migrated,
    })
}

/// One session read from a source other than this crate's formats (another engine's
/// tables): its header and its events, event `i` with seq `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceSession {
    /// The header.
    pub header: SessionHeader,
    /// The events in seq order.
    pub events: Vec<Event>,
}

/// Imports sessions read from any source through the one pipeline every importer uses (DSH's
/// migrations, the vocabulary rule, the acceptance function, skip / extend / conflict): all
/// of them validated first, then stored, so a refused or conflicting session stores nothing.
/// `source` names the input in errors and in the report.
///
/// # Errors
/// As [`crate::jsonl::import_jsonl`]; a refusal names the seq and the rule.
pub fn import_sessions(
    store: &sessdb::Store,
    source: &Path,
    sessions: Vec<SourceSession>,
) -> Result<crate::ImportReport> {
    let dry = crate::target::DryRun::new(store);
    for s in &sessions {
        admit(
            &dry,
            source,
            s.header.clone(),
            s.events.clone(),
            Places::Seqs,
        )?;
    }
    let mut report = crate::ImportReport::default();
    for s in sessions {
        report
            .sessions
            .push(admit(store, source, s.header, s.events, Places::Seqs)?);
    }
    Ok(report)
}
