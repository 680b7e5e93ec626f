//! The one place in sessdb that uses `unsafe`: mapping a sealed segment into memory,
//! allocating the active segment's space ahead of its writes, and starting the writeback of
//! what its appends filled.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::sync::Arc;

/// Maps the whole of `file` read-only.
///
/// Callers map only sealed segments and checkpoint files: files the store has finished
/// writing and never truncates or writes again (see the invariant below).
pub(crate) fn map_sealed(file: &File) -> io::Result<memmap2::Mmap> {
    // SAFETY: memmap2 requires that the mapped file is not modified or truncated while the
    // map is alive, or reads could observe changing bytes or fault (SIGBUS). The invariant
    // the store keeps, in every process: **a file that any process may have mapped is never
    // written, truncated or rewritten in place.**
    // - A segment is mapped only once sealed: its last record written and synced and a newer
    //   segment created. Nothing writes to a sealed segment again.
    // - Salvage (`store/salvage/`), the one operation that changes old records, writes a
    //   whole replacement file and renames it over the segment; a live mapping keeps the old
    //   file's pages, so a reader beside a salvage reads the old bytes, never a fault
    //   (`tests/tests/store_files.rs` exercises it). Removing a mapped file is equally safe.
    // - Every truncation is of the newest segment, by the writer holding the lock: the
    //   torn-tail cut on a writable open, the roll's cut of the space allocated ahead before
    //   the sync that seals it, and a clean close's cut of that space (`Tail::trim_ahead`).
    //   No process maps the newest segment read-only (read-only opens map only segments with
    //   a successor; the writer's own write windows are unmapped before any cut); and a
    //   segment with a successor was synced whole before that successor was created, so it
    //   never has a torn tail, even when open removes an interrupted successor.
    // - Checkpoint files are mapped to read their bodies (the newest of a chain on open, the
    //   earlier ones when first read): each is written under a
    //   temp name, synced and renamed into place, and never written again; retention and
    //   salvage only remove them, which leaves a live mapping intact.
    // - The single writer holds the store's lock for all of this.
    unsafe { memmap2::Mmap::map(file) }
}

/// A writable map of part of the active segment: appends become a `memcpy` into the page
/// cache instead of a `pwrite` each. The bytes are the file's (shared mapping), so an
/// acknowledged append survives a crash of the process exactly as after a `pwrite`, and
/// `fdatasync` on the file makes them durable.
pub struct WriteWindow {
    /// Shared with the prefault helper ([`Prefault`]), which only advises the kernel about
    /// the range and never reads or writes through it.
    map: Arc<memmap2::MmapRaw>,
    /// File offset of the map's first byte.
    start: u64,
}

impl std::fmt::Debug for WriteWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "WriteWindow({}..{})",
            self.start,
            self.start + self.map.len() as u64
        )
    }
}

impl WriteWindow {
    /// Copies `bytes` to file offset `at`, the first `head` bytes strictly before the rest;
    /// `false` (nothing written) if they do not fit.
    ///
    /// Why the order: a process killed in the middle of a copy leaves the stores it made
    /// before the kill, and `memcpy` makes them in no promised order (glibc's vector copy of
    /// a few hundred bytes stores the first block *last*). A frame whose header is still
    /// zeros while its payload is written looks like a damaged record followed by data, which
    /// recovery must refuse; a frame whose header is complete and whose payload is torn ends
    /// in zeros after its claimed length, which recovery cuts as a torn tail. So the header
    /// goes first, and a compiler fence keeps the compiler from merging or reordering the two
    /// copies (a kill interrupts this thread at an instruction boundary, so the stores that
    /// happened are a prefix of the program order that remains).
    pub fn write(&mut self, at: u64, head: usize, bytes: &[u8]) -> bool {
        let Some(from) = at
            .checked_sub(self.start)
            .and_then(|o| usize::try_from(o).ok())
        else {
            return false;
        };
        if from
            .checked_add(bytes.len())
            .is_none_or(|end| end > self.map.len())
        {
            return false;
        }
        let head = head.min(bytes.len());
        let (src_head, src_rest) = bytes.split_at(head);
        // SAFETY: `from..from + bytes.len()` lies inside the mapping (checked above), which
        // lives as long as `self.map`. Only this writer (holding `&mut self`, under the
        // store's tail lock) stores into it; the prefault helper holding the other `Arc`
        // only calls `madvise` on it. `bytes` is ordinary memory, never inside the map, so
        // the ranges do not overlap.
        unsafe {
            let dst = self.map.as_mut_ptr().add(from);
            std::ptr::copy_nonoverlapping(src_head.as_ptr(), dst, src_head.len());
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            std::ptr::copy_nonoverlapping(src_rest.as_ptr(), dst.add(head), src_rest.len());
        }
        true
    }

