//! The real-file backend on `std::fs`.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::open_files;
use super::seam::{FileView, LockGuard, OpenMode, Storage, StorageFile};

/// Files under a root directory, reached through a handle on it: the directory it named when
/// first used stays the one written, whatever the process's working directory or the paths
/// above it become. (By path, a store opened at a relative path wrote its next segments and
/// checkpoints into whatever directory of that name the working directory held after a
/// `chdir`, another store's included, and lost the acknowledged writes there:
/// `tests/tests/working_directory.rs`.)
#[derive(Debug, Clone)]
pub struct FsStorage {
    /// The root, made absolute when the storage is made (for messages, and the first open).
    root: PathBuf,
    /// The root directory, opened on first use (a store's directory may not exist before its
    /// open makes it); shared by clones.
    dir: Arc<OnceLock<OwnedFd>>,
}

impl FsStorage {
    /// Files under `root` (a relative root is taken from the working directory now).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        Self {
            root: std::path::absolute(&root).unwrap_or(root),
            dir: Arc::new(OnceLock::new()),
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// The handle on the root directory, opened by its path on first use.
    fn dir(&self) -> io::Result<&OwnedFd> {
        if let Some(dir) = self.dir.get() {
            return Ok(dir);
        }
        let opened = open_files::with_room(|| {
            Ok(rustix::fs::open(
                &self.root,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?)
        })?;
        // Two first uses at once: one handle is kept, the other closed.
        let _ = self.dir.set(opened);
        self.dir
            .get()
            .ok_or_else(|| io::Error::other("the store directory's handle was not kept"))
    }

    /// `rel` as a path under the root handle (`.` for the root itself).
    fn at(rel: &str) -> &str {
        if rel.is_empty() { "." } else { rel }
    }

    /// Opens `rel` under the root with `flags` (always close-on-exec: a child process must
    /// not keep a store's file, its lock above all).
    fn open_at(&self, rel: &str, flags: OFlags) -> io::Result<File> {
        let dir = self.dir()?;
        let fd = open_files::with_room(|| {
            Ok(rustix::fs::openat(
                dir,
                Self::at(rel),
                flags | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o666),
            )?)
        })?;
        Ok(File::from(fd))
    }
}

impl Storage for FsStorage {
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        // The root by its path only before its handle is open: after, the handle is the root.
        if self.dir.get().is_none() {
            std::fs::create_dir_all(&self.root)?;
        }
        let root = self.dir()?;
        let mut at = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty()) {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            match rustix::fs::mkdirat(root, at.as_str(), Mode::from_raw_mode(0o777)) {
                Ok(()) => {}
                Err(e) if e == rustix::io::Errno::EXIST => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        Ok(self
            .list_with_ids(dir)?
            .into_iter()
            .map(|(name, _)| name)
            .collect())
    }

    fn list_with_ids(&self, dir: &str) -> io::Result<Vec<(String, Option<u64>)>> {
        let listed = match self.open_at(dir, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(listed) => listed,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        let mut entries = rustix::fs::Dir::new(OwnedFd::from(listed))?;
        while let Some(entry) = entries.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let file = match entry.file_type() {
                FileType::RegularFile => true,
                // A file system that does not say in the listing: asked of the file.
                FileType::Unknown => {
                    rustix::fs::statat(entries.fd()?, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|st| {
                            FileType::from_raw_mode(st.st_mode) == FileType::RegularFile
                        })
                }
                _ => false,
            };
            if file {
                // The inode the directory entry names: on the file systems this runs on, the
                // one `fstat` of the file opened by that name gives (a store compares them
                // before trusting either, `log/discover.rs`).
                names.push((
                    String::from_utf8_lossy(name).into_owned(),
                    Some(entry.ino()),
                ));
            }
        }
        names.sort_unstable();
        Ok(names)
    }

    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        let flags = match mode {
            OpenMode::Read => OFlags::RDONLY,
            OpenMode::ReadWrite => OFlags::RDWR,
            OpenMode::CreateNew => OFlags::RDWR | OFlags::CREATE | OFlags::EXCL,
        };
        Ok(Box::new(FsFile {
            file: self.open_at(path, flags)?,
        }))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let dir = self.dir()?;
        Ok(rustix::fs::renameat(
            dir,
            Self::at(from),
            dir,
            Self::at(to),
        )?)
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(
            self.dir()?,
            Self::at(path),
            AtFlags::empty(),
        )?)
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        // IMPORTANT: on Linux a new or renamed file is durable only once its directory is.
        self.open_at(dir, OFlags::RDONLY | OFlags::DIRECTORY)?
            .sync_all()
    }

    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>> {
        let file = self.open_at(path, OFlags::RDWR | OFlags::CREATE)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Box::new(file))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(e)) => Err(e),
        }
    }

    fn describe(&self, path: &str) -> String {
        self.path(path).display().to_string()
    }

    fn available_bytes(&self, dir: &str) -> io::Result<Option<u64>> {
        let s = rustix::fs::fstatvfs(self.open_at(dir, OFlags::RDONLY | OFlags::DIRECTORY)?)?;
        Ok(Some(s.f_bavail.saturating_mul(s.f_frsize)))
    }
}

#[derive(Debug)]
struct FsFile {
    file: File,
}

/// The largest single `pwrite` [`FsFile::write_at`] makes.
const WRITE_PIECE: usize = 1 << 20;

impl StorageFile for FsFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn identity(&self) -> Option<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().ok().map(|m| (m.dev(), m.ino()))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        // In pieces of 1 MiB: one `pwrite` of several MiB into a new file's page cache ran
        // slower than the same bytes in 1 MiB pieces, and varied as much
        // (`docs/PERFORMANCE.md`, Compaction).
        let mut at = offset;
        for piece in buf.chunks(WRITE_PIECE) {
            self.file.write_all_at(piece, at)?;
            at += piece.len() as u64;
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn writes_zeros_ahead(&self) -> bool {
        true
    }

    fn start_writeback(&self, start: u64, len: u64) {
        super::mmap::start_writeback(&self.file, start, len);
    }

    fn preallocate(&self, len: u64) -> io::Result<bool> {
        if self.len()? >= len {
            // Already there: allocated by an earlier call, or written.
            return Ok(true);
        }
        super::mmap::preallocate(&self.file, len)
    }

    fn preallocate_written(&self, from: u64, len: u64) -> io::Result<bool> {
        use std::os::unix::fs::FileExt;
        if from >= len {
            return Ok(true);
        }
        // Allocation first: a full disk fails here, before anything is written.
        let allocated = super::mmap::preallocate(&self.file, len)?;
        const CHUNK: usize = 256 << 10;
        let zeros = vec![0u8; CHUNK];
        let mut at = from;
        while at < len {
            let n = usize::try_from(len - at).map_or(CHUNK, |n| n.min(CHUNK));
            self.file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        // Written back now, not synced: see the trait's documentation.
        super::mmap::start_writeback(&self.file, from, len - from);
        Ok(allocated)
    }

    fn map_window(&self, start: u64, end: u64) -> io::Result<Option<super::WriteWindow>> {
        super::mmap::map_window(&self.file, start, end).map(Some)
    }

    fn view(&self) -> io::Result<FileView> {
        if self.len()? == 0 {
            return Ok(FileView::owned(Vec::new()));
        }
        super::mmap::map_sealed(&self.file).map(FileView::mapped)
    }
}
