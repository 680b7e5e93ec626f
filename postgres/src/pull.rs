//! Pulling sessions from PostgreSQL into a store (`docs/FORMATS.md` §4.3): read back as
//! events and checked against what the shipper wrote beside them (the history digests, the
//! count, the row's two forms of `data`, the header columns), imported through the one
//! pipeline every importer uses (so validated by the acceptance function, incremental and
//! idempotent), then owned by the pulling store — only if PostgreSQL still holds what was
//! read, in the transaction that moves the ownership.

use std::path::Path;

use postgres::Client;

use crate::ship::Connection;
use sessdb::event::envelope;
use sessdb::{Event, SessionHeader, Store, SurfaceOp};
use sessdb_formats::{ImportReport, SourceSession, import_sessions};

use crate::rows::jsonb_holds;
use crate::{Error, Result, digest, schema};

/// How often the ownership move is tried again when the old owner shipped more of a session
/// between the read and the move (each try reads and imports only what was added).
const MOVE_ATTEMPTS: usize = 5;

/// Brings `ids` (and the parents their forks need, first) from PostgreSQL into `store`,
/// then makes `store_id` their owner: the shipper of the store they came from stops shipping
/// them, this store's ships them from here on. [`Pull::read`] then [`Pull::into_store`].
///
/// # Errors
/// As [`Pull::read`] and [`Pull::into_store`].
pub fn pull(
    conn: &mut Connection,
    store: &Store,
    store_id: &str,
    ids: &[String],
) -> Result<ImportReport> {
    Pull::read(conn, ids)?.into_store(conn, store, store_id)
}

/// Sessions read from PostgreSQL and checked, not yet stored anywhere: a caller that makes
/// the store only for a pull reads first, so a refused pull leaves nothing behind.
#[derive(Debug)]
pub struct Pull {
    sessions: Vec<Read>,
}

/// One session as read, and the position it was read at.
#[derive(Debug)]
struct Read {
    session: SourceSession,
    events: i64,
    history: digest::Hash,
}

impl Read {
    /// The session for the import, its events moved out (not copied: a pull may be a long
    /// session); the header and the position stay for the ownership move.
    fn take(&mut self) -> SourceSession {
        SourceSession {
            header: self.session.header.clone(),
            events: std::mem::take(&mut self.session.events),
        }
    }
}

impl Pull {
    /// Reads and checks `ids` and the parents their forks name (a parent PostgreSQL no
    /// longer holds is left out: the fork holds its inherited events itself).
    ///
    /// # Errors
    /// `NotFound` for an id PostgreSQL does not hold; `BadRow` for rows that are not what the
    /// shipper wrote (edited, reordered, added or removed since: the digests, the count, the
    /// two forms of `data` or the header columns disagree); `Layout`, PostgreSQL errors.
    pub fn read(conn: &mut Connection, ids: &[String]) -> Result<Pull> {
        let client = &mut conn.client;
        schema::ensure(client)?;
        // Parents before their forks, each once.
        let mut order: Vec<String> = Vec::new();
        for id in ids {
            let mut chain = vec![id.clone()];
            let mut at = parent_of(client, id)?.ok_or_else(|| Error::NotFound(id.clone()))?;
            while let Some(parent) = at {
                if chain.contains(&parent) {
                    break;
                }
                // A parent deleted since: the fork came whole, inherited rows and all.
                let Some(grand) = parent_of(client, &parent)? else {
                    break;
                };
                chain.push(parent);
                at = grand;
            }
            for s in chain.into_iter().rev() {
                if !order.contains(&s) {
                    order.push(s);
                }
            }
        }
        let mut sessions = Vec::with_capacity(order.len());
        for id in &order {
            sessions.push(read_session(client, id)?);
        }
        Ok(Pull { sessions })
    }

