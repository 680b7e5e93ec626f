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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use sessdb::Store;
use sessdb::store::{Incarnation, ListOptions, ListOrder, LogMark, SessionInfo};

use crate::rows::{COLUMNS, event_row};
use crate::{Error, Result, digest, schema};

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

/// An erasure PostgreSQL remembers (`sessdb_erased`): which incarnation, and the store's log
/// position when the round that removed it read the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Erased {
    created_lsn: u64,
    erased_lsn: u64,
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
    /// Sessions not shipped because PostgreSQL's copy is not this store's history (it holds
    /// more events than the store, or its last shipped event differs: the store was
    /// restored from a backup, or salvage cut the session), with why. The others are
    /// shipped; [`Shipper::reset`] replaces PostgreSQL's copy of one with the store's.
    /// Also refused: a session this store's lineage deleted and PostgreSQL erased, which
    /// the store holds again as it was (a backup from before the deletion restored):
    /// shipping it would bring the erased text back.
    pub refused: Vec<(String, String)>,
    /// Sessions PostgreSQL holds of this store that the store lacks while its log no longer
    /// holds the newest record the last round read (restored from an older backup, or
    /// rewritten by salvage): not deleted, as a deletion would be, but given to the owner
    /// `lost/STORE_ID`, which nothing ships; pull one to take it back.
    pub kept: Vec<String>,
    /// Transactions committed.
    pub transactions: u64,
}

/// A connection shipping one store.
pub struct Shipper {
    client: Client,
    store_id: String,
    known: HashMap<String, Shipped>,
    /// Sessions this store's lineage erased from PostgreSQL: id → the newest erased
    /// incarnation (the log position of the record that created it).
    erased: BTreeMap<String, Erased>,
    recheck_every: Duration,
    rechecked: Instant,
}

/// How often [`Shipper::ship`] checks, by default, that PostgreSQL still holds what the
/// shipper remembers of the sessions it owns.
pub const RECHECK_EVERY: Duration = Duration::from_secs(5);

impl std::fmt::Debug for Shipper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shipper")
            .field("store_id", &self.store_id)
            .field("sessions", &self.known.len())
            .finish_non_exhaustive()
    }
}

