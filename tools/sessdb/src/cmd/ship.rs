//! `sessdb ship STORE --postgres URL [--follow]` / `sessdb pull STORE --postgres URL --session ID...`

use std::time::{Duration, Instant};

use sessdb::StoreOptions;
use sessdb_postgres::{Shipper, ship_id};

use crate::cmd::{PathArg, is_store, open_existing, open_or_create_writer};
use crate::error::{CliError, CliResult, code, no_store};
use crate::out::{note, print_json, println, shown, warn};

#[derive(Debug, clap::Args)]
pub struct ShipArgs {
    /// The store directory (read-only: works beside its writer).
    pub store: PathArg,
    /// The PostgreSQL connection string: `host=/run/postgresql dbname=sessions` or a
    /// `postgresql://` URL (a Unix socket directory as host); TLS as libpq's `sslmode`
    /// (`require`, `verify-ca`, `verify-full`, ...) and `sslrootcert` ask. Without it:
    /// `$DATABASE_URL`, else libpq's `PGHOST`, `PGPORT`, `PGUSER`, `PGPASSWORD`,
    /// `PGDATABASE`, `PGSSLMODE`, `PGSSLROOTCERT` (no password on the command line).
    #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    postgres: Option<String>,
    /// Keep following the store: ship each new record within a second, until killed; waits
    /// for a server that is not up yet, and reconnects after a lost connection, in every
    /// phase (the first catch-up too). A refused session is warned about, not fatal.
    #[arg(long)]
    follow: bool,
    /// With --follow: how often to look for new records, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    interval_ms: u64,
    /// Remove PostgreSQL's copy of this session (owned by this store) first, so this store's
    /// copy is shipped whole: for a session a ship refused because PostgreSQL's copy is not
    /// this store's history (the store was restored from a backup, or salvaged). Repeatable.
    #[arg(long, value_name = "SESSION")]
    reset: Vec<String>,
    /// One JSON object per round that shipped or found something (one in all without
    /// --follow): `{"storeId", "events", "sessions", "removed", "refused": [{"session",
    /// "why"}], "ownedElsewhere": [{"session", "owner"}], "kept", "reset"}`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The store directory (created if missing or empty).
    pub store: PathArg,
    /// The PostgreSQL connection string (as for `ship`: `$DATABASE_URL` or the `PG*`
    /// variables without it).
    #[arg(long, value_name = "URL", env = "DATABASE_URL", hide_env_values = true)]
    postgres: Option<String>,
    /// The sessions to bring (the parents of forks come with them).
    #[arg(long = "session", value_name = "ID", required = true)]
    sessions: Vec<String>,
    /// One JSON object: `{"storeId", "sessions": [{"id",
    /// "outcome": "pulled"|"extended"|"present", "events"}]}`.
    #[arg(long)]
    pub json: bool,
}

/// `ship --json`: one round.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct RoundJson<'a> {
    store_id: &'a str,
    events: u64,
    sessions: &'a [String],
    removed: &'a [String],
    refused: Vec<SessionWhy<'a>>,
    owned_elsewhere: Vec<SessionOwner<'a>>,
    kept: &'a [String],
    reset: &'a [String],
}

#[derive(serde::Serialize)]
struct SessionWhy<'a> {
    session: &'a str,
    why: &'a str,
}

#[derive(serde::Serialize)]
struct SessionOwner<'a> {
    session: &'a str,
    owner: &'a str,
}

fn round_json(id: &str, r: &sessdb_postgres::ShipReport, reset: &[String]) {
    print_json(&RoundJson {
        store_id: id,
        events: r.events,
        sessions: &r.sessions,
        removed: &r.removed,
        refused: r
            .refused
            .iter()
            .map(|(session, why)| SessionWhy { session, why })
            .collect(),
        owned_elsewhere: r
            .owned_elsewhere
            .iter()
            .map(|(session, owner)| SessionOwner { session, owner })
            .collect(),
        kept: &r.kept,
        reset,
    });
}

/// `pull --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct PulledJson<'a> {
    store_id: &'a str,
    sessions: Vec<PulledSession<'a>>,
}

#[derive(serde::Serialize)]
struct PulledSession<'a> {
    id: &'a str,
    outcome: &'static str,
    events: u64,
}

