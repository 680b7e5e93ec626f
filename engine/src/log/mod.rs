//! The durable log's on-disk codecs: segment headers, record frames, record payloads. All
//! pure (`&[u8]` in, values out); `docs/FORMAT.md` is their specification.

#[cfg(test)]
mod format_doc;
pub mod frame;
pub mod record;
pub mod recovery;
pub mod segment;
