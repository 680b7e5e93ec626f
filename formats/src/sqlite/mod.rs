//! SQLite export and import (DESIGN §4, `docs/FORMATS.md`): one database file holding the
//! `sessions` and `events` tables, STRICT, queryable with SQLite's JSON functions.

mod columns;
mod dsh;
mod dsh_export;
mod export;
mod import;
mod listing;
mod replace;
mod schema;

pub use dsh::{DSH_APPLICATION_ID, DSH_DDL, DSH_SCHEMA_VERSION};
pub use export::{
    SqliteExportOptions, SqliteExportReport, SqliteLayout, export_sqlite,
    export_sqlite_with_progress,
};
pub use import::{import_sqlite, import_sqlite_with_progress, plan_sqlite};
pub use schema::{
    APPLICATION_ID, DDL, DDL_V1, DDL_V2, SCHEMA_VERSION, SCHEMA_VERSION_V1, SCHEMA_VERSION_V2,
};