impl From<sessdb_postgres::Error> for CliError {
    fn from(e: sessdb_postgres::Error) -> Self {
        use sessdb_postgres::Error as E;
        match e {
            E::Store(inner) => inner.into(),
            E::Import(inner) => inner.into(),
            E::Locked { .. } => CliError::new(code::LOCKED, e.to_string()),
            E::NotFound(_) => CliError::new(code::NOT_FOUND, e.to_string()),
            E::Conflict { .. } | E::Layout { .. } | E::BadRow { .. } | E::Tampered { .. } => {
                CliError::new(code::REJECTED, e.to_string())
            }
            _ => CliError::new(code::OTHER, e.to_string()),
        }
    }
}

/// What the warnings of a running ship have named already: each session once.
#[derive(Default)]
struct Named {
    owned: std::collections::BTreeSet<String>,
    refused: std::collections::BTreeSet<String>,
}

impl Named {
    /// Warns about what this round newly found: sessions owned elsewhere (named one by one up
    /// to five, then counted — a store holding another store's ids), sessions refused, and
    /// sessions kept for a store whose log is no longer the one shipped from.
    fn round(&mut self, r: &sessdb_postgres::ShipReport, refused_too: bool) {
        let new: Vec<&(String, String)> = r
            .owned_elsewhere
            .iter()
            .filter(|(s, _)| self.owned.insert(s.clone()))
            .collect();
        for (s, owner) in new.iter().take(5) {
            warn(&format!(
                "session {:?} is owned by store {owner} (pulled there, or shipped from there first): not shipped from here",
                shown(s)
            ));
        }
        if new.len() > 5 {
            warn(&format!(
                "{} more sessions are owned by other stores: not shipped from here",
                new.len() - 5
            ));
        }
        if refused_too {
            for (s, why) in &r.refused {
                if self.refused.insert(s.clone()) {
                    warn(&format!("session {:?} not shipped: {why}", shown(s)));
                }
            }
        }
        for s in &r.kept {
            warn(&format!(
                "session {:?} is in PostgreSQL but not in this store, whose log no longer holds the last record shipped from it (restored from a backup, or salvaged): kept in PostgreSQL, now owned by lost/<ship id>; pull it to take it back",
                shown(s)
            ));
        }
    }
}

pub fn ship(a: &ShipArgs, quiet: bool) -> CliResult {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let url = connection(a.postgres.as_deref())?;
    let id = ship_id(&a.store)?;
    let store = open_existing(&a.store)?;
    let mut shipper = if a.follow {
        connect(&url, &id, quiet, Phase::Start)?
    } else {
        connect(&url, &id, quiet, Phase::Once)?
    };
    let mut reset = Vec::new();
    if !a.reset.is_empty() {
        reset = shipper.reset(&a.reset)?;
        note(
            quiet,
            &format!(
                "reset {} session(s): PostgreSQL's copy removed, this store's shipped whole",
                reset.len()
            ),
        );
    }
    let mut named = Named::default();
    let mut first = true;
    let interval = Duration::from_millis(a.interval_ms.max(10));
    loop {
        match shipper.ship(&store) {
            Ok(r) => {
                named.round(&r, a.follow);
                let found = r.events > 0
                    || !r.removed.is_empty()
                    || !r.refused.is_empty()
                    || !r.kept.is_empty();
                if a.json && (first || found) {
                    round_json(&id, &r, if first { &reset } else { &[] });
                }
                if first {
                    note(
                        quiet,
                        &format!(
                            "shipped {} event(s) of {} session(s) from store {id}",
                            r.events,
                            r.sessions.len()
                        ),
                    );
                } else if r.events > 0 {
                    note(quiet, &format!("shipped {} event(s)", r.events));
                }
                if !a.follow {
                    return refused(&r.refused);
                }
                first = false;
            }
            // Every phase reconnects under --follow: the first catch-up too.
            Err(sessdb_postgres::Error::Postgres { .. } | sessdb_postgres::Error::Io { .. })
                if a.follow =>
            {
                shipper = connect(&url, &id, quiet, Phase::Lost)?;
                continue;
            }
            Err(e) => return Err(e.into()),
        }
        std::thread::sleep(interval);
        store.refresh()?;
    }
}

