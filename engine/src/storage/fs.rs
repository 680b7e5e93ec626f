//! The real-file backend on `std::fs`.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::open_files;
use super::seam::{FileView, LockGuard, OpenMode, Storage, StorageFile};

/// Files under a root directory.
#[derive(Debug, Clone)]
pub struct FsStorage {
    root: PathBuf,
}

impl FsStorage {
    /// Files under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
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
}

impl Storage for FsStorage {
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        std::fs::create_dir_all(self.path(dir))
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let entries = match open_files::with_room(|| std::fs::read_dir(self.path(dir))) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        let mut opts = OpenOptions::new();
        match mode {
            OpenMode::Read => opts.read(true),
            OpenMode::ReadWrite => opts.read(true).write(true),
            OpenMode::CreateNew => opts.read(true).write(true).create_new(true),
        };
        let path = self.path(path);
        Ok(Box::new(FsFile {
            file: open_files::with_room(|| opts.open(&path))?,
        }))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.path(from), self.path(to))
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        std::fs::remove_file(self.path(path))
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        // IMPORTANT: on Linux a new or renamed file is durable only once its directory is.
        open_files::with_room(|| File::open(self.path(dir)))?.sync_all()
    }

    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>> {
        let file = open_files::with_room(|| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(self.path(path))
        })?;
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
        let s = rustix::fs::statvfs(self.path(dir))?;
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

    fn preallocate_written(&self, len: u64) -> io::Result<bool> {
        use std::os::unix::fs::FileExt;
        let from = self.len()?;
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
        self.file.sync_data()?;
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
