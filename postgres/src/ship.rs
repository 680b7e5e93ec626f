//! Shipping a store's sessions into PostgreSQL, exactly once (`docs/FORMATS.md` §4.2).
//!
//! The shipped position of every session — how many of its events PostgreSQL holds, and the
//! log position of the store's record that created it — is a column of its `sessdb_sessions`
//! row, written in the same transaction as the event rows it covers, and the store's log
//! position in `sessdb_stores` likewise. A shipper that dies anywhere leaves PostgreSQL at
//! the last committed round; the next one reads the positions back and ships from there, so
//! no event is shipped twice or skipped (the `(session_id, seq)` key would refuse a second
//! copy rather than hold it). One shipper per store: it holds a PostgreSQL advisory lock on
//! the store's id for as long as its connection lives.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use postgres::{Client, NoTls};
use sessdb::Store;
use sessdb::store::SessionInfo;

use crate::rows::{COLUMNS, event_row};
use crate::{Error, Result, schema};

/// Events shipped in one transaction at most: a long backlog goes in several rounds, each
/// committed with its positions.
pub const EVENTS_PER_TRANSACTION: u64 = 50_000;

/// What PostgreSQL holds of one session.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shipped {
    owner: String,
    events: u64,
    created_lsn: Option<u64>,
    surface: Vec<u64>,
}

/// What one [`Shipper::ship`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShipReport {
    /// Events written.
    pub events: u64,
    /// Sessions that got events or a new surface.
    pub sessions: Vec<String>,
    /// Sessions removed from PostgreSQL (deleted from the store, or created again).
    pub removed: Vec<String>,
    /// Sessions another store owns (it pulled them): not shipped from here.
    pub owned_elsewhere: Vec<(String, String)>,
    /// Transactions committed.
    pub transactions: u64,
}

/// A connection shipping one store.
pub struct Shipper {
    client: Client,
    store_id: String,
    known: BTreeMap<String, Shipped>,
}

impl std::fmt::Debug for Shipper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shipper")
            .field("store_id", &self.store_id)
            .field("sessions", &self.known.len())
            .finish_non_exhaustive()
    }
}

/// Connects to `url` (a libpq connection string or URL; a Unix socket directory as `host`).
///
/// # Errors
/// PostgreSQL errors.
pub fn connect(url: &str) -> Result<Client> {
    Client::connect(url, NoTls).map_err(Error::pg("connect"))
}

