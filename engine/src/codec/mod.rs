//! Every byte on disk: segment headers, record frames, record payloads, checkpoint files.
//! All pure (`&[u8]` in, values out, no I/O); `docs/FORMAT.md` is their specification and
//! `format_doc` checks that the document's hex examples are what these encoders write.

// Decoders read bytes from disk: no indexing that can panic.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod checkpoint;
pub mod compacted;
pub(crate) mod coverage;
pub(crate) mod crc;
mod file_names;
pub(crate) mod reader;
pub use file_names::{LOCK_FILE, SALVAGE_MARKER};
#[cfg(test)]
mod format_doc;
pub mod frame;
mod kind;
mod location;
pub mod record;
pub mod segment;

pub use crate::corruption::CorruptionKind;
pub use location::EventLoc;
pub use reader::Decoded;
