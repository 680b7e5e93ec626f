//! The in-memory backend: fast tests, and the image the crash simulator (`testkit` feature)
//! leaves after a simulated crash.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use super::seam::{FileView, LockGuard, OpenMode, Storage, StorageFile, parent_dir};

/// Files in memory. Clones share the same files.
#[derive(Debug, Clone, Default)]
pub struct MemStorage {
    inner: Arc<Mutex<MemDir>>,
}

#[derive(Debug, Default)]
struct MemDir {
    files: BTreeMap<String, Arc<Mutex<Vec<u8>>>>,
    locks: BTreeSet<String>,
}

impl MemStorage {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// A directory holding `files` (path, content).
    pub fn from_files(files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Self {
        let dir = MemDir {
            files: files
                .into_iter()
                .map(|(p, b)| (p, Arc::new(Mutex::new(b))))
                .collect(),
            locks: BTreeSet::new(),
        };
        Self {
            inner: Arc::new(Mutex::new(dir)),
        }
    }

    /// Every file and its content (tests inspect and damage images through this).
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        self.inner
            .lock()
            .files
            .iter()
            .map(|(p, f)| (p.clone(), f.lock().clone()))
            .collect()
    }

    /// Replaces the content of `path` (creating it).
    pub fn put(&self, path: &str, content: Vec<u8>) {
        self.inner
            .lock()
            .files
            .insert(path.to_owned(), Arc::new(Mutex::new(content)));
    }
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file {path}"))
}

impl Storage for MemStorage {
    fn create_dir_all(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let inner = self.inner.lock();
        Ok(inner
            .files
            .keys()
            .filter(|p| parent_dir(p) == dir)
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
            .collect())
    }

    fn list_with_ids(&self, dir: &str) -> io::Result<Vec<(String, Option<u64>)>> {
        let inner = self.inner.lock();
        Ok(inner
            .files
            .iter()
            .filter(|(p, _)| parent_dir(p) == dir)
            .map(|(p, data)| {
                let name = p.rsplit('/').next().unwrap_or(p).to_owned();
                (name, Some(Arc::as_ptr(data) as usize as u64))
            })
            .collect())
    }

    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        let mut inner = self.inner.lock();
        let file = match (mode, inner.files.get(path)) {
            (OpenMode::CreateNew, Some(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{path} exists"),
                ));
            }
            (OpenMode::CreateNew, None) => {
                let f = Arc::new(Mutex::new(Vec::new()));
                inner.files.insert(path.to_owned(), Arc::clone(&f));
                f
            }
            (_, Some(f)) => Arc::clone(f),
            (_, None) => return Err(not_found(path)),
        };
        Ok(Box::new(MemFile {
            data: file,
            writable: mode != OpenMode::Read,
        }))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut inner = self.inner.lock();
        let f = inner.files.remove(from).ok_or_else(|| not_found(from))?;
        inner.files.insert(to.to_owned(), f);
        Ok(())
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        self.inner
            .lock()
            .files
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn sync_dir(&self, _dir: &str) -> io::Result<()> {
        Ok(())
    }

    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>> {
        if !self.inner.lock().locks.insert(path.to_owned()) {
            return Ok(None);
        }
        Ok(Some(Box::new(MemLock {
            dir: Arc::clone(&self.inner),
            path: path.to_owned(),
        })))
    }

    fn describe(&self, path: &str) -> String {
        format!("memory:{path}")
    }
}

struct MemLock {
    dir: Arc<Mutex<MemDir>>,
    path: String,
}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.dir.lock().locks.remove(&self.path);
    }
}

#[derive(Debug)]
struct MemFile {
    data: Arc<Mutex<Vec<u8>>>,
    writable: bool,
}

pub(super) fn read_slice(data: &[u8], buf: &mut [u8], offset: u64) -> io::Result<()> {
    let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
    let src = data
        .get(start..start + buf.len())
        .ok_or(io::ErrorKind::UnexpectedEof)?;
    buf.copy_from_slice(src);
    Ok(())
}

pub(super) fn write_slice(data: &mut Vec<u8>, buf: &[u8], offset: u64) -> io::Result<()> {
    let start = usize::try_from(offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    if data.len() < start + buf.len() {
        data.resize(start + buf.len(), 0);
    }
    data[start..start + buf.len()].copy_from_slice(buf);
    Ok(())
}

impl StorageFile for MemFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.data.lock().len() as u64)
    }

    fn identity(&self) -> Option<(u64, u64)> {
        // The shared bytes are the file: a replacement under the same name is another one.
        Some((0, Arc::as_ptr(&self.data) as usize as u64))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        read_slice(&self.data.lock(), buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if !self.writable {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "opened read-only",
            ));
        }
        write_slice(&mut self.data.lock(), buf, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        self.data.lock().resize(len, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn view(&self) -> io::Result<FileView> {
        Ok(FileView::owned(self.data.lock().clone()))
    }

    fn preallocate(&self, len: u64) -> io::Result<bool> {
        let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
        let mut data = self.data.lock();
        if data.len() < len {
            data.resize(len, 0);
        }
        Ok(true)
    }
}
