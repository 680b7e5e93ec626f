//! The database layout, its version and identity.

use std::path::Path;

use rusqlite::Connection;

use crate::{Error, Result};

/// `PRAGMA user_version` of the layout below. Bump and reject: another value is refused,
/// never migrated — except versions 1 and 2, whose tables import still reads ([`DDL_V1`],
/// [`DDL_V2`]).
pub const SCHEMA_VERSION: i64 = 3;

/// The first layout: [`DDL_V1`].
pub const SCHEMA_VERSION_V1: i64 = 1;

/// The second layout: [`DDL_V2`].
pub const SCHEMA_VERSION_V2: i64 = 2;

/// `PRAGMA application_id`: ASCII `SSDB`.
pub const APPLICATION_ID: i32 = 0x5353_4442;

/// The sessions table, the same in every version.
macro_rules! sessions_table {
    () => {
        "CREATE TABLE sessions (
  id TEXT NOT NULL PRIMARY KEY,
  version INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  cwd TEXT,
  parent_session TEXT,
  seed_length INTEGER,
  origin TEXT,
  delegation_depth INTEGER NOT NULL,
  agent_preset TEXT
) STRICT;
"
    };
}

/// The events table of versions 1 and 2: `surface_op` as JSON text.
macro_rules! events_table_v1 {
    () => {
        "CREATE TABLE events (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  time INTEGER NOT NULL,
  data TEXT NOT NULL,
  source_event_seqs TEXT,
  surface_op TEXT,
  ignorable INTEGER CHECK (ignorable IS NULL OR ignorable = 1),
  key_order INTEGER CHECK (key_order IS NULL OR key_order = 1),
  PRIMARY KEY (session_id, seq)
) STRICT;"
    };
}

/// The objects version 2 added: two indexes, the surface, the `messages` view.
macro_rules! surface_v2 {
    () => {
        "
CREATE INDEX events_by_type ON events(type);
CREATE INDEX events_by_session_type ON events(session_id, type);
CREATE TABLE surface (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  PRIMARY KEY (session_id, position)
) STRICT;"
    };
}

/// The whole schema of version 1.
pub const DDL_V1: &str = concat!(sessions_table!(), events_table_v1!());

/// The whole schema of version 2: version 1's tables, two indexes, each session's surface in
/// order and a `messages` view of it.
pub const DDL_V2: &str = concat!(
    sessions_table!(),
    events_table_v1!(),
    surface_v2!(),
    "
CREATE VIEW messages AS
  SELECT s.session_id, s.position, s.seq, e.type,
    CASE WHEN e.type IN ('assistant/message', 'tool/result')
      THEN json_extract(e.data, '$.message') ELSE e.data END AS message
  FROM surface s JOIN events e ON e.session_id = s.session_id AND e.seq = s.seq
  WHERE NOT (e.type = 'assistant/message'
    AND json_array_length(e.data, '$.message.content') = 0);"
);

/// The whole schema (version 3), for the queries people write: `surface_op` is plain text
/// (`'append'` or `'replace'`, the replaced range in `replace_start` and `replace_end`), a
/// fork's rows for the events it inherited carry `inherited = 1`, and the `messages` view of
/// the surface (the messages `Session::messages` derives) has the message's `role` and its
/// `text` (a string content, or its text blocks joined).
pub const DDL: &str = concat!(
    sessions_table!(),
    "CREATE TABLE events (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  time INTEGER NOT NULL,
  data TEXT NOT NULL,
  source_event_seqs TEXT,
  surface_op TEXT CHECK (surface_op IS NULL OR surface_op IN ('append', 'replace')),
  replace_start INTEGER,
  replace_end INTEGER,
  ignorable INTEGER CHECK (ignorable IS NULL OR ignorable = 1),
  key_order INTEGER CHECK (key_order IS NULL OR key_order = 1),
  inherited INTEGER CHECK (inherited IS NULL OR inherited = 1),
  PRIMARY KEY (session_id, seq),
  CHECK ((surface_op = 'replace') = (replace_start IS NOT NULL AND replace_end IS NOT NULL)
    AND (replace_start IS NULL) = (replace_end IS NULL))
) STRICT;",
    surface_v2!(),
    "
CREATE VIEW messages AS
  SELECT session_id, position, seq, type, message,
    json_extract(message, '$.role') AS role,
    CASE json_type(message, '$.content')
      WHEN 'text' THEN json_extract(message, '$.content')
      WHEN 'array' THEN (SELECT group_concat(json_extract(b.value, '$.text'), '')
        FROM json_each(message, '$.content') AS b
        WHERE json_extract(b.value, '$.type') = 'text')
    END AS text
  FROM (SELECT s.session_id, s.position, s.seq, e.type,
      CASE WHEN e.type IN ('assistant/message', 'tool/result')
        THEN json_extract(e.data, '$.message') ELSE e.data END AS message
    FROM surface s JOIN events e ON e.session_id = s.session_id AND e.seq = s.seq
    WHERE NOT (e.type = 'assistant/message'
      AND json_array_length(e.data, '$.message.content') = 0));"
);

pub(crate) fn sqlite_err(file: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |source| Error::Sqlite {
        file: file.to_owned(),
        source,
    }
}

/// SQLite errors reading an *input*: a file that is not a database, or a damaged one, is an
/// input refused (like a damaged JSONL file), not an I/O failure.
pub(crate) fn input_err(file: &Path) -> impl Fn(rusqlite::Error) -> Error + '_ {
    move |source| match source.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => Error::UnsupportedFormat {
            file: file.to_owned(),
            found: "a file that is not a SQLite database".into(),
            expected: "a sessdb SQLite export".into(),
        },
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => Error::Corrupt {
            file: file.to_owned(),
            line: None,
            problem: source.to_string(),
        },
        _ => Error::Sqlite {
            file: file.to_owned(),
            source,
        },
    }
}

/// Every schema object as `(type, name, sql)`, whitespace-normalized, sorted.
pub(crate) fn schema_objects(
    conn: &Connection,
    file: &Path,
) -> Result<Vec<(String, String, String)>> {
    let mut stmt = conn
        .prepare("SELECT type, name, coalesce(sql, '') FROM sqlite_schema ORDER BY type, name")
        .map_err(sqlite_err(file))?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(sqlite_err(file))?;
    rows.map(|r| {
        r.map(|(t, n, s)| (t, n, s.split_whitespace().collect::<Vec<_>>().join(" ")))
            .map_err(sqlite_err(file))
    })
    .collect()
}

/// The objects a database made by `ddl` has.
pub(crate) fn reference_objects(ddl: &str) -> Result<Vec<(String, String, String)>> {
    let here = Path::new(":memory:");
    let conn = Connection::open_in_memory().map_err(sqlite_err(here))?;
    conn.execute_batch(ddl).map_err(sqlite_err(here))?;
    schema_objects(&conn, here)
}

/// `FILE-wal`.
pub(crate) fn wal_path(file: &Path) -> std::path::PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push("-wal");
    std::path::PathBuf::from(name)
}

/// A `file:` URI opening `file` read-only and immutable, the path percent-encoded.
pub(crate) fn immutable_uri(file: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_owned());
    let mut uri = String::from("file:");
    for &b in abs.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push_str("?mode=ro&immutable=1");
    uri
}
