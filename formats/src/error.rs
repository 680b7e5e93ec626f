//! The formats crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong exporting or importing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input event or header was refused; nothing of that session was stored.
    #[error("{}: {source}", place(file, *line))]
    Invalid {
        /// The file (or database) read.
        file: PathBuf,
        /// The line (JSONL) or row id (SQLite), when known.
        line: Option<u64>,
        /// The engine's error: the rule and the seq.
        source: sessdb::Error,
    },
    /// A database row was refused; nothing of that session was stored.
    #[error("{} table {table} row {rowid}: {source}", file.display())]
    InvalidRow {
        /// The database file.
        file: PathBuf,
        /// The table.
        table: &'static str,
        /// The row's rowid.
        rowid: i64,
        /// The engine's error: the rule and the seq.
        source: sessdb::Error,
    },
    /// The input is damaged in its committed region (not a torn tail).
    #[error("{}: corrupt: {problem}", place(file, *line))]
    Corrupt {
        /// The file.
        file: PathBuf,
        /// The first bad line, when known.
        line: Option<u64>,
        /// What is wrong.
        problem: String,
    },
    /// The input declares a format version sessdb does not read.
    #[error("{}: unsupported format {found} (sessdb reads {expected})", file.display())]
    UnsupportedFormat {
        /// The file.
        file: PathBuf,
        /// What it declares.
        found: String,
        /// What sessdb reads.
        expected: String,
    },
    /// The store already holds a session with this id whose header or events differ.
    #[error("{}: session {id:?} conflicts with the stored one: {problem}", file.display())]
    Conflict {
        /// The file (or database) read.
        file: PathBuf,
        /// The session id.
        id: String,
        /// What differs.
        problem: String,
    },
    /// The directory layout is not a DSH sessions layout sessdb can use.
    #[error("{}: {problem}", path.display())]
    Layout {
        /// The path concerned.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// An I/O operation failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// SQLite failed.
    #[cfg(feature = "sqlite")]
    #[error("{}: sqlite: {source}", file.display())]
    Sqlite {
        /// The database file.
        file: PathBuf,
        /// The error.
        source: rusqlite::Error,
    },
    /// The store failed (outside validation).
    #[error(transparent)]
    Store(#[from] sessdb::Error),
}

fn place(file: &std::path::Path, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{}:{l}", file.display()),
        None => file.display().to_string(),
    }
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