/// A connection to PostgreSQL for [`pull`](crate::pull): this crate's own type, so the
/// `postgres` crate's version never becomes the embedder's.
pub struct Connection {
    pub(crate) client: Client,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

/// Connects to `url` (a libpq connection string or URL; a Unix socket directory as `host`).
///
/// # Errors
/// PostgreSQL errors.
pub fn connect(url: &str) -> Result<Connection> {
    Ok(Connection {
        client: client(url)?,
    })
}

pub(crate) fn client(url: &str) -> Result<Client> {
    let tls = crate::tls::Tls::parse(url)?;
    let config: postgres::Config = tls.url.parse().map_err(Error::pg("connect"))?;
    match tls.connector()? {
        Some(connector) => config.connect(connector),
        None => config.connect(NoTls),
    }
    .map_err(Error::pg("connect"))
}

impl Shipper {
    /// Connects, creates or checks the tables, takes the store's lock and reads what
    /// PostgreSQL already holds of it.
    ///
    /// # Errors
    /// `Locked` when another shipper ships the store, `Layout`, PostgreSQL errors.
    pub fn new(url: &str, store_id: &str) -> Result<Shipper> {
        let mut client = client(url)?;
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
            known: HashMap::new(),
            erased: BTreeMap::new(),
            recheck_every: RECHECK_EVERY,
            rechecked: Instant::now(),
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
        let rows = self
            .client
            .query(
                "SELECT session_id, max(store_created_lsn), max(erased_lsn) FROM sessdb_erased
                 WHERE store_id = $1 GROUP BY session_id",
                &[&self.store_id],
            )
            .map_err(Error::pg("read the erased sessions"))?;
        self.erased = rows
            .iter()
            .map(|r| {
                (
                    r.get::<_, String>(0),
                    Erased {
                        created_lsn: r.get::<_, i64>(1).unsigned_abs(),
                        erased_lsn: r.get::<_, i64>(2).unsigned_abs(),
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
        if self.rechecked.elapsed() >= self.recheck_every {
            self.recheck()?;
        }
        let mut report = ShipReport::default();
        loop {
            match self.round(store, &mut report)? {
                Round::Nothing => return Ok(report),
                Round::Committed => {
                    report.transactions += 1;
                    return Ok(report);
                }
                Round::CommittedMoreLeft => report.transactions += 1,
            }
        }
    }

    /// How often [`Shipper::ship`] checks that PostgreSQL still holds what this shipper
    /// remembers of the sessions it owns (default [`RECHECK_EVERY`]): rows removed or changed
    /// in PostgreSQL behind its back — for a session with nothing new, which a round does not
    /// otherwise look at — are then read back, and shipped again.
    pub fn set_recheck_every(&mut self, every: Duration) {
        self.recheck_every = every;
    }

    /// One cheap query: the count and the events of the sessions PostgreSQL says this store
    /// owns, against what is remembered; the positions are read back when they differ.
    fn recheck(&mut self) -> Result<()> {
        let row = self
            .client
            .query_one(
                "SELECT count(*), COALESCE(sum(events), 0)::bigint FROM sessdb_sessions WHERE owner_store = $1",
                &[&self.store_id],
            )
            .map_err(Error::pg("check the shipped positions"))?;
        let (count, events) = self
            .known
            .values()
            .filter(|s| s.owner == self.store_id)
            .fold((0i64, 0i64), |(c, e), s| {
                (c + 1, e.saturating_add(to_i64(s.events)))
            });
        if (row.get::<_, i64>(0), row.get::<_, i64>(1)) != (count, events) {
            self.reload()?;
        }
        self.rechecked = Instant::now();
        Ok(())
    }

    /// Removes PostgreSQL's copy of each of `ids` this store owns, so that the next
    /// [`Shipper::ship`] ships the store's copy whole: the way on for a session the ship
    /// refused because PostgreSQL's copy is not this store's history (`ShipReport::refused`:
    /// the store was restored from a backup, or salvage cut the session). Returns the ids
    /// PostgreSQL held; one it does not hold is left out. Also the way on for a session
    /// refused as erased (a backup from before its deletion restored): PostgreSQL forgets
    /// the erasure, and the next ship ships the store's copy whole.
    ///
    /// # Errors
    /// `Conflict` for a session another store owns (pull it here instead), PostgreSQL errors;
    /// nothing is removed then.
    pub fn reset(&mut self, ids: &[String]) -> Result<Vec<String>> {
        let mut tx = self
            .client
            .transaction()
            .map_err(Error::pg("begin a transaction"))?;
        let mut reset = Vec::new();
        for id in ids {
            let row = tx
                .query_opt(
                    "SELECT owner_store FROM sessdb_sessions WHERE id = $1 FOR UPDATE",
                    &[id],
                )
                .map_err(Error::pg("lock a session's row"))?;
            let forgot = tx
                .execute(
                    "DELETE FROM sessdb_erased WHERE store_id = $1 AND session_id = $2",
                    &[&self.store_id, id],
                )
                .map_err(Error::pg("forget a session's erasure"))?;
            let Some(row) = row else {
                if forgot > 0 {
                    reset.push(id.clone());
                }
                continue;
            };
            let owner: String = row.get(0);
            if owner != self.store_id {
                return Err(Error::Conflict {
                    session: id.clone(),
                    problem: format!(
                        "it is owned by store {owner}, not this one: a reset replaces only this store's copy (pull it here to take it over)"
                    ),
                });
            }
            tx.execute("DELETE FROM sessdb_sessions WHERE id = $1", &[id])
                .map_err(Error::pg("remove a session's copy"))?;
            reset.push(id.clone());
        }
        tx.commit().map_err(Error::pg("commit"))?;
        for id in &reset {
            self.known.remove(id);
            self.erased.remove(id);
        }
        Ok(reset)
    }

    /// One transaction, and whether more is left to ship (`Round`).
    fn round(&mut self, store: &Store, report: &mut ShipReport) -> Result<Round> {
        let view = Known {
            store_id: &self.store_id,
            known: &self.known,
            erased: &self.erased,
        };
        let listed = view.listed(store)?;
        let lsn = store.stats().end_lsn;
        let mut tx = self
            .client
            .transaction()
            .map_err(Error::pg("begin a transaction"))?;
        let continues = log_continues(&mut tx, view.store_id, store)?;
        let mut changes = Changes::default();
        view.settle_missing(&mut tx, &listed.missing, continues, lsn, &mut changes)?;
        view.ship_sessions(
            &mut tx,
            store,
            &listed.to_look_at,
            lsn,
            report,
            &mut changes,
        )?;
        if !changes.wrote {
            return Ok(Round::Nothing);
        }
        let mark = store.last_record();
        tx.execute(
            "UPDATE sessdb_stores SET shipped_lsn = $2, shipped_at = now(), record_lsn = $3, record_crc = $4, record_epoch = $5 WHERE store_id = $1",
            &[
                &view.store_id,
                &to_i64(lsn),
                &mark.map(|m| to_i64(m.lsn)),
                &mark.map(|m| i64::from(m.crc)),
                // The u64 id's bits, as PostgreSQL has no unsigned type.
                &mark.and_then(|m| m.epoch).map(|e| i64::from_le_bytes(e.to_le_bytes())),
            ],
        )
        .map_err(Error::pg("record the store's shipped position"))?;
        tx.commit().map_err(Error::pg("commit"))?;
        // Only what committed is known to be there.
        let more = changes.more;
        self.remember(changes, report);
        Ok(if more {
            Round::CommittedMoreLeft
        } else {
            Round::Committed
        })
    }

    /// What a committed round changed, remembered and reported.
    fn remember(&mut self, changes: Changes, report: &mut ShipReport) {
        let lost_owner = lost_owner(&self.store_id);
        for id in &changes.removed {
            self.known.remove(id);
        }
        for id in &changes.given_away {
            if let Some(s) = self.known.get_mut(id) {
                s.owner.clone_from(&lost_owner);
            }
        }
        for (id, gone) in changes.erased {
            let e = self.erased.entry(id).or_insert(gone);
            e.created_lsn = e.created_lsn.max(gone.created_lsn);
            e.erased_lsn = e.erased_lsn.max(gone.erased_lsn);
        }
        report.removed.extend(changes.removed);
        report.kept.extend(changes.given_away);
        self.known.extend(changes.changed);
    }
}

/// The owner of the sessions a diverged store lacked.
fn lost_owner(store_id: &str) -> String {
    format!("lost/{store_id}")
}

/// What a round reads of the shipper's memory while its transaction holds the connection.
struct Known<'a> {
    store_id: &'a str,
    known: &'a HashMap<String, Shipped>,
    erased: &'a BTreeMap<String, Erased>,
}

/// What a round reads of the store's listing.
struct Listed<'k> {
    /// The sessions this store shipped that it no longer holds, by id.
    missing: Vec<&'k str>,
    /// The sessions a round must look at, by id: every one but those this store shipped
    /// whole, as this incarnation, and nothing since.
    to_look_at: Vec<Listing>,
}

/// A listed session a round looks at: its id, and its events and incarnation when listed.
struct Listing {
    id: String,
    events: u64,
    incarnation: Incarnation,
}

impl<'k> Known<'k> {
    /// One pass over the store's index (`Store::list_each`, no session decoded, no header
    /// copied): an idle round over many sessions reads each row once, looks it up once, and
    /// copies nothing of a session it has shipped whole (`docs/PERFORMANCE.md`, "An idle
    /// ship round").
    fn listed(&self, store: &Store) -> Result<Listed<'k>> {
        let known: &'k HashMap<String, Shipped> = self.known;
        let owned = known.values().filter(|s| s.owner == self.store_id).count();
        let mut present: Vec<&'k str> = Vec::new();
        let mut to_look_at = Vec::new();
        store.list_each(ListOptions::new(ListOrder::Stored), |row| {
            if let Some((id, s)) = known.get_key_value(row.id) {
                if s.owner == self.store_id {
                    present.push(id.as_str());
                }
                // Passed over exactly when the loop of `ship_sessions` would pass it over
                // without a word: shipped by this store, whole, as this incarnation.
                if s.owner == self.store_id
                    && s.events == row.events
                    && s.created_lsn == Some(row.incarnation.get())
                    && self.erased_again(row.id, row.incarnation).is_none()
                {
                    return;
                }
            }
            to_look_at.push(Listing {
                id: row.id.to_owned(),
                events: row.events,
                incarnation: row.incarnation,
            });
        })?;
        // A listing names each session once: all of this store's shipped sessions are there
        // exactly when as many were seen (an idle round's case, with no set built).
        let mut missing: Vec<&'k str> = Vec::new();
        if present.len() != owned {
            let present: HashSet<&str> = present.into_iter().collect();
            missing = known
                .iter()
                .filter(|(id, s)| s.owner == self.store_id && !present.contains(id.as_str()))
                .map(|(id, _)| id.as_str())
                .collect();
            missing.sort_unstable();
        }
        // In the order the full listing had: reports and the budget's cut as before.
        to_look_at.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        Ok(Listed {
            missing,
            to_look_at,
        })
    }

    /// Sessions deleted from the store since they were shipped are removed (and their
    /// erasure remembered) — or, when the log is not the one shipped from, sessions it never
    /// had: those are kept, given to `lost/ID`.
    fn settle_missing(
        &self,
        tx: &mut postgres::Transaction<'_>,
        missing: &[&str],
        continues: bool,
        lsn: u64,
        changes: &mut Changes,
    ) -> Result<()> {
        let lost_owner = lost_owner(self.store_id);
        for &missing_id in missing {
            let Some((id, s)) = self.known.get_key_value(missing_id) else {
                continue;
            };
            if continues {
                tx.execute(
                    "DELETE FROM sessdb_sessions WHERE id = $1 AND owner_store = $2",
                    &[id, &self.store_id],
                )
                .map_err(Error::pg("remove a deleted session"))?;
                // Remembered, so that a backup from before the deletion does not ship it
                // again. A row without its incarnation (none is written so) counts as
                // created before this round's position.
                let gone = Erased {
                    created_lsn: s.created_lsn.unwrap_or(lsn),
                    erased_lsn: lsn,
                };
                remember_erased(tx, self.store_id, id, gone)?;
                changes.erased.push((id.clone(), gone));
                changes.removed.push(id.clone());
            } else {
                if changes.given_away.is_empty() {
                    tx.execute(
                        "INSERT INTO sessdb_stores (store_id) VALUES ($1) ON CONFLICT DO NOTHING",
                        &[&lost_owner],
                    )
                    .map_err(Error::pg("register the lost sessions' owner"))?;
                }
                tx.execute(
                    "UPDATE sessdb_sessions SET owner_store = $3 WHERE id = $1 AND owner_store = $2",
                    &[id, &self.store_id, &lost_owner],
                )
                .map_err(Error::pg("keep a session the store lacks"))?;
                changes.given_away.push(id.clone());
            }
            changes.wrote = true;
        }
        Ok(())
    }

    /// Ships the sessions of `list` that have something new, within one transaction's
    /// budget of events.
    fn ship_sessions(
        &self,
        tx: &mut postgres::Transaction<'_>,
        store: &Store,
        list: &[Listing],
        lsn: u64,
        report: &mut ShipReport,
        changes: &mut Changes,
    ) -> Result<()> {
        let mut budget = EVENTS_PER_TRANSACTION;
        for listing in list {
            let id = &listing.id;
            let shipped = self.known.get(id);
            if let Some(s) = shipped
                && s.owner != self.store_id
            {
                if !report.owned_elsewhere.iter().any(|(i, _)| i == id) {
                    report.owned_elsewhere.push((id.clone(), s.owner.clone()));
                }
                continue;
            }
            if report.refused.iter().any(|(i, _)| i == id) {
                continue;
            }
            if let Some(why) = self.erased_again(id, listing.incarnation) {
                report.refused.push((id.clone(), why));
                continue;
            }
            // The surface changes only with an event, and a round that ships a session's last
            // event ships its surface: a session with every event shipped, by this very
            // incarnation, has nothing new (and its surface is not read, every round, for
            // every session).
            if shipped.is_some_and(|s| {
                s.events == listing.events && s.created_lsn == Some(listing.incarnation.get())
            }) {
                continue;
            }
            if budget == 0 {
                changes.more = true;
                return Ok(());
            }
            // Its row, as listed: deleted or created again since, it waits for the next
            // round's listing; grown since, it ships up to what was listed (the round's
            // position `lsn` was read after the listing).
            let Some(mut info) = store
                .info(id)
                .filter(|i| i.incarnation == listing.incarnation)
            else {
                continue;
            };
            info.events = info.events.min(listing.events);
            let info = &info;
            let remembered = shipped.cloned();
            match ship_session(tx, self.store_id, store, info, remembered, &mut budget, lsn)? {
                Step::OwnedElsewhere(owner, held) => {
                    report.owned_elsewhere.push((id.clone(), owner.clone()));
                    changes.changed.push((
                        id.clone(),
                        Shipped {
                            owner,
                            events: held,
                            created_lsn: None,
                            surface: Vec::new(),
                        },
                    ));
                }
                Step::Refused(why) => report.refused.push((id.clone(), why)),
                Step::Shipped {
                    events,
                    recreated,
                    now,
                } => {
                    if let Some(gone) = recreated {
                        changes.erased.push((id.clone(), gone));
                        changes.removed.push(id.clone());
                    }
                    report.events += events;
                    if events > 0 && !report.sessions.contains(id) {
                        report.sessions.push(id.clone());
                    }
                    let partial = now.events < info.events;
                    changes.changed.push((id.clone(), now));
                    changes.wrote = true;
                    if partial {
                        changes.more = true;
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// Why a session is refused as erased: this incarnation was erased from PostgreSQL, and
    /// the store holds it again only because its log is behind the deletion (a backup
    /// restored). `None` when it was not.
    fn erased_again(&self, id: &str, incarnation: Incarnation) -> Option<String> {
        let gone = self.erased.get(id)?;
        (incarnation.get() <= gone.created_lsn).then(|| {
            format!(
                "this store deleted it (the copy created at log position {}) and PostgreSQL erased it when the store's log was at position {}; this store holds it again as it was, so its log is behind that deletion (restored from a backup taken before it?): it is not shipped, or the erased text would be back; `sessdb ship --reset {id}` ships it all the same",
                gone.created_lsn, gone.erased_lsn
            )
        })
    }
}

/// What one round changes, applied to the shipper's memory once it commits.
#[derive(Default)]
struct Changes {
    /// Sessions shipped (their new positions) or found owned elsewhere.
    changed: Vec<(String, Shipped)>,
    /// Sessions removed from PostgreSQL.
    removed: Vec<String>,
    /// Sessions given to `lost/ID`.
    given_away: Vec<String>,
    /// Erasures recorded.
    erased: Vec<(String, Erased)>,
    /// Something was written: the round commits.
    wrote: bool,
    /// The budget ran out with more to ship.
    more: bool,
}

/// Whether the store's log is still the one the last round read: it must hold the record
/// that was its newest then. A store restored from an older backup does not, and neither
/// does one whose log salvage rewrote there.
fn log_continues(
    tx: &mut postgres::Transaction<'_>,
    store_id: &str,
    store: &Store,
) -> Result<bool> {
    let last_read = tx
        .query_one(
            "SELECT record_lsn, record_crc, record_epoch FROM sessdb_stores WHERE store_id = $1 FOR UPDATE",
            &[&store_id],
        )
        .map_err(Error::pg("read the store's shipped position"))?;
    Ok(
        match (
            last_read.get::<_, Option<i64>>(0),
            last_read.get::<_, Option<i64>>(1),
        ) {
            (Some(lsn), Some(crc)) => store.holds_record(LogMark {
                lsn: lsn.unsigned_abs(),
                crc: u32::try_from(crc).unwrap_or(0),
                epoch: last_read
                    .get::<_, Option<i64>>(2)
                    .map(|e| u64::from_le_bytes(e.to_le_bytes())),
            }),
            _ => true,
        },
    )
}

/// Where shipping a session starts, as PostgreSQL's copy says under its row lock.
struct Start {
    /// The events PostgreSQL holds: shipping goes on after them.
    from: u64,
    /// Their history digest (`None`: the row is to be made).
    history: Option<digest::Hash>,
    /// The surface this shipper remembers is for another count: rewritten whole.
    stale_surface: bool,
    /// A copy of an earlier incarnation removed (and its erasure remembered).
    recreated: Option<Erased>,
}

/// Reads and locks the session's row: where shipping starts, or the step that ends it there
/// (owned by another store since, or its history diverged from the store's).
fn start_of(
    tx: &mut postgres::Transaction<'_>,
    store_id: &str,
    store: &Store,
    info: &SessionInfo,
    shipped: Option<&Shipped>,
    lsn: u64,
) -> Result<std::result::Result<Start, Step>> {
    let id = &info.header.id;
    let now = tx
        .query_opt(
            "SELECT owner_store, events, store_created_lsn, history, last_event
                 FROM sessdb_sessions WHERE id = $1 FOR UPDATE",
            &[id],
        )
        .map_err(Error::pg("lock a session's row"))?;
    let afresh = Start {
        from: 0,
        history: None,
        stale_surface: false,
        recreated: None,
    };
    let Some(row) = now else {
        // The row is gone (removed in PostgreSQL by hand, or reset): all again.
        return Ok(Ok(afresh));
    };
    // Another store pulled it since (ownership moved).
    if row.get::<_, String>(0) != store_id {
        return Ok(Err(Step::OwnedElsewhere(
            row.get(0),
            row.get::<_, i64>(1).unsigned_abs(),
        )));
    }
    // Created again under the same id since it was shipped: that copy goes.
    let created = row.get::<_, Option<i64>>(2).map(i64::unsigned_abs);
    if let Some(created_lsn) = created.filter(|&l| l != info.incarnation.get()) {
        tx.execute("DELETE FROM sessdb_sessions WHERE id = $1", &[id])
            .map_err(Error::pg("remove a re-created session"))?;
        let gone = Erased {
            created_lsn,
            erased_lsn: lsn,
        };
        remember_erased(tx, store_id, id, gone)?;
        return Ok(Ok(Start {
            recreated: Some(gone),
            ..afresh
        }));
    }
    // PostgreSQL's count is the position, whatever this shipper remembered; a surface
    // remembered for another count is not trusted (rewritten whole).
    let held = row.get::<_, i64>(1).unsigned_abs();
    let history = digest::from_column(row.get(3));
    let last = row.get::<_, Option<&[u8]>>(4).and_then(digest::from_column);
    if let Some(why) = diverged(store, info, held, history.as_ref(), last.as_ref())? {
        return Ok(Err(Step::Refused(why)));
    }
    Ok(Ok(Start {
        from: held,
        history,
        stale_surface: shipped.is_none_or(|s| s.events != held),
        recreated: None,
    }))
}

/// Ships what PostgreSQL lacks of one session, inside the round's transaction: its row
/// locked, its position read from PostgreSQL (not from memory), the store checked to hold
/// the history PostgreSQL's copy was shipped from, the events after it copied.
fn ship_session(
    tx: &mut postgres::Transaction<'_>,
    store_id: &str,
    store: &Store,
    info: &SessionInfo,
    mut shipped: Option<Shipped>,
    budget: &mut u64,
    lsn: u64,
) -> Result<Step> {
    let id = &info.header.id;
    let start = match start_of(tx, store_id, store, info, shipped.as_ref(), lsn)? {
        Ok(start) => start,
        Err(step) => return Ok(step),
    };
    let Start {
        from,
        history,
        stale_surface,
        recreated,
    } = start;
    if from == 0 {
        // Shipped again from the start: nothing remembered of a copy holds.
        shipped = None;
    }
    let history = match history {
        Some(h) => h,
        None => {
            let header_json = info.header.to_json();
            insert_session(tx, info, store_id, &digest::start(&header_json))?;
            digest::start(&header_json)
        }
    };
    let to = info.events.min(from.saturating_add(*budget));
    *budget -= to - from;
    let (history, last) = if to > from {
        let (h, l) = copy_events(tx, store, info, from, to, history)?;
        (h, Some(l))
    } else {
        (history, None)
    };
    // The surface goes with the events it cites: only once the session is whole.
    let old_surface: &[u64] = match &shipped {
        Some(s) if !stale_surface => &s.surface,
        _ => &[],
    };
    let new_surface = if to == info.events {
        let surface = store.surface(id)?;
        ship_surface(tx, id, old_surface, &surface, stale_surface)?;
        surface
    } else {
        old_surface.to_vec()
    };
    let history_col: &[u8] = &history;
    let last_col: Option<&[u8]> = last.as_ref().map(|l| &l[..]);
    tx.execute(
        "UPDATE sessdb_sessions SET events = $2, store_created_lsn = $3, history = $4,
               last_event = COALESCE($5, last_event) WHERE id = $1",
        &[
            id,
            &to_i64(to),
            &to_i64(info.incarnation.get()),
            &history_col,
            &last_col,
        ],
    )
    .map_err(Error::pg("record a session's shipped position"))?;
    Ok(Step::Shipped {
        events: to - from,
        recreated,
        now: Shipped {
            owner: store_id.to_owned(),
            events: to,
            created_lsn: Some(info.incarnation.get()),
            surface: new_surface,
        },
    })
}

/// What one round of [`Shipper::ship`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Nothing to write: no transaction committed, nothing left.
    Nothing,
    /// One transaction committed; nothing left.
    Committed,
    /// One transaction committed; its budget ran out with more to ship.
    CommittedMoreLeft,
}

/// What [`ship_session`] did with one session.
enum Step {
    /// Another store owns it (its id, and how many events PostgreSQL holds).
    OwnedElsewhere(String, u64),
    /// Not shipped: PostgreSQL's copy is not this store's history (why, for the user).
    Refused(String),
    /// Shipped `events` more (after removing and erasing a copy of an earlier incarnation).
    Shipped {
        events: u64,
        recreated: Option<Erased>,
        now: Shipped,
    },
}

/// Why PostgreSQL's copy of a session, `held` events long with these digests, is not the
/// beginning of the store's session; `None` when it is.
fn diverged(
    store: &Store,
    info: &SessionInfo,
    held: u64,
    history: Option<&digest::Hash>,
    last: Option<&digest::Hash>,
) -> Result<Option<String>> {
    const WAY_ON: &str = "`sessdb ship --reset SESSION` replaces PostgreSQL's copy with this store's (Shipper::reset), or pull PostgreSQL's copy into another store first to keep it";
    if history.is_none() {
        return Ok(Some(format!(
            "PostgreSQL's row has no readable history digest: not written by this sessdb; {WAY_ON}"
        )));
    }
    if held > info.events {
        return Ok(Some(format!(
            "PostgreSQL holds {held} events of it and this store {}: it was not shipped from this store as it is now (restored from a backup, or cut by salvage); {WAY_ON}",
            info.events
        )));
    }
    if held == 0 {
        return Ok(None);
    }
    let mut mine = None;
    store.visit_events(&info.header.id, held - 1..held, |e| {
        mine = Some(digest::of_ref(&e));
        Ok(())
    })?;
    if mine.is_none() || mine.as_ref() != last {
        return Ok(Some(format!(
            "event {} in this store is not the one shipped from it: the store's history is not the one PostgreSQL holds (restored from a backup, or salvaged), and its later events would follow another history; {WAY_ON}",
            held - 1
        )));
    }
    Ok(None)
}

/// Records in `sessdb_erased` that `store_id` erased this incarnation of `id`.
fn remember_erased(
    tx: &mut postgres::Transaction<'_>,
    store_id: &str,
    id: &str,
    gone: Erased,
) -> Result<()> {
    tx.execute(
        "INSERT INTO sessdb_erased (store_id, session_id, store_created_lsn, erased_lsn)
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        &[
            &store_id,
            &id,
            &to_i64(gone.created_lsn),
            &to_i64(gone.erased_lsn),
        ],
    )
    .map_err(Error::pg("remember an erased session"))?;
    Ok(())
}

pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn insert_session(
    tx: &mut postgres::Transaction<'_>,
    info: &SessionInfo,
    owner: &str,
    history: &digest::Hash,
) -> Result<()> {
    let h = &info.header;
    let c = h.columns();
    let header_json = String::from_utf8_lossy(&h.to_json()).into_owned();
    tx.execute(
        "INSERT INTO sessdb_sessions (id, owner_store, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset, header_json, events, store_created_lsn, history)
         VALUES ($1, $2, 0, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $12)",
        &[
            &h.id,
            &owner,
            &c.created_at,
            &c.cwd,
            &c.parent_session,
            &c.seed_length,
            &c.origin,
            &c.delegation_depth,
            &c.agent_preset,
            &header_json,
            &to_i64(info.incarnation.get()),
            &&history[..],
        ],
    )
    .map_err(Error::pg("insert a session"))?;
    Ok(())
}

/// The events `from..to` of a session, by `COPY`; returns the history after them (from
/// `history`, the one after `from`) and the last one's digest.
fn copy_events(
    tx: &mut postgres::Transaction<'_>,
    store: &Store,
    info: &SessionInfo,
    from: u64,
    to: u64,
    mut history: digest::Hash,
) -> Result<(digest::Hash, digest::Hash)> {
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
    let mut last = [0; 32];
    store.visit_events(id, from..to, |e| {
        last = digest::of_ref(&e);
        history = digest::extend(&history, &last);
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
    Ok((history, last))
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
