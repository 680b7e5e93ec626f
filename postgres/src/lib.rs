//! Ship a sessdb store's sessions to PostgreSQL continuously, exactly once, and pull
//! sessions back onto any machine (`docs/FORMATS.md` §4).
//!
//! sessdb stays the embedded store on each host; PostgreSQL is the shared place a fleet's
//! sessions are queried in and resumed from. [`Shipper`] copies every committed session of a
//! store into the `sessdb_*` tables (one row per event, the exact `data` text beside a
//! `jsonb` copy) and, called again, the events appended since: the shipped position of each
//! session commits with its rows, so a shipper that dies anywhere resumes without a gap or a
//! duplicate. [`pull`] brings sessions into a local store through the same import pipeline
//! as every other format, and moves their ownership there.
//!
//! Synchronous: the `postgres` crate runs its own small runtime; an embedder needs none.
//!
//! ```no_run
//! use sessdb::{Store, StoreOptions};
//! use sessdb_postgres::{Shipper, ship_id};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = std::path::Path::new("./my-store");
//! let store = Store::open_read_only(dir, StoreOptions::default())?;
//! let mut shipper = Shipper::new("host=/run/postgresql dbname=sessions", &ship_id(dir)?)?;
//! loop {
//!     store.refresh()?; // catch up with the store's writer
//!     let report = shipper.ship(&store)?;
//!     println!("{} events shipped", report.events);
//!     std::thread::sleep(std::time::Duration::from_millis(200));
//! }
//! # }
//! ```

#![forbid(unsafe_code)]

mod digest;
mod error;
mod identity;
mod pull;
mod rows;
mod schema;
mod ship;
mod tls;

pub use error::{Error, Result};
pub use identity::{SHIP_ID_FILE, ship_id};
pub use pull::{Pull, pull};
pub use schema::{DDL, LAYOUT_VERSION};
pub use ship::{Connection, EVENTS_PER_TRANSACTION, RECHECK_EVERY, ShipReport, Shipper, connect};
