//! A memory storage whose renames go through a hook first: the tests of checkpoints beside
//! appends hold (or fail) the rename that puts a checkpoint's file in place.

#![allow(dead_code, reason = "each test file uses the helpers it needs")]

use std::io;
use std::sync::Arc;

use sessdb::storage::{LockGuard, MemStorage, OpenMode, Storage, StorageFile};

/// Called with `(from, to)` before each rename; an error is the rename's.
pub type RenameHook = Arc<dyn Fn(&str, &str) -> io::Result<()> + Send + Sync>;

/// [`MemStorage`] with a hook on its renames.
#[derive(Clone)]
pub struct HookedRenames {
    pub inner: MemStorage,
    hook: RenameHook,
}

impl HookedRenames {
    pub fn new(hook: RenameHook) -> Self {
        Self {
            inner: MemStorage::new(),
            hook,
        }
    }
}

impl std::fmt::Debug for HookedRenames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookedRenames")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl Storage for HookedRenames {
    fn create_dir_all(&self, dir: &str) -> io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &str) -> io::Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn list_with_ids(&self, dir: &str) -> io::Result<Vec<(String, Option<u64>)>> {
        self.inner.list_with_ids(dir)
    }
    fn open(&self, path: &str, mode: OpenMode) -> io::Result<Box<dyn StorageFile>> {
        self.inner.open(path, mode)
    }
    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        (self.hook)(from, to)?;
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &str) -> io::Result<()> {
        self.inner.remove(path)
    }
    fn sync_dir(&self, dir: &str) -> io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn try_lock(&self, path: &str) -> io::Result<Option<LockGuard>> {
        self.inner.try_lock(path)
    }
    fn describe(&self, path: &str) -> String {
        self.inner.describe(path)
    }
}
