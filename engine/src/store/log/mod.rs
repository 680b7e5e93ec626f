//! The log as recovery reads it: the segment files and their header rules (`discover.rs`),
//! and the cursor that walks a segment's frames and asks the decision table wherever the next
//! frame is not a valid record (`cursor.rs`), and the one loop that drives it (`walk.rs`); how a segment's file offsets are its LSNs
//! (`map.rs`: by arithmetic, or through a compacted segment's run table).

pub(crate) mod cursor;
pub(crate) mod discover;
pub(crate) mod map;
pub(crate) mod record_at;
pub(crate) mod recovery;
pub(crate) mod segments;
pub(crate) mod walk;
