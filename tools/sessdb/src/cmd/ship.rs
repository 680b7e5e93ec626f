//! `sessdb ship STORE --postgres URL [--follow]` / `sessdb pull STORE --postgres URL --session ID...`

use std::time::{Duration, Instant};

use sessdb::StoreOptions;
use sessdb_postgres::{Shipper, ship_id};

use crate::cmd::{PathArg, is_store, open_existing, open_or_create_writer};
use crate::error::{CliError, CliResult, code, no_store};
use crate::out::{note, println, warn};

#[derive(Debug, clap::Args)]
pub struct ShipArgs {
    /// The store directory (read-only: works beside its writer).
    store: PathArg,
    /// The PostgreSQL connection string: `host=/run/postgresql dbname=sessions` or a
    /// `postgresql://` URL (a Unix socket directory as host).
    #[arg(long, value_name = "URL")]
    postgres: String,
    /// Keep following the store: ship each new record within a second, until killed;
    /// reconnects after a lost connection.
    #[arg(long)]
    follow: bool,
    /// With --follow: how often to look for new records, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 200)]
    interval_ms: u64,
}

#[derive(Debug, clap::Args)]
pub struct PullArgs {
    /// The store directory (created if missing or empty).
    store: PathArg,
    /// The PostgreSQL connection string (as for `ship`).
    #[arg(long, value_name = "URL")]
    postgres: String,
    /// The sessions to bring (the parents of forks come with them).
    #[arg(long = "session", value_name = "ID", required = true)]
    sessions: Vec<String>,
}

impl From<sessdb_postgres::Error> for CliError {
    fn from(e: sessdb_postgres::Error) -> Self {
        use sessdb_postgres::Error as E;
        match e {
            E::Store(inner) => inner.into(),
            E::Import(inner) => inner.into(),
            E::Locked { .. } => CliError::new(code::LOCKED, e.to_string()),
            E::NotFound(_) => CliError::new(code::NOT_FOUND, e.to_string()),
            E::Conflict { .. } | E::Layout { .. } | E::BadRow { .. } => {
                CliError::new(code::REJECTED, e.to_string())
            }
            _ => CliError::new(code::OTHER, e.to_string()),
        }
    }
}

pub fn ship(a: &ShipArgs, quiet: bool) -> CliResult {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let id = ship_id(&a.store)?;
    let store = open_existing(&a.store)?;
    let mut shipper = first_shipper(&a.postgres, &id)?;
    let mut warned = std::collections::BTreeSet::new();
    let mut report_round = |r: &sessdb_postgres::ShipReport| {
        let new: Vec<&(String, String)> = r
            .owned_elsewhere
            .iter()
            .filter(|(s, _)| warned.insert(s.clone()))
            .collect();
        // Named one by one up to five; beyond, counted (a store holding another store's ids).
        for (s, owner) in new.iter().take(5) {
            warn(&format!(
                "session {s:?} is owned by store {owner} (pulled there, or shipped from there first): not shipped from here"
            ));
        }
        if new.len() > 5 {
            warn(&format!(
                "{} more sessions are owned by other stores: not shipped from here",
                new.len() - 5
            ));
        }
    };
    let first = shipper.ship(&store)?;
    report_round(&first);
    note(
        quiet,
        &format!(
            "shipped {} event(s) of {} session(s) from store {id}",
            first.events,
            first.sessions.len()
        ),
    );
    if !a.follow {
        return Ok(code::OK);
    }
    let interval = Duration::from_millis(a.interval_ms.max(10));
    loop {
        std::thread::sleep(interval);
        store.refresh()?;
        match shipper.ship(&store) {
            Ok(r) => {
                report_round(&r);
                if r.events > 0 {
                    note(quiet, &format!("shipped {} event(s)", r.events));
                }
            }
            Err(sessdb_postgres::Error::Postgres { .. } | sessdb_postgres::Error::Io { .. }) => {
                shipper = reconnect(&a.postgres, &id, quiet)?;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// The shipper, waiting up to two seconds for the lock of a shipper that was just killed (its
/// server process lets go when it notices the connection gone); a live one is refused.
fn first_shipper(url: &str, id: &str) -> CliResult<Shipper> {
    let started = Instant::now();
    loop {
        match Shipper::new(url, id) {
            Err(sessdb_postgres::Error::Locked { .. })
                if started.elapsed() < Duration::from_secs(2) =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            other => return other.map_err(CliError::from),
        }
    }
}

/// A new connection after a lost one, retried with a growing pause: what committed before is
/// read back from PostgreSQL, so nothing is lost or doubled.
fn reconnect(url: &str, id: &str, quiet: bool) -> CliResult<Shipper> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(100);
    loop {
        match Shipper::new(url, id) {
            Ok(s) => {
                note(
                    quiet,
                    &format!("reconnected after {:.1} s", started.elapsed().as_secs_f64()),
                );
                return Ok(s);
            }
            // The dead connection's lock goes when the server notices it gone.
            Err(
                sessdb_postgres::Error::Postgres { .. } | sessdb_postgres::Error::Locked { .. },
            ) => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

pub fn pull(a: &PullArgs, quiet: bool) -> CliResult {
    let store = open_or_create_writer(&a.store, StoreOptions::default())?;
    let id = ship_id(&a.store)?;
    let mut client = sessdb_postgres::connect(&a.postgres)?;
    let report = sessdb_postgres::pull(&mut client, &store, &id, &a.sessions)?;
    store.close()?;
    for s in &report.sessions {
        let what = match s.outcome {
            sessdb_formats::Outcome::Imported => "pulled",
            sessdb_formats::Outcome::Extended { .. } => "extended",
            _ => "already here",
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