    /// The ids read, parents first.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.sessions.iter().map(|r| r.session.header.id.as_str())
    }

    /// Imports the sessions into `store` and moves their ownership to `store_id`, in one
    /// transaction that first checks PostgreSQL still holds what was read. When the old
    /// owner shipped more meanwhile, what it added is read, checked and imported, and the
    /// move tried again (up to five times).
    ///
    /// # Errors
    /// The import's refusals (nothing is stored then, and ownership stays); `Conflict` when
    /// the old owner kept shipping through every try (its sessions are then imported as far
    /// as read, and still owned by it); `NotFound` for a session removed meanwhile; `BadRow`,
    /// PostgreSQL and store errors.
    pub fn into_store(
        mut self,
        conn: &mut Connection,
        store: &Store,
        store_id: &str,
    ) -> Result<ImportReport> {
        let client = &mut conn.client;
        let source = Path::new("postgres");
        let mut report = import_sessions(
            store,
            source,
            self.sessions.iter_mut().map(Read::take).collect(),
        )?;
        for attempt in 1..=MOVE_ATTEMPTS {
            let mut tx = client
                .transaction()
                .map_err(Error::pg("begin a transaction"))?;
            tx.execute(
                "INSERT INTO sessdb_stores (store_id) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&store_id],
            )
            .map_err(Error::pg("register the store"))?;
            let mut moved_on = Vec::new();
            for (i, r) in self.sessions.iter().enumerate() {
                let id = &r.session.header.id;
                let row = tx
                    .query_opt(
                        "SELECT events, history FROM sessdb_sessions WHERE id = $1 FOR UPDATE",
                        &[id],
                    )
                    .map_err(Error::pg("lock a session's row"))?
                    .ok_or_else(|| Error::NotFound(id.clone()))?;
                if row.get::<_, i64>(0) != r.events || row.get::<_, &[u8]>(1) != r.history {
                    moved_on.push(i);
                }
            }
            if moved_on.is_empty() {
                for r in &self.sessions {
                    let id = &r.session.header.id;
                    let created = store
                        .info(id)
                        .map(|i| crate::ship::to_i64(i.incarnation.get()));
                    tx.execute(
                        "UPDATE sessdb_sessions SET owner_store = $1, store_created_lsn = $3 WHERE id = $2",
                        &[&store_id, id, &created],
                    )
                    .map_err(Error::pg("move the sessions' ownership"))?;
                }
                tx.commit().map_err(Error::pg("commit"))?;
                return Ok(report);
            }
            drop(tx);
            if attempt == MOVE_ATTEMPTS {
                let id = self.sessions[moved_on[0]].session.header.id.clone();
                return Err(Error::Conflict {
                    session: id,
                    problem: format!(
                        "its owner kept shipping more of it through {MOVE_ATTEMPTS} tries to take it over: its ownership did not move; stop the owner's shipper and pull again"
                    ),
                });
            }
            // Read again what moved on; the import appends what was added (or refuses a copy
            // that is no longer a continuation of the one imported).
            let mut again = Vec::with_capacity(moved_on.len());
            for &i in &moved_on {
                let id = self.sessions[i].session.header.id.clone();
                self.sessions[i] = read_session(client, &id)?;
                again.push(self.sessions[i].take());
            }
            for s in import_sessions(store, source, again)?.sessions {
                if let Some(old) = report.sessions.iter_mut().find(|o| o.id == s.id) {
                    old.events = s.events;
                    if s.outcome != sessdb_formats::Outcome::Skipped {
                        old.outcome = match old.outcome {
                            sessdb_formats::Outcome::Skipped => s.outcome,
                            first => first,
                        };
                    }
                }
            }
        }
        Ok(report)
    }
}

