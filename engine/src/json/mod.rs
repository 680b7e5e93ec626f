//! JSON as sessdb handles it: validated once, then kept and handed out as the exact bytes
//! received.
//!
//! The engine never re-serializes event `data`. [`validate`] checks the bytes against the
//! DSH lossless-JSON rules (well-formed, finite numbers, no `-0`, bounded depth and size);
//! [`JsonRef`] then navigates the validated bytes without allocating, which is what the
//! shape checks and `deriveMessages` need; [`write_str`] escapes strings the way
//! `JSON.stringify` does, for the few values sessdb writes itself.

mod chunk_shortcut;
mod nav;
#[cfg(test)]
pub(crate) mod strategy;
mod swar;
mod tape;
mod validate;
#[cfg(any(test, fuzzing))]
mod validate_reference;
mod write;

pub(crate) use chunk_shortcut::valid_by_chunk_shortcut;
pub(crate) use nav::object_eq_with;
pub use nav::{JsonKind, JsonRef};
pub use tape::{Node, Tape};
pub use validate::{JsonError, JsonErrorKind, validate};
/// The validator before its rewrite, for the fuzz target's differential check only.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub use validate_reference::validate_reference;
pub use write::{write_i64, write_str, write_u64};

/// [`chunk_shortcut`]'s recognizer, for the fuzz target's check that it never accepts what the
/// validator refuses.
#[cfg(fuzzing)]
#[doc(hidden)]
pub fn fuzz_chunk_shortcut(data: &[u8], limits: &crate::Limits) -> bool {
    chunk_shortcut::valid_by_chunk_shortcut(data, limits)
}
