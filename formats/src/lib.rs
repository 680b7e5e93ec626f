//! DSH session formats for sessdb stores (DESIGN §4): export a store to the DSH v0 JSONL
//! layout (raw or zstd) or to a SQLite database, and import either back.
//!
//! Both directions preserve every event exactly (`data` bytes, provenance, surface op,
//! `ignorable`, headers). Import validates every event with the engine's acceptance function,
//! validates every session of the input before it stores any (one refused or conflicting
//! session and nothing is stored), and appends nothing (no end-seed marker, no closers).
//!
//! Each import and export has a `*_with_progress` form that reports how far it has come
//! (for progress bars), and [`jsonl::import_jsonl_reader`] reads one session file from any
//! reader (stdin), streamed. Every importer ends in the same pipeline (migrations, the
//! vocabulary rule, the store's acceptance function), so each decides a session alike.
//!
//! Features (both default): `sqlite` (the [`sqlite`] module; SQLite is linked through
//! rusqlite, built in only when the final binary enables rusqlite's `bundled`) and `zstd`
//! (`session.jsonl.zstd` files; without it a zstd file or export is refused with a clear
//! error).
//!
//! ```
//! use std::sync::Arc;
//! use sessdb::storage::MemStorage;
//! use sessdb::{SessionHeader, Store, StoreOptions};
//! use sessdb_formats::jsonl::{ExportOptions, export_jsonl, import_jsonl};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let store = Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default())?;
//! store.create_session(SessionHeader::new("s1", 0), Vec::new())?;
//! let dir = tempfile::tempdir()?;
//! export_jsonl(&store, dir.path(), &ExportOptions::default())?;
//!
//! let copy = Store::open_with(Arc::new(MemStorage::new()), StoreOptions::default())?;
//! let report = import_jsonl(&copy, dir.path())?;
//! assert_eq!(report.sessions[0].id, "s1");
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

mod admit;
mod error;
pub mod jsonl;
pub mod legacy;
pub mod pack;
mod progress;
mod report;
mod select;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod target;

pub use admit::{SourceSession, import_sessions};
pub use error::{Error, Result};
pub use progress::Progress;
pub use report::{ImportReport, ImportedSession, TornTail};
pub use target::Outcome;