    /// A job for the prefault helper: fault the whole window in, writable, ahead of the
    /// writer, so appends do not take a page fault every 4 KiB.
    pub(crate) fn prefault(&self) -> Prefault {
        Prefault {
            map: Arc::clone(&self.map),
        }
    }
}

/// Faults a window's pages in, writable, on another thread (`MADV_POPULATE_WRITE`): the page
/// cache pages are allocated, zeroed and mapped before the writer reaches them. A failure
/// (an old kernel, a full page cache) only means the writer faults them itself.
pub(crate) struct Prefault {
    map: Arc<memmap2::MmapRaw>,
}

impl Prefault {
    pub(crate) fn run(self) {
        #[cfg(target_os = "linux")]
        {
            let _ = self.map.advise(memmap2::Advice::PopulateWrite);
        }
    }
}

impl WriteWindow {
    /// File offsets `start..end` the window maps.
    pub(crate) fn range(&self) -> (u64, u64) {
        (self.start, self.start + self.map.len() as u64)
    }
}

/// Starts writeback of the file's dirty pages in `start..start + len` and returns at once
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`): the pages go to the device on the kernel's
/// time, so the `fdatasync` that later makes them durable finds little left to write. It
/// promises nothing about durability; an error only means that sync writes them instead.
#[cfg(target_os = "linux")]
pub(crate) fn start_writeback(file: &File, start: u64, len: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(start), Ok(len)) = (libc::off64_t::try_from(start), libc::off64_t::try_from(len))
    else {
        return;
    };
    // SAFETY: `sync_file_range` reads no memory of ours; the descriptor is owned by `file`,
    // which outlives the call. `SYNC_FILE_RANGE_WRITE` only starts writeback of dirty pages:
    // it changes no data and no file size.
    let _ =
        unsafe { libc::sync_file_range(file.as_raw_fd(), start, len, libc::SYNC_FILE_RANGE_WRITE) };
}

/// Elsewhere the later sync writes everything.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_file: &File, _start: u64, _len: u64) {}

/// Maps bytes `start..end` of `file` writable and shared. Only for space `preallocate` has
/// allocated: a store to a mapped page without a block behind it would fault on a full disk.
pub(crate) fn map_window(file: &File, start: u64, end: u64) -> io::Result<WriteWindow> {
    let len = usize::try_from(end.saturating_sub(start))
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // The range is the active segment's allocated space ahead of its appends; the writer (the
    // only process that writes or truncates it, by the store's lock) drops the window, and
    // waits for the prefault helper to drop its handle, before the one truncation of an
    // active segment (the roll cuts the sealed segment to its records); read-only processes
    // never map the active segment. Other processes may `pread` these bytes meanwhile: they
    // see what a `pwrite` would have shown.
    let map = memmap2::MmapOptions::new()
        .offset(start)
        .len(len)
        .map_raw(file)?;
    Ok(WriteWindow {
        map: Arc::new(map),
        start,
    })
}

/// Allocates the file's blocks up to `len` bytes (extending it with zeros), so appends within
/// that space neither allocate blocks nor change the file size. (On ext4 the extents stay
/// *unwritten* until data lands in them, which a sync must then record; `Sync` stores write
/// the space with zeros once, `StorageFile::preallocate_written`.) A file system that cannot
/// allocate ahead (`EOPNOTSUPP`) is left as it is: appends then extend the file as before.
/// A full disk is an error here, at allocation, never later.
///
/// Returns whether the space is allocated (not a hole a store could fault on).
#[cfg(target_os = "linux")]
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let len =
        libc::off_t::try_from(len).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `fallocate` reads no memory of ours; the descriptor is owned by `file`, which
    // outlives the call. Mode 0 allocates and extends the size; it never discards data.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EOPNOTSUPP) => Ok(false),
        _ => Err(err),
    }
}

/// Elsewhere appends extend the file as they go.
#[cfg(not(target_os = "linux"))]
pub(crate) fn preallocate(_file: &File, _len: u64) -> io::Result<bool> {
    Ok(false)
}
