//! The crate's one error type.

/// Everything that can go wrong shipping to or pulling from PostgreSQL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// PostgreSQL failed (connection, query, constraint).
    #[error("postgres: {context}: {}", describe(source))]
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
    /// What PostgreSQL holds of a session is not what the shipper wrote: its rows or its
    /// header were changed, reordered, added or removed since (`docs/FORMATS.md` §4.3).
    #[error("session {session:?}: PostgreSQL does not hold it as it was shipped: {problem}")]
    Tampered {
        /// The session.
        session: String,
        /// What disagrees.
        problem: String,
    },
    /// The connection string's TLS settings cannot be honoured (`sslmode`, `sslrootcert`).
    #[error("postgres: TLS: {problem}")]
    Tls {
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

/// PostgreSQL's error as the server said it (severity, SQLSTATE code, message, detail, hint)
/// or, for a client-side one (connecting, I/O), with its whole source chain: the `postgres`
/// crate's own text alone is often just "db error".
pub(crate) fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut out = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
        if let Some(d) = db.detail() {
            out.push_str(&format!(" (detail: {d})"));
        }
        if let Some(h) = db.hint() {
            out.push_str(&format!(" (hint: {h})"));
        }
        return out;
    }
    let mut out = e.to_string();
    let mut at: Option<&dyn std::error::Error> = std::error::Error::source(e);
    while let Some(cause) = at {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        at = cause.source();
    }
    out
}

impl Error {
    /// A mapper from PostgreSQL's error, naming what was being done.
    pub(crate) fn pg(context: &'static str) -> impl Fn(postgres::Error) -> Error {
        move |source| Error::Postgres { context, source }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