impl Shipper {
    /// Connects, creates or checks the tables, takes the store's lock and reads what
    /// PostgreSQL already holds of it.
    ///
    /// # Errors
    /// `Locked` when another shipper ships the store, `Layout`, PostgreSQL errors.
    pub fn new(url: &str, store_id: &str) -> Result<Shipper> {
        let mut client = connect(url)?;
        schema::ensure(&mut client)?;
        let locked: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock(hashtextextended($1, 0))",
                &[&store_id],
            )
            .map_err(Error::pg("take the store's lock"))?
            .get(0);
        if !locked {
            return Err(Error::Locked {
                store_id: store_id.to_owned(),
            });
        }
        client
            .execute(
                "INSERT INTO sessdb_stores (store_id) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&store_id],
            )
            .map_err(Error::pg("register the store"))?;
        let mut shipper = Shipper {
            client,
            store_id: store_id.to_owned(),
            known: BTreeMap::new(),
        };
        shipper.reload()?;
        Ok(shipper)
    }

    /// The store's id.
    pub fn store_id(&self) -> &str {
        &self.store_id
    }

    /// Reads the shipped positions back from PostgreSQL (after a failed round whose commit
    /// may or may not have happened).
    ///
    /// # Errors
    /// PostgreSQL errors.
    pub fn reload(&mut self) -> Result<()> {
        let rows = self
            .client
            .query(
                "SELECT s.id, s.owner_store, s.events, s.store_created_lsn,
                   COALESCE((SELECT array_agg(seq ORDER BY position) FROM sessdb_surface f WHERE f.session_id = s.id), '{}')
                 FROM sessdb_sessions s",
                &[],
            )
            .map_err(Error::pg("read the shipped positions"))?;
        self.known = rows
            .iter()
            .map(|r| {
                let surface: Vec<i64> = r.get(4);
                (
                    r.get::<_, String>(0),
                    Shipped {
                        owner: r.get(1),
                        events: r.get::<_, i64>(2).unsigned_abs(),
                        created_lsn: r.get::<_, Option<i64>>(3).map(i64::unsigned_abs),
                        surface: surface.into_iter().map(i64::unsigned_abs).collect(),
                    },
                )
            })
            .collect();
        Ok(())
    }

    /// Ships everything the store holds that PostgreSQL does not, in rounds of at most
    /// [`EVENTS_PER_TRANSACTION`] events, each one transaction with its positions.
    ///
    /// # Errors
    /// `Conflict` for a session PostgreSQL holds more of than the store, store read errors,
    /// PostgreSQL errors (then call [`Shipper::reload`] or make a new shipper).
    pub fn ship(&mut self, store: &Store) -> Result<ShipReport> {
        let mut report = ShipReport::default();
        loop {
            let (more, round) = self.round(store, &mut report)?;
            if round {
                report.transactions += 1;
            }
            if !more {
                return Ok(report);
            }
        }
    }

    /// One transaction: returns whether more is left to ship, and whether it committed one.
    fn round(&mut self, store: &Store, report: &mut ShipReport) -> Result<(bool, bool)> {
        let list: Vec<SessionInfo> = store.list();
        let lsn = i64::try_from(store.stats().log_bytes).unwrap_or(i64::MAX);
        let local: BTreeSet<&str> = list.iter().map(|i| i.header.id.as_str()).collect();
        let mut budget = EVENTS_PER_TRANSACTION;
        let mut changed: Vec<(String, Shipped)> = Vec::new();
        let mut removed: Vec<String> = Vec::new();
        let mut tx = self
            .client
            .transaction()
            .map_err(Error::pg("begin a transaction"))?;
        let mut wrote = false;
        // Sessions deleted from the store since they were shipped.
        for (id, s) in &self.known {
            if s.owner == self.store_id && !local.contains(id.as_str()) {
                tx.execute(
                    "DELETE FROM sessdb_sessions WHERE id = $1 AND owner_store = $2",
                    &[id, &self.store_id],
                )
                .map_err(Error::pg("remove a deleted session"))?;
                removed.push(id.clone());
                wrote = true;
            }
        }
        let mut more = false;
        for info in &list {
            let id = &info.header.id;
            let mut shipped = self.known.get(id).cloned();
            if let Some(s) = &shipped
                && s.owner != self.store_id
            {
                if !report.owned_elsewhere.iter().any(|(i, _)| i == id) {
                    report.owned_elsewhere.push((id.clone(), s.owner.clone()));
                }
                continue;
            }
            // Created again under the same id since it was shipped: that copy goes.
            if let Some(s) = &shipped
                && s.created_lsn.is_some_and(|l| l != info.created_lsn)
            {
                tx.execute(
                    "DELETE FROM sessdb_sessions WHERE id = $1 AND owner_store = $2",
                    &[id, &self.store_id],
                )
                .map_err(Error::pg("remove a re-created session"))?;
                removed.push(id.clone());
                shipped = None;
                wrote = true;
            }
            let from = shipped.as_ref().map_or(0, |s| s.events);
            // The surface changes only with an event, and a round that ships a session's last
            // event ships its surface: a session with every event shipped has nothing new (and
            // its surface is not read, every round, for every session).
            if shipped.is_some() && from == info.events {
                continue;
            }
            if budget == 0 {
                more = true;
                break;
            }
            // What PostgreSQL holds now, the row locked for this transaction: another store
            // may have pulled the session since (ownership moved), or a reload is due.
            let mut stale_surface = false;
            let now = tx
                .query_opt(
                    "SELECT owner_store, events FROM sessdb_sessions WHERE id = $1 FOR UPDATE",
                    &[id],
                )
                .map_err(Error::pg("lock a session's row"))?;
            let from = match (&now, &shipped) {
                (Some(row), _) if row.get::<_, String>(0) != self.store_id => {
                    let owner: String = row.get(0);
                    report.owned_elsewhere.push((id.clone(), owner.clone()));
                    changed.push((
                        id.clone(),
                        Shipped {
                            owner,
                            events: row.get::<_, i64>(1).unsigned_abs(),
                            created_lsn: None,
                            surface: Vec::new(),
                        },
                    ));
                    continue;
                }
                // PostgreSQL's count is the position, whatever this shipper remembered; a
                // surface remembered for another count is not trusted (rewritten whole).
                (Some(row), _) => {
                    let held = row.get::<_, i64>(1).unsigned_abs();
                    if shipped.as_ref().is_none_or(|s| s.events != held) {
                        shipped = Some(Shipped {
                            owner: self.store_id.clone(),
                            events: held,
                            created_lsn: None,
                            surface: Vec::new(),
                        });
                        stale_surface = true;
                    }
                    held
                }
                // The row is gone (removed in PostgreSQL by hand, or just above): all again.
                (None, _) => {
                    shipped = None;
                    0
                }
            };
            if from > info.events {
                return Err(Error::Conflict {
                    session: id.clone(),
                    problem: format!(
                        "PostgreSQL holds {from} events of it and this store {}: it was not shipped from this store as it is now",
                        info.events
                    ),
                });
            }
            let to = info.events.min(from.saturating_add(budget));
            budget -= to - from;
            if shipped.is_none() {
                insert_session(&mut tx, info, &self.store_id)?;
            }
            if to > from {
                copy_events(&mut tx, store, info, from, to)?;
            }
            // The surface goes with the events it cites: only once the session is whole.
            let old_surface: &[u64] = match &shipped {
                Some(s) if !stale_surface => &s.surface,
                _ => &[],
            };
            let new_surface = if to == info.events {
                let surface = store.surface(id)?;
                ship_surface(&mut tx, id, old_surface, &surface, stale_surface)?;
                surface
            } else {
                more = true;
                old_surface.to_vec()
            };
            tx.execute(
                "UPDATE sessdb_sessions SET events = $2, store_created_lsn = $3 WHERE id = $1",
                &[id, &to_i64(to), &to_i64(info.created_lsn)],
            )
            .map_err(Error::pg("record a session's shipped position"))?;
            report.events += to - from;
            if !report.sessions.contains(id) {
                report.sessions.push(id.clone());
            }
            changed.push((
                id.clone(),
                Shipped {
                    owner: self.store_id.clone(),
                    events: to,
                    created_lsn: Some(info.created_lsn),
                    surface: new_surface,
                },
            ));
            wrote = true;
            if to < info.events {
                break;
            }
        }
        if !wrote {
            return Ok((false, false));
        }
        tx.execute(
            "UPDATE sessdb_stores SET shipped_lsn = $2, shipped_at = now() WHERE store_id = $1",
            &[&self.store_id, &lsn],
        )
        .map_err(Error::pg("record the store's shipped position"))?;
        tx.commit().map_err(Error::pg("commit"))?;
        // Only what committed is known to be there.
        for id in &removed {
            self.known.remove(id);
        }
        report.removed.extend(removed);
        self.known.extend(changed);
        Ok((more, true))
    }
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn insert_session(
    tx: &mut postgres::Transaction<'_>,
    info: &SessionInfo,
    owner: &str,
) -> Result<()> {
    let h = &info.header;
    let origin = h.origin.map(|_| "subagent");
    let header_json = String::from_utf8_lossy(&h.to_json()).into_owned();
    tx.execute(
        "INSERT INTO sessdb_sessions (id, owner_store, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, header_json, events, store_created_lsn)
         VALUES ($1, $2, 0, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11)",
        &[
            &h.id,
            &owner,
            &h.created_at,
            &h.cwd,
            &h.parent_session,
            &h.seed_length.map(to_i64),
            &origin,
            &to_i64(h.delegation_depth),
            &h.agent_preset,
            &header_json,
            &to_i64(info.created_lsn),
        ],
    )
    .map_err(Error::pg("insert a session"))?;
    Ok(())
}

