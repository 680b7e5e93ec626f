//! SQLite export and import (DESIGN §4, `docs/FORMATS.md`): one database file holding the
//! `sessions` and `events` tables, STRICT, queryable with SQLite's JSON functions.

mod export;
mod import;
mod schema;

pub use export::{SqliteExportOptions, export_sqlite};
pub use import::{import_sqlite, plan_sqlite};
pub use schema::{APPLICATION_ID, DDL, SCHEMA_VERSION};
