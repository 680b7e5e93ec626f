//! The tables in PostgreSQL (`docs/FORMATS.md` §4): created when absent, their layout
//! version checked (bump-and-reject, as the SQLite layouts are).

use postgres::Client;

use crate::{Error, Result};

/// The layout version of the tables this crate writes and reads.
pub const LAYOUT_VERSION: i32 = 4;

/// The table of erasures (§4.2): in the schema, and what layout 3 added to layout 2.
macro_rules! erased_table {
    () => {
        "CREATE TABLE sessdb_erased (
  store_id text NOT NULL,
  session_id text NOT NULL,
  store_created_lsn bigint NOT NULL,
  erased_lsn bigint NOT NULL,
  erased_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (store_id, session_id, store_created_lsn)
);
"
    };
}

/// The whole schema, as created in an empty database.
pub const DDL: &str = concat!(
    "CREATE TABLE sessdb_layout (
  singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version integer NOT NULL
);
CREATE TABLE sessdb_stores (
  store_id text PRIMARY KEY,
  shipped_lsn bigint NOT NULL DEFAULT 0,
  shipped_at timestamptz NOT NULL DEFAULT now(),
  record_lsn bigint,
  record_crc bigint,
  record_epoch bigint
);
CREATE TABLE sessdb_sessions (
  id text PRIMARY KEY,
  owner_store text NOT NULL REFERENCES sessdb_stores(store_id),
  version integer NOT NULL,
  created_at bigint NOT NULL,
  cwd text,
  parent_session text,
  seed_length bigint,
  origin text,
  delegation_depth bigint NOT NULL,
  agent_preset text,
  header_json text NOT NULL,
  events bigint NOT NULL,
  store_created_lsn bigint,
  history bytea NOT NULL,
  last_event bytea
);
",
    erased_table!(),
    "CREATE TABLE sessdb_events (
  session_id text NOT NULL REFERENCES sessdb_sessions(id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  type text NOT NULL,
  time bigint NOT NULL,
  data jsonb,
  data_text text NOT NULL,
  source_event_seqs bigint[],
  surface_op text CHECK (surface_op IN ('append', 'replace')),
  replace_start bigint,
  replace_end bigint,
  ignorable boolean NOT NULL DEFAULT false,
  key_order boolean NOT NULL DEFAULT false,
  inherited boolean NOT NULL DEFAULT false,
  PRIMARY KEY (session_id, seq)
);
CREATE INDEX sessdb_events_by_type ON sessdb_events(type);
CREATE TABLE sessdb_surface (
  session_id text NOT NULL REFERENCES sessdb_sessions(id) ON DELETE CASCADE,
  position bigint NOT NULL,
  seq bigint NOT NULL,
  PRIMARY KEY (session_id, position)
);
CREATE VIEW sessdb_messages AS
  SELECT s.session_id, s.position, s.seq, e.type,
    CASE WHEN e.type IN ('assistant/message', 'tool/result')
      THEN e.data -> 'message' ELSE e.data END AS message
  FROM sessdb_surface s
  JOIN sessdb_events e ON e.session_id = s.session_id AND e.seq = s.seq
  WHERE NOT (e.type = 'assistant/message'
    AND jsonb_array_length(e.data -> 'message' -> 'content') = 0);
"
);

/// What layout 3 adds to layout 2: the sessions a store's lineage erased (§4.2).
const FROM_2: &str = concat!(erased_table!(), "UPDATE sessdb_layout SET version = 3;\n");

/// What layout 4 adds to layout 3: the writer epoch of the record a round remembers (§4.2).
const FROM_3: &str = "ALTER TABLE sessdb_stores ADD COLUMN record_epoch bigint;
UPDATE sessdb_layout SET version = 4;
";

/// Creates the tables in a database that has none; checks the layout of one that has them,
/// bringing layout 2 to 3 (one table added: nothing of layout 2 changes) and 3 to 4 (one
/// column added).
///
/// # Errors
/// `Layout` for another layout version, PostgreSQL errors.
pub fn ensure(client: &mut Client) -> Result<()> {
    let mut tx = client
        .transaction()
        .map_err(Error::pg("begin a transaction"))?;
    // One creator at a time: two first shippers must not both create the tables.
    tx.execute("SELECT pg_advisory_xact_lock(5353444200)", &[])
        .map_err(Error::pg("lock the schema"))?;
    let exists: bool = tx
        .query_one("SELECT to_regclass('sessdb_layout') IS NOT NULL", &[])
        .map_err(Error::pg("look for the tables"))?
        .get(0);
    if !exists {
        tx.batch_execute(DDL)
            .map_err(Error::pg("create the tables"))?;
        tx.execute(
            "INSERT INTO sessdb_layout (version) VALUES ($1)",
            &[&LAYOUT_VERSION],
        )
        .map_err(Error::pg("record the layout version"))?;
    }
    let mut version: i32 = tx
        .query_one("SELECT version FROM sessdb_layout", &[])
        .map_err(Error::pg("read the layout version"))?
        .get(0);
    if version == 2 {
        // A shipper of layout 2 knows nothing of erasures and would ship an erased session
        // again from a restored backup: the bump keeps it out (bump-and-reject).
        tx.batch_execute(FROM_2)
            .map_err(Error::pg("bring the tables from layout 2 to 3"))?;
        version = 3;
    }
    if version == 3 {
        // A shipper of layout 3 would remember records without their epoch, and a store
        // compacted since keeps no tombstone for them: the bump keeps it out.
        tx.batch_execute(FROM_3)
            .map_err(Error::pg("bring the tables from layout 3 to 4"))?;
        version = LAYOUT_VERSION;
    }
    if version != LAYOUT_VERSION {
        return Err(Error::Layout {
            found: version,
            expected: LAYOUT_VERSION,
        });
    }
    tx.commit().map_err(Error::pg("commit the schema"))
}
