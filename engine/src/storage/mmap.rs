//! The one place in sessdb that uses `unsafe`: mapping a sealed segment into memory.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;

/// Maps the whole of `file` read-only.
///
/// Callers map only sealed segments: files the store has finished writing, never truncates
/// and never writes again while a mapping exists (repair truncates only the last segment,
/// and does so before anything maps it).
pub(crate) fn map_sealed(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the mapped file is not modified or truncated while the
    // map is alive, or reads could observe changing bytes or fault. The store upholds this:
    // a segment is mapped only once sealed (its last record written and synced, a newer
    // segment created), sealed segments are immutable by design, and the single writer
    // process holds the store's lock. Read-only opens map only segments that are not the
    // last one, which a live writer no longer touches.
    unsafe { memmap2::Mmap::map(file) }
}
