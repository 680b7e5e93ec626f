//! The one place in sessdb that uses `unsafe`: mapping a sealed segment into memory, and
//! allocating the active segment's space ahead of its writes.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;

/// Maps the whole of `file` read-only.
///
/// Callers map only sealed segments: files the store has finished writing and never
/// truncates or writes again (see the invariant below).
pub(crate) fn map_sealed(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the mapped file is not modified or truncated while the
    // map is alive, or reads could observe changing bytes or fault (SIGBUS). The invariant
    // the store keeps, in every process: **a file that any process may have mapped is never
    // written, truncated or rewritten in place.**
    // - A segment is mapped only once sealed: its last record written and synced and a newer
    //   segment created. Nothing writes to a sealed segment again.
    // - Salvage (`store/salvage.rs`), the one operation that changes old records, writes a
    //   whole replacement file and renames it over the segment; a live mapping keeps the old
    //   file's pages, so a reader beside a salvage reads the old bytes, never a fault
    //   (`tests/tests/store_files.rs` exercises it). Removing a mapped file is equally safe.
    // - The only truncation is the torn-tail cut of the newest segment on a writable open.
    //   No process maps the newest segment (read-only opens map only segments with a
    //   successor); and a segment with a successor was synced whole before that successor was
    //   created, so it never has a torn tail, even when open removes an interrupted successor.
    // - The single writer holds the store's lock for all of this.
    unsafe { memmap2::Mmap::map(file) }
}

/// Allocates the file's blocks up to `len` bytes (extending it with zeros), so appends within
/// that space neither allocate blocks nor change the file size: `fdatasync` then has no inode
/// to write, and an append never waits for one being written. A file system that cannot
/// allocate ahead (`EOPNOTSUPP`) is left as it is: appends then extend the file as before.
/// A full disk is an error here, at allocation, never later.
#[cfg(target_os = "linux")]
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `fallocate` reads no memory of ours; the descriptor is owned by `file`, which
    // outlives the call. Mode 0 allocates and extends the size; it never discards data.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(()),
        _ => Err(err),
    }
}

/// Elsewhere appends extend the file as they go.
#[cfg(not(target_os = "linux"))]
pub(crate) fn preallocate(_file: &File, _len: u64) -> io::Result<()> {
    Ok(())
}
