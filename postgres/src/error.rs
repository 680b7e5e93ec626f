//! The crate's one error type.

/// Everything that can go wrong shipping to or pulling from PostgreSQL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// PostgreSQL failed (connection, query, constraint).
    #[error("postgres: {context}: {source}")]
    Postgres {
        /// What was being done.
        context: &'static str,
        /// The error.
        source: postgres::Error,
    },
    /// The database holds sessdb tables of another layout version.
    #[error(
        "postgres: the sessdb tables have layout version {found}; this sessdb reads and writes version {expected}"
    )]
    Layout {
        /// The version found.
        found: i32,
        /// The version this crate uses.
        expected: i32,
    },
    /// Another shipper ships this store (it holds the store's lock in PostgreSQL).
    #[error(
        "store {store_id} is already being shipped by another process (its PostgreSQL lock is held)"
    )]
    Locked {
        /// The store's ship id.
        store_id: String,
    },
    /// PostgreSQL holds more of a session than the store: the store is not the one that
    /// shipped it (or lost events since).
    #[error("session {session:?}: {problem}")]
    Conflict {
        /// The session.
        session: String,
        /// What differs.
        problem: String,
    },
    /// A session asked for is not in PostgreSQL.
    #[error("session {0:?} is not in PostgreSQL")]
    NotFound(String),
    /// A session in PostgreSQL does not read back as events.
    #[error("session {session:?} seq {seq}: a row PostgreSQL holds is malformed: {problem}")]
    BadRow {
        /// The session.
        session: String,
        /// The seq of the row.
        seq: i64,
        /// What is wrong.
        problem: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] sessdb::Error),
    /// The import of pulled sessions refused them.
    #[error(transparent)]
    Import(#[from] sessdb_formats::Error),
    /// The store's ship id file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

impl Error {
    /// A mapper from PostgreSQL's error, naming what was being done.
    pub(crate) fn pg(context: &'static str) -> impl Fn(postgres::Error) -> Error {
        move |source| Error::Postgres { context, source }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
