//! A crash simulator: every file keeps a live image and a durable one; `sync_data` makes a
//! file's bytes durable and `sync_dir` its directory entries. [`CrashStorage::crash`]
//! returns what a power loss would leave: only durable entries with their durable bytes.
//! [`CrashStorage::fail_at`] makes the Nth mutating operation fail, to test the store's
//! reaction to I/O errors.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;

use super::mem::{MemStorage, read_slice, write_slice};
use super::seam::{FileView, LockGuard, OpenMode, Storage, StorageFile, parent_dir};

/// A crash-simulating directory. Clones share state.
#[derive(Debug, Clone, Default)]
pub struct CrashStorage {
    inner: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct SimFile {
    live: Vec<u8>,
    durable: Vec<u8>,
    /// Byte ranges a failed `sync_data` covered: the kernel marks such pages clean anyway
    /// (fsyncgate), so no later sync makes them durable.
    lost: Vec<std::ops::Range<usize>>,
}

#[derive(Debug, Default)]
struct State {
    next_id: u64,
    live: BTreeMap<String, u64>,
    durable: BTreeMap<String, u64>,
    files: BTreeMap<u64, SimFile>,
    locks: BTreeSet<String>,
    ops: u64,
    fail_at: Option<u64>,
    fault: Fault,
    /// [`CrashStorage::writing_zeros_ahead`].
    zeros_ahead: bool,
}

/// How the chosen operation fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// `EIO`; nothing of the operation happens (a failed `sync_data` still loses its pages).
    #[default]
    Eio,
    /// `ENOSPC`; nothing of the operation happens.
    NoSpace,
    /// A write stores the first half of its bytes, then fails with `ENOSPC` (a full disk in
    /// the middle of a record); other operations fail as [`Fault::NoSpace`].
    ShortWrite,
}

impl State {
    /// Counts a mutating operation; fails it if it is the chosen one.
    fn op(&mut self, what: &str) -> io::Result<()> {
        self.ops += 1;
        if self.fail_at == Some(self.ops) {
            let kind = match self.fault {
                Fault::Eio => io::ErrorKind::Other,
                Fault::NoSpace | Fault::ShortWrite => io::ErrorKind::StorageFull,
            };
            return Err(io::Error::new(
                kind,
                format!(
                    "injected {:?} of operation {} ({what})",
                    self.fault, self.ops
                ),
            ));
        }
        Ok(())
    }
}

impl CrashStorage {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty directory whose files write a `Sync` store's space ahead with zeros as real
    /// files do (`StorageFile::writes_zeros_ahead`: the zeros written, not synced, on the
    /// store's helper thread). The helper's operations then interleave with the appender's
    /// differently from run to run, so a failure at the Nth operation lands on either.
    pub fn writing_zeros_ahead() -> Self {
        let storage = Self::default();
        storage.inner.lock().zeros_ahead = true;
        storage
    }

    /// Makes the `n`th mutating operation from the start (1-based) fail with `EIO`.
    pub fn fail_at(&self, n: u64) {
        self.fail_at_with(n, Fault::Eio);
    }

    /// Makes the `n`th mutating operation from the start (1-based) fail as `fault` says.
    pub fn fail_at_with(&self, n: u64, fault: Fault) {
        let mut s = self.inner.lock();
        s.fail_at = Some(n);
        s.fault = fault;
    }

    /// How many mutating operations have run.
    pub fn ops(&self) -> u64 {
        self.inner.lock().ops
    }

    /// What survives a power loss now: durable directory entries with durable bytes.
    pub fn crash(&self) -> MemStorage {
        let s = self.inner.lock();
        MemStorage::from_files(
            s.durable
                .iter()
                .filter_map(|(p, id)| s.files.get(id).map(|f| (p.clone(), f.durable.clone()))),
        )
    }

    /// What survives a process crash now: everything written, synced or not.
    pub fn live_image(&self) -> MemStorage {
        let s = self.inner.lock();
        MemStorage::from_files(
            s.live
                .iter()
                .filter_map(|(p, id)| s.files.get(id).map(|f| (p.clone(), f.live.clone()))),
        )
    }
}

fn not_found(path: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file {path}"))
}

impl Storage for CrashStorage {
    fn create_dir_all(&self, _dir: &str) -> io::Result<()> {
        self.inner.lock().op("create_dir_all")
    }

    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        let s = self.inner.lock();
        Ok(s.live
            .keys()
            .filter(|p| parent_dir(p) == dir)
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
            .collect())
    }

    fn list_with_ids(&self, dir: &str) -> io::Result<Vec<(String, Option<u64>)>> {
        let s = self.inner.lock();
        Ok(s.live
            .iter()
            .filter(|(p, _)| parent_dir(p) == dir)
            .map(|(p, &id)| (p.rsplit('/').next().unwrap_or(p).to_owned(), Some(id)))
            .collect())
    }

    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        let mut s = self.inner.lock();
        let id = match (mode, s.live.get(path).copied()) {
            (OpenMode::CreateNew, Some(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{path} exists"),
                ));
            }
            (OpenMode::CreateNew, None) => {
                s.op("create")?;
                s.next_id += 1;
                let id = s.next_id;
                s.files.insert(id, SimFile::default());
                s.live.insert(path.to_owned(), id);
                id
            }
            (_, Some(id)) => id,
            (_, None) => return Err(not_found(path)),
        };
        Ok(Box::new(CrashFile {
            state: Arc::clone(&self.inner),
            id,
        }))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut s = self.inner.lock();
        s.op("rename")?;
        let id = s.live.remove(from).ok_or_else(|| not_found(from))?;
        s.live.insert(to.to_owned(), id);
        Ok(())
    }

    fn remove(&self, path: &str) -> io::Result<()> {
        let mut s = self.inner.lock();
        s.op("remove")?;
        s.live
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found(path))
    }

    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        let mut s = self.inner.lock();
        s.op("sync_dir")?;
        let State { live, durable, .. } = &mut *s;
        durable.retain(|p, _| parent_dir(p) != dir || live.contains_key(p));
        for (p, id) in live.iter().filter(|(p, _)| parent_dir(p) == dir) {
            durable.insert(p.clone(), *id);
        }
        Ok(())
    }

    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>> {
        if !self.inner.lock().locks.insert(path.to_owned()) {
            return Ok(None);
        }
        Ok(Some(Box::new(CrashLock {
            state: Arc::clone(&self.inner),
            path: path.to_owned(),
        })))
    }

    fn describe(&self, path: &str) -> String {
        format!("crash-sim:{path}")
    }
}