/// The parent a session names, `None` for a root; `Ok(None)` too when PostgreSQL does not
/// hold `id` (the caller decides what that means) — told apart by the outer `Option`.
fn parent_of(client: &mut Client, id: &str) -> Result<Option<Option<String>>> {
    let row = client
        .query_opt(
            "SELECT parent_session FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .map_err(Error::pg("read a session"))?;
    Ok(row.map(|r| r.get(0)))
}

/// One session as PostgreSQL holds it: the exact header line, the events rebuilt from their
/// columns (`data_text` exact), every check of [`Pull::read`] made.
fn read_session(client: &mut Client, id: &str) -> Result<Read> {
    let row = client
        .query_opt(
            "SELECT header_json, events, history, last_event, created_at, cwd, parent_session,
               seed_length, origin, delegation_depth, agent_preset
             FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .map_err(Error::pg("read a session"))?
        .ok_or_else(|| Error::NotFound(id.to_owned()))?;
    let header_json: String = row.get(0);
    let shipped: i64 = row.get(1);
    let whole = |problem: String| Error::Tampered {
        session: id.to_owned(),
        problem,
    };
    let header = header_of_row(&row, id, &header_json)?;
    let history = digest::from_column(row.get(2))
        .ok_or_else(|| whole("its history digest is missing or malformed".into()))?;
    let last = row.get::<_, Option<&[u8]>>(3).map(digest::from_column);
    let inherited_until = match &header.parent_session {
        Some(_) => header.seed_length.unwrap_or(0),
        None => 0,
    };
    let rows = client
        .query(
            "SELECT seq, type, time, data_text, source_event_seqs, surface_op, replace_start, replace_end, ignorable, key_order, data IS NOT NULL, inherited
             FROM sessdb_events WHERE session_id = $1 ORDER BY seq",
            &[&id],
        )
        .map_err(Error::pg("read a session's events"))?;
    let mut events = Vec::with_capacity(rows.len());
    let mut chain = digest::start(header_json.as_bytes());
    let mut last_digest = None;
    for r in &rows {
        let event = event_of_row(r, id, events.len() as u64, inherited_until)?;
        let d = digest::of_event(&event);
        chain = digest::extend(&chain, &d);
        last_digest = Some(d);
        events.push(event);
    }
    if events.len() as u64 != shipped.unsigned_abs() || shipped < 0 {
        return Err(whole(format!(
            "its row says {shipped} events were shipped, and {} event rows are held",
            events.len()
        )));
    }
    if chain != history || last_digest != last.flatten() {
        return Err(whole(
            "its rows are not the ones the shipper wrote (their history digest differs: a row was edited, reordered, added or removed since)".into(),
        ));
    }
    check_jsonb_copies(client, id)?;
    Ok(Read {
        session: SourceSession { header, events },
        events: shipped,
        history,
    })
}

/// A session row's header: its `header_json`, naming the row's session, and the columns
/// saying what it says.
fn header_of_row(row: &postgres::Row, id: &str, header_json: &str) -> Result<SessionHeader> {
    let whole = |problem: String| Error::Tampered {
        session: id.to_owned(),
        problem,
    };
    let header = SessionHeader::from_json(header_json.as_bytes())?;
    if header.id != id {
        return Err(whole(format!(
            "its header_json names session {:?}, not its row's",
            header.id
        )));
    }
    let c = header.columns();
    let columns_agree = row.get::<_, i64>(4) == c.created_at
        && row.get::<_, Option<&str>>(5) == c.cwd
        && row.get::<_, Option<&str>>(6) == c.parent_session
        && row.get::<_, Option<i64>>(7) == c.seed_length
        && row.get::<_, Option<&str>>(8) == c.origin
        && row.get::<_, i64>(9) == c.delegation_depth
        && row.get::<_, Option<&str>>(10) == c.agent_preset;
    if !columns_agree {
        return Err(whole(
            "its header columns do not say what its header_json says".into(),
        ));
    }
    Ok(header)
}

/// One event row of session `id`, expected at seq `expected` (the first `inherited_until`
/// inherited from the parent).
fn event_of_row(r: &postgres::Row, id: &str, expected: u64, inherited_until: u64) -> Result<Event> {
    let seq: i64 = r.get(0);
    let bad = |problem: &str| Error::BadRow {
        session: id.to_owned(),
        seq,
        problem: problem.to_owned(),
    };
    let seq_u = envelope::checked_seq(seq).ok_or_else(|| bad("seq out of range"))?;
    if seq_u != expected {
        return Err(bad("seqs do not follow one another"));
    }
    let time = envelope::checked_time(r.get(2)).ok_or_else(|| bad("time out of range"))?;
    let data: String = r.get(3);
    if r.get::<_, bool>(10) != jsonb_holds(data.as_bytes()) {
        return Err(bad(
            "its data and data_text disagree (one is set where the shipper leaves it NULL)",
        ));
    }
    if r.get::<_, bool>(11) != (seq_u < inherited_until) {
        return Err(bad(
            "its inherited flag disagrees with the header's seedLength",
        ));
    }
    let sources: Option<Vec<i64>> = r.get(4);
    let sources = sources
        .map(|v| {
            v.into_iter()
                .map(envelope::checked_seq)
                .collect::<Option<Vec<u64>>>()
        })
        .map(|v| v.ok_or_else(|| bad("a source seq out of range")))
        .transpose()?;
    let op = SurfaceOp::from_columns(
        r.get::<_, Option<&str>>(5).map(str::as_bytes),
        r.get(6),
        r.get(7),
    )
    .map_err(bad)?;
    let event = Event::new(r.get::<_, String>(1), seq_u, time, data.into_bytes())
        .with_sources_opt(sources.map(Into::into))
        .with_surface_op_opt(op)
        .with_ignorable(r.get(8));
    Ok(event.with_surface_op_first(r.get::<_, bool>(9)))
}

/// With every `data_text` the shipper's, the `jsonb` copies can be compared (the cast cannot
/// fail on them): the first that is not its `data_text` is tampering.
fn check_jsonb_copies(client: &mut Client, id: &str) -> Result<()> {
    let disagrees = client
        .query_opt(
            "SELECT seq FROM sessdb_events WHERE session_id = $1 AND data IS NOT NULL
               AND data <> data_text::jsonb ORDER BY seq LIMIT 1",
            &[&id],
        )
        .map_err(Error::pg("compare a session's jsonb copies"))?;
    match disagrees {
        Some(r) => Err(Error::BadRow {
            session: id.to_owned(),
            seq: r.get(0),
            problem: "its data jsonb is not its data_text".into(),
        }),
        None => Ok(()),
    }
}