/// A one-off ship that shipped every session but some: exit 4, naming them.
fn refused(list: &[(String, String)]) -> CliResult {
    match list {
        [] => Ok(code::OK),
        [(s, why)] => Err(CliError::new(
            code::REJECTED,
            format!(
                "session {:?} not shipped (the others were): {why}",
                shown(s)
            ),
        )),
        [(s, why), rest @ ..] => Err(CliError::new(
            code::REJECTED,
            format!(
                "{} sessions not shipped (the others were): {:?} and {}; the first: {why}",
                list.len(),
                shown(s),
                rest.iter()
                    .map(|(s, _)| format!("{:?}", shown(s)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// How long a shipper waits for the lock of a shipper that was just killed (its server
/// process lets go when it notices the connection gone) before it says a live one has it.
const LOCK_WAIT: Duration = Duration::from_secs(2);

/// Why [`connect`] connects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A one-off `ship`: a server that does not answer is an error at once.
    Once,
    /// `--follow` starting: the server may not be up yet; a live second shipper is refused.
    Start,
    /// After a lost connection: the dead connection's lock goes when the server notices.
    Lost,
}

/// The time a connection loop waits by: the clock and the sleep (a test's are its own).
trait Waiting {
    fn elapsed(&self) -> Duration;
    fn sleep(&mut self, pause: Duration);
}

/// Real time, from when the loop started.
struct RealTime(Instant);

impl Waiting for RealTime {
    fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
    fn sleep(&mut self, pause: Duration) {
        std::thread::sleep(pause);
    }
}

/// A shipper of store `id` on `url`, as [`connect_by`] gets one.
fn connect(url: &str, id: &str, quiet: bool, phase: Phase) -> CliResult<Shipper> {
    connect_by(
        || Shipper::new(url, id),
        quiet,
        phase,
        &mut RealTime(Instant::now()),
    )
}

/// A connection by `attempt`: the lock of a shipper just killed is waited for up to
/// [`LOCK_WAIT`] (for ever after a lost connection: it is this shipper's own), a server that
/// cannot be reached is retried with a growing pause (not in [`Phase::Once`]); what committed
/// before is read back from PostgreSQL, so nothing is lost or doubled.
fn connect_by<S>(
    mut attempt: impl FnMut() -> Result<S, sessdb_postgres::Error>,
    quiet: bool,
    phase: Phase,
    time: &mut dyn Waiting,
) -> CliResult<S> {
    let mut pause = Duration::from_millis(100);
    let mut said = false;
    loop {
        match attempt() {
            Ok(s) => {
                let after = time.elapsed().as_secs_f64();
                if phase == Phase::Lost {
                    note(quiet, &format!("reconnected after {after:.1} s"));
                } else if said {
                    note(quiet, &format!("connected after {after:.1} s"));
                }
                return Ok(s);
            }
            // A live second shipper is refused once LOCK_WAIT has passed, counted from the
            // first attempt (not once more: before, `--follow` waited twice as long).
            Err(e @ sessdb_postgres::Error::Locked { .. }) => {
                if phase != Phase::Lost && time.elapsed() >= LOCK_WAIT {
                    return Err(e.into());
                }
                time.sleep(Duration::from_millis(50));
            }
            Err(e @ sessdb_postgres::Error::Postgres { .. }) if phase != Phase::Once => {
                if !said {
                    note(quiet, &format!("{e}; retrying until it answers"));
                    said = true;
                }
                time.sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

pub fn pull(a: &PullArgs, quiet: bool) -> CliResult {
    let url = connection(a.postgres.as_deref())?;
    // Read and checked before anything is written here: a refused pull leaves no store, no
    // ship id.
    let mut client = sessdb_postgres::connect(&url)?;
    let read = sessdb_postgres::Pull::read(&mut client, &a.sessions)?;
    let existed = a.store.exists();
    let was_store = is_store(&a.store);
    let had_id = a.store.join(sessdb_postgres::SHIP_ID_FILE).exists();
    let store = open_or_create_writer(&a.store, StoreOptions::default())?;
    let pulled =
        ship_id(&a.store).and_then(|id| read.into_store(&mut client, &store, &id).map(|r| (id, r)));
    let closed = store.close();
    drop(store);
    let (id, report) = match pulled {
        Ok(done) => done,
        Err(e) => {
            undo_pull(&a.store, existed, was_store, had_id);
            return Err(e.into());
        }
    };
    closed?;
    let outcome = |o: &sessdb_formats::Outcome| match o {
        sessdb_formats::Outcome::Imported => "pulled",
        sessdb_formats::Outcome::Extended { .. } => "extended",
        _ => "present",
    };
    if a.json {
        print_json(&PulledJson {
            store_id: &id,
            sessions: report
                .sessions
                .iter()
                .map(|s| PulledSession {
                    id: &s.id,
                    outcome: outcome(&s.outcome),
                    events: s.events,
                })
                .collect(),
        });
        return Ok(code::OK);
    }
    for s in &report.sessions {
        let what = match outcome(&s.outcome) {
            "present" => "already here",
            w => w,
        };
        println(&format!("{what}\t{}\t{} events", s.id, s.events));
    }
    note(
        quiet,
        &format!(
            "{} session(s) now owned by store {id}",
            report.sessions.len()
        ),
    );
    Ok(code::OK)
}

/// After a refused pull: what it made goes — the store it created (in a new or empty
/// directory), the ship id it wrote; a store that was there keeps all it had (the import
/// stored nothing).
fn undo_pull(dir: &std::path::Path, existed: bool, was_store: bool, had_id: bool) {
    // Best effort: the error being reported is the pull's.
    if !was_store {
        if existed {
            if let Ok(entries) = std::fs::read_dir(dir) {
                for e in entries.flatten() {
                    let p = e.path();
                    let _ = if p.is_dir() {
                        std::fs::remove_dir_all(&p)
                    } else {
                        std::fs::remove_file(&p)
                    };
                }
            }
        } else {
            let _ = std::fs::remove_dir_all(dir);
        }
    } else if !had_id {
        let _ = std::fs::remove_file(dir.join(sessdb_postgres::SHIP_ID_FILE));
    }
}

/// The connection string: `--postgres` (or `$DATABASE_URL`, which clap reads into it), else
/// one made of libpq's `PG*` variables, as `psql` reads them.
fn connection(given: Option<&str>) -> CliResult<String> {
    if let Some(url) = given {
        return Ok(url.to_owned());
    }
    let parts: Vec<String> = [
        ("PGHOST", "host"),
        ("PGPORT", "port"),
        ("PGUSER", "user"),
        ("PGPASSWORD", "password"),
        ("PGDATABASE", "dbname"),
        ("PGSSLMODE", "sslmode"),
        ("PGSSLROOTCERT", "sslrootcert"),
    ]
    .iter()
    .filter_map(|(var, key)| {
        let v = std::env::var(var).ok().filter(|v| !v.is_empty())?;
        // libpq's quoting: single quotes, backslash-escaped.
        Some(format!(
            "{key}='{}'",
            v.replace('\\', "\\\\").replace('\'', "\\'")
        ))
    })
    .collect();
    if parts.is_empty() {
        return Err(CliError::new(
            code::USAGE,
            "no PostgreSQL connection: pass --postgres URL, or set DATABASE_URL (or libpq's PGHOST, PGUSER, PGDATABASE …)",
        ));
    }
    Ok(parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Time that passes only by the loop's sleeps.
    struct Fake(Duration);

    impl Waiting for Fake {
        fn elapsed(&self) -> Duration {
            self.0
        }
        fn sleep(&mut self, pause: Duration) {
            self.0 += pause;
        }
    }

    fn locked() -> Result<(), sessdb_postgres::Error> {
        Err(sessdb_postgres::Error::Locked {
            store_id: "s".into(),
        })
    }

    /// Before: `ship --follow` beside a live shipper waited two seconds, then two more in a
    /// second loop, and was refused after ~4.1 s where FORMATS.md says two.
    #[test]
    fn a_live_shipper_is_refused_after_the_lock_wait_once() {
        for phase in [Phase::Once, Phase::Start] {
            let mut time = Fake(Duration::ZERO);
            let mut attempts = 0;
            let got = connect_by(
                || {
                    attempts += 1;
                    locked()
                },
                true,
                phase,
                &mut time,
            );
            assert!(got.is_err_and(|e| e.code == code::LOCKED));
            assert!(time.0 >= LOCK_WAIT && time.0 < LOCK_WAIT + Duration::from_millis(100));
            assert_eq!(attempts, 41);
        }
        // A lock let go within the wait: connected.
        let mut time = Fake(Duration::ZERO);
        let mut left = 5;
        let got = connect_by(
            || {
                left -= 1;
                if left > 0 { locked() } else { Ok(()) }
            },
            true,
            Phase::Start,
            &mut time,
        );
        assert!(got.is_ok());
    }
}