/// The events `from..to` of a session, by `COPY`.
fn copy_events(
    tx: &mut postgres::Transaction<'_>,
    store: &Store,
    info: &SessionInfo,
    from: u64,
    to: u64,
) -> Result<()> {
    let id = &info.header.id;
    let inherited_until = match &info.header.parent_session {
        Some(_) => info.header.seed_length.unwrap_or(0),
        None => 0,
    };
    let mut writer = tx
        .copy_in(&format!("COPY sessdb_events ({COLUMNS}) FROM STDIN"))
        .map_err(Error::pg("start a COPY"))?;
    let mut buf = Vec::with_capacity(1 << 16);
    let mut write_err = None;
    store.visit_events(id, from, to, |e| {
        event_row(&mut buf, id, &e, e.seq() < inherited_until);
        // After a failed write the rest is not sent; the error is reported below.
        if buf.len() >= 1 << 16 && write_err.is_none() {
            write_err = writer.write_all(&buf).err();
            buf.clear();
        }
        Ok(())
    })?;
    let copy_err = |source| Error::Io {
        path: "COPY sessdb_events".into(),
        source,
    };
    if let Some(e) = write_err {
        return Err(copy_err(e));
    }
    writer.write_all(&buf).map_err(copy_err)?;
    writer.finish().map_err(Error::pg("finish a COPY"))?;
    Ok(())
}

/// Brings a session's `sessdb_surface` rows from `old` to `new`: the positions after their
/// common prefix are rewritten (all of them when `unknown`).
fn ship_surface(
    tx: &mut postgres::Transaction<'_>,
    id: &str,
    old: &[u64],
    new: &[u64],
    unknown: bool,
) -> Result<()> {
    // With `unknown` (`old` is then empty), what PostgreSQL holds is not known here: every
    // position is rewritten, also when the new surface is empty.
    let common = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    if !unknown && common == old.len() && common == new.len() {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM sessdb_surface WHERE session_id = $1 AND position >= $2",
        &[&id, &to_i64(common as u64)],
    )
    .map_err(Error::pg("rewrite a surface"))?;
    let positions: Vec<i64> = (common..new.len()).map(|p| to_i64(p as u64)).collect();
    let seqs: Vec<i64> = new[common..].iter().map(|&s| to_i64(s)).collect();
    tx.execute(
        "INSERT INTO sessdb_surface (session_id, position, seq) SELECT $1, p, s FROM unnest($2::bigint[], $3::bigint[]) AS t(p, s)",
        &[&id, &positions, &seqs],
    )
    .map_err(Error::pg("rewrite a surface"))?;
    Ok(())
}
