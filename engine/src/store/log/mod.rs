//! The log as recovery reads it: the segment files and their header rules (`discover.rs`),
//! and the cursor that walks a segment's frames and asks the decision table wherever the next
//! frame is not a valid record (`cursor.rs`), and the one loop that drives it (`walk.rs`).

pub(crate) mod cursor;
pub(crate) mod discover;
pub(crate) mod walk;
