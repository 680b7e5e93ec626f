//! The seam's traits and the types they share: how the store sees a directory of files.

use std::io;
use std::ops::Deref;
use std::sync::Arc;

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Existing file, read only.
    Read,
    /// Existing file, read and write.
    ReadWrite,
    /// A new file; fails if it exists.
    CreateNew,
}

/// The immutable bytes of a file that no longer changes (a sealed segment): mapped from disk
/// by the file backend, a shared copy in memory otherwise.
#[derive(Debug, Clone)]
pub struct FileView(Arc<ViewInner>);

#[derive(Debug)]
enum ViewInner {
    Mapped(memmap2::Mmap),
    Owned(Vec<u8>),
}

impl FileView {
    pub(crate) fn owned(bytes: Vec<u8>) -> Self {
        Self(Arc::new(ViewInner::Owned(bytes)))
    }

    pub(crate) fn mapped(map: memmap2::Mmap) -> Self {
        Self(Arc::new(ViewInner::Mapped(map)))
    }
}

impl Deref for FileView {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &*self.0 {
            ViewInner::Mapped(m) => m,
            ViewInner::Owned(v) => v,
        }
    }
}

/// A held lock on a store directory; dropping it releases the lock.
pub type LockGuard = Box<dyn std::any::Any + Send + Sync>;

/// A directory of files.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Creates `dir` and its parents.
    ///
    /// # Errors
    /// I/O errors.
    fn create_dir_all(&self, dir: &str) -> io::Result<()>;
    /// The names of the files in `dir` (not recursive); empty if `dir` does not exist.
    ///
    /// # Errors
    /// I/O errors.
    fn list(&self, dir: &str) -> io::Result<Vec<String>>;
    /// As [`Storage::list`], each name with the identity of the file it names as the
    /// listing read it — the second number of [`StorageFile::identity`] for that file opened
    /// then (an inode number) — or `None` where the backend cannot say without opening it.
    /// A read-only store opens its older segments at their first use only where every one
    /// is listed with an identity, so that it can tell a file replaced since its listing
    /// (`docs/DESIGN.md` §3.6).
    ///
    /// # Errors
    /// I/O errors.
    fn list_with_ids(&self, dir: &str) -> io::Result<Vec<(String, Option<u64>)>> {
        Ok(self.list(dir)?.into_iter().map(|n| (n, None)).collect())
    }
    /// Opens `path`.
    ///
    /// # Errors
    /// `NotFound`, `AlreadyExists` (for [`OpenMode::CreateNew`]), other I/O errors.
    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>>;
    /// Atomically replaces `to` by `from`.
    ///
    /// # Errors
    /// I/O errors.
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Removes a file.
    ///
    /// # Errors
    /// I/O errors.
    fn remove(&self, path: &str) -> io::Result<()>;
    /// Makes the entries of `dir` (creations, renames, removals) durable.
    ///
    /// # Errors
    /// I/O errors.
    fn sync_dir(&self, dir: &str) -> io::Result<()>;
    /// Takes the exclusive writer lock `path` without waiting: `Ok(None)` if another holder
    /// has it.
    ///
    /// # Errors
    /// I/O errors.
    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>>;
    /// A description of where the files are, for messages.
    fn describe(&self, path: &str) -> String;
    /// Bytes the file system holding `dir` has free for this process (`statvfs`'s
    /// `f_bavail` blocks), or `None` where that is not known (the default: a storage in
    /// memory). Compaction stages no more files ahead than this allows.
    ///
    /// # Errors
    /// I/O errors.
    fn available_bytes(&self, _dir: &str) -> io::Result<Option<u64>> {
        Ok(None)
    }
}

/// One open file, read and written at explicit offsets.
pub trait StorageFile: Send + Sync + std::fmt::Debug {
    /// The file size.
    ///
    /// # Errors
    /// I/O errors.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    ///
    /// # Errors
    /// I/O errors.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// Fills `buf` from `offset`.
    ///
    /// # Errors
    /// `UnexpectedEof` past the end, other I/O errors.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`.
    ///
    /// # Errors
    /// I/O errors.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Truncates or extends the file.
    ///
    /// # Errors
    /// I/O errors.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes the file's data durable (`fdatasync`).
    ///
    /// # Errors
    /// I/O errors.
    fn sync_data(&self) -> io::Result<()>;
    /// The whole content as an immutable view; the caller promises the file no longer changes.
    ///
    /// # Errors
    /// I/O errors.
    fn view(&self) -> io::Result<FileView>;

    /// Allocates space up to `len` bytes, extending the file with zeros if it is shorter
    /// (never shortening it). The active segment is allocated ahead of its appends. Returns
    /// whether the space is really allocated (only then may it be mapped for writing).
    ///
    /// # Errors
    /// I/O errors (a full disk).
    fn preallocate(&self, len: u64) -> io::Result<bool>;

    /// As [`StorageFile::preallocate`], and the space from `from` to `len` written with zeros
    /// (their writeback started), so later syncs of appends into it write data only. On ext4
    /// an allocated but unwritten extent must be converted, with a synchronous metadata
    /// write, by every `fdatasync` that first covers data in it; that doubled the time of
    /// `Sync` batches (`docs/DESIGN.md` §3.2). No byte before `from` is written: the appender
    /// may be writing a record there (the first record after an open or a roll extends the
    /// file itself while this runs on the helper). **Never synced here**: the store's own
    /// syncs make the zeros durable with its records. A sync on the helper's thread that
    /// failed took the file's write-back error for itself, and the appender's `fdatasync` of
    /// the same file then succeeded although its record's pages were lost
    /// (`tests/tests/store_crash.rs`, `..._with_zeros_written_ahead_...`). Backends without
    /// that cost allocate as `preallocate` does.
    ///
    /// # Errors
    /// I/O errors (a full disk).
    fn preallocate_written(&self, from: u64, len: u64) -> io::Result<bool> {
        let _ = from;
        self.preallocate(len)
    }

    /// Whether [`StorageFile::preallocate_written`] does work worth moving off an appender's
    /// thread (it writes zeros); a `Sync` store then runs it on its helper thread
    /// ahead of the appends. Backends where it only allocates say `false` and keep every
    /// operation on the appender's thread (the crash simulator's operation order stays
    /// deterministic).
    fn writes_zeros_ahead(&self) -> bool {
        false
    }

    /// A writable map of `start..end`, space `preallocate` allocated; `None` where the
    /// backend writes with `write_at` only (memory, the crash simulator).
    ///
    /// # Errors
    /// I/O errors.
    fn map_window(&self, _start: u64, _end: u64) -> io::Result<Option<super::WriteWindow>> {
        Ok(None)
    }

    /// Starts writing `start..start + len` to the device without waiting for it (the active
    /// segment's filled windows, on the helper thread), so a later sync has less to write.
    /// Durability still comes only from [`StorageFile::sync_data`]. Backends without such a
    /// call do nothing.
    fn start_writeback(&self, _start: u64, _len: u64) {}

    /// Which file this is (a device and inode number, or the backend's own), so a reader can
    /// tell that a name now holds another file (salvage replaces segments whole); `None`
    /// where the backend cannot say.
    fn identity(&self) -> Option<(u64, u64)> {
        None
    }
}

/// The directory part of `path` (`""` for the root).
pub(crate) fn parent_dir(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}
