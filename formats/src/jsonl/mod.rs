//! The DSH v0 JSONL session format: layout, packed chunk rows, export and import
//! (`docs/FORMATS.md`).

pub(crate) mod export;
mod grammar;
mod import;
pub mod layout;
mod lines;
pub mod pack;

pub use export::{ExportOptions, ExportReport, export_jsonl, write_session_jsonl};
pub use import::{
    ImportReport, ImportedSession, MAX_SESSION_BYTES, TornTail, import_jsonl, plan_jsonl,
};
pub use lines::{Line, LineReader};
pub use pack::MAX_PIECES_PER_ROW;