struct CrashLock {
    state: Arc<Mutex<State>>,
    path: String,
}

impl Drop for CrashLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

#[derive(Debug)]
struct CrashFile {
    state: Arc<Mutex<State>>,
    id: u64,
}

impl CrashFile {
    fn with<T>(
        &self,
        mutating: Option<&str>,
        f: impl FnOnce(&mut SimFile) -> io::Result<T>,
    ) -> io::Result<T> {
        let mut s = self.state.lock();
        if let Some(what) = mutating {
            s.op(what)?;
        }
        let file = s
            .files
            .get_mut(&self.id)
            .ok_or_else(|| not_found("(removed)"))?;
        f(file)
    }
}

impl StorageFile for CrashFile {
    fn identity(&self) -> Option<(u64, u64)> {
        Some((0, self.id))
    }

    fn len(&self) -> io::Result<u64> {
        self.with(None, |f| Ok(f.live.len() as u64))
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.with(None, |f| read_slice(&f.live, buf, offset))
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut s = self.state.lock();
        let result = s.op("write");
        let short = s.fault == Fault::ShortWrite;
        let f = s
            .files
            .get_mut(&self.id)
            .ok_or_else(|| not_found("(removed)"))?;
        match result {
            Ok(()) => write_slice(&mut f.live, buf, offset),
            Err(e) => {
                if short {
                    write_slice(&mut f.live, buf.get(..buf.len() / 2).unwrap_or(buf), offset)?;
                }
                Err(e)
            }
        }
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(Some("set_len"), |f| {
            f.live.resize(
                usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?,
                0,
            );
            Ok(())
        })
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut s = self.state.lock();
        let result = s.op("sync_data");
        let f = s
            .files
            .get_mut(&self.id)
            .ok_or_else(|| not_found("(removed)"))?;
        if result.is_err() {
            f.lost.push(f.durable.len().min(f.live.len())..f.live.len());
            return result;
        }
        let mut durable = f.live.clone();
        for range in &f.lost {
            for i in range.clone() {
                if let Some(b) = durable.get_mut(i) {
                    *b = f.durable.get(i).copied().unwrap_or(0);
                }
            }
        }
        f.durable = durable;
        Ok(())
    }

    fn view(&self) -> io::Result<FileView> {
        self.with(None, |f| Ok(FileView::owned(f.live.clone())))
    }

    fn preallocate(&self, len: u64) -> io::Result<bool> {
        self.with(Some("preallocate"), |f| {
            let len = usize::try_from(len).map_err(|_| io::ErrorKind::InvalidInput)?;
            if f.live.len() < len {
                f.live.resize(len, 0);
            }
            Ok(true)
        })
    }

    fn preallocate_written(&self, from: u64, len: u64) -> io::Result<bool> {
        if !self.writes_zeros_ahead() || from >= len {
            return self.preallocate(len);
        }
        // As `FsStorage`: allocated, then `from..len` written with zeros (not synced: the
        // store's own syncs make them durable); two operations, either of which may be the
        // one that fails.
        let allocated = self.preallocate(len)?;
        let zeros =
            vec![0u8; usize::try_from(len - from).map_err(|_| io::ErrorKind::InvalidInput)?];
        self.write_at(&zeros, from)?;
        Ok(allocated)
    }

    fn writes_zeros_ahead(&self) -> bool {
        self.state.lock().zeros_ahead
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsynced_bytes_and_entries_are_lost_in_a_crash() {
        let s = CrashStorage::new();
        let a = s.open("d/a", OpenMode::CreateNew).unwrap();
        a.write_at(b"hello", 0).unwrap();
        assert!(s.crash().files().is_empty(), "entry not yet durable");
        s.sync_dir("d").unwrap();
        assert_eq!(s.crash().files(), vec![("d/a".to_owned(), Vec::new())]);
        a.sync_data().unwrap();
        a.write_at(b" world", 5).unwrap();
        assert_eq!(
            s.crash().files(),
            vec![("d/a".to_owned(), b"hello".to_vec())]
        );
        assert_eq!(
            s.live_image().files(),
            vec![("d/a".to_owned(), b"hello world".to_vec())]
        );
        s.rename("d/a", "d/b").unwrap();
        assert_eq!(s.crash().files()[0].0, "d/a", "rename not yet durable");
        s.sync_dir("d").unwrap();
        assert_eq!(s.crash().files()[0].0, "d/b");
    }

    #[test]
    fn the_chosen_operation_fails() {
        let s = CrashStorage::new();
        let a = s.open("a", OpenMode::CreateNew).unwrap();
        s.fail_at(3);
        a.write_at(b"x", 0).unwrap();
        assert!(a.sync_data().is_err());
        a.write_at(b"y", 1).unwrap();
        assert_eq!(s.ops(), 4);
    }
}
