//! The DSH v0 JSONL session format: layout, export and import (packed chunk rows: [`crate::pack`])
//! (`docs/FORMATS.md`).

pub(crate) mod export;
mod grammar;
mod import;
pub mod layout;
mod lines;

pub use crate::pack::MAX_PIECES_PER_ROW;
pub use crate::report::{ImportReport, ImportedSession, TornTail};
pub use export::{
    ExportOptions, ExportReport, export_jsonl, export_jsonl_with_progress, write_session_jsonl,
};
pub use import::{
    MAX_SESSION_BYTES, import_jsonl, import_jsonl_reader, import_jsonl_with_progress, plan_jsonl,
    plan_jsonl_reader,
};
pub use lines::{Line, LineReader};
