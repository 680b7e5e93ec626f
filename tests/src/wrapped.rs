//! Storages that wrap another to watch what a store does with its files: the delegation of
//! `sessdb::storage::Storage` written once ([`delegate_storage!`](crate::delegate_storage)).

/// Implements `sessdb::storage::Storage` for `$ty` (a struct with an `inner` storage) by
/// handing every call to `self.inner`, but `open`, which wraps each file it opens: with
/// `|this, path, file| expr`, `expr` is the wrapped file built from `this` (the storage),
/// `path` (`&str`) and `file` (the inner storage's `Box<dyn StorageFile>`).
#[macro_export]
macro_rules! delegate_storage {
    ($ty:ty, |$this:ident, $path:ident, $file:ident| $wrap:expr) => {
        impl sessdb::storage::Storage for $ty {
            fn create_dir_all(&self, dir: &str) -> std::io::Result<()> {
                sessdb::storage::Storage::create_dir_all(&*self.inner, dir)
            }
            fn list(&self, dir: &str) -> std::io::Result<Vec<String>> {
                sessdb::storage::Storage::list(&*self.inner, dir)
            }
            fn list_with_ids(&self, dir: &str) -> std::io::Result<Vec<(String, Option<u64>)>> {
                sessdb::storage::Storage::list_with_ids(&*self.inner, dir)
            }
            fn open(
                &self,
                $path: &str,
                mode: sessdb::storage::OpenMode,
            ) -> std::io::Result<Box<dyn sessdb::storage::StorageFile>> {
                let $this = self;
                let $file = sessdb::storage::Storage::open(&*self.inner, $path, mode)?;
                Ok(Box::new($wrap))
            }
            fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
                sessdb::storage::Storage::rename(&*self.inner, from, to)
            }
            fn remove(&self, path: &str) -> std::io::Result<()> {
                sessdb::storage::Storage::remove(&*self.inner, path)
            }
            fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
                sessdb::storage::Storage::sync_dir(&*self.inner, dir)
            }
            fn try_lock(&self, path: &str) -> std::io::Result<Option<sessdb::storage::LockGuard>> {
                sessdb::storage::Storage::try_lock(&*self.inner, path)
            }
            fn describe(&self, path: &str) -> String {
                sessdb::storage::Storage::describe(&*self.inner, path)
            }
        }
    };
}

/// A listing hook: given the directory and what the inner storage listed, what the store sees.
pub type ListHook = dyn Fn(&str, Vec<String>) -> std::io::Result<Vec<String>> + Send + Sync;
/// An open hook: `Err` refuses the open of that path.
pub type OpenHook = dyn Fn(&str) -> std::io::Result<()> + Send + Sync;
/// A change hook: run before and after each rename (given its target) and removal.
pub type ChangeHook = dyn Fn(&str) + Send + Sync;

/// A storage that hands every call to `inner` but lets a test change what a listing returns,
/// refuse opens and act between file changes: a listing that missed a file, a directory out
/// of reach, a reader's refresh in each gap a salvage leaves between two of its changes.
#[derive(Clone)]
pub struct Hooked {
    inner: std::sync::Arc<dyn sessdb::storage::Storage>,
    list: std::sync::Arc<ListHook>,
    open: std::sync::Arc<OpenHook>,
    change: std::sync::Arc<ChangeHook>,
}

impl std::fmt::Debug for Hooked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Hooked")
    }
}

impl Hooked {
    /// `inner` as it is, until hooks are set.
    pub fn new(inner: std::sync::Arc<dyn sessdb::storage::Storage>) -> Self {
        Self {
            inner,
            list: std::sync::Arc::new(|_, names| Ok(names)),
            open: std::sync::Arc::new(|_| Ok(())),
            change: std::sync::Arc::new(|_| {}),
        }
    }

    /// With `hook` deciding what each listing returns.
    #[must_use]
    pub fn on_list(
        mut self,
        hook: impl Fn(&str, Vec<String>) -> std::io::Result<Vec<String>> + Send + Sync + 'static,
    ) -> Self {
        self.list = std::sync::Arc::new(hook);
        self
    }

    /// With `hook` asked before each open.
    #[must_use]
    pub fn on_open(
        mut self,
        hook: impl Fn(&str) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.open = std::sync::Arc::new(hook);
        self
    }

    /// With `hook` run before and after each rename (given its target) and removal.
    #[must_use]
    pub fn on_change(mut self, hook: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.change = std::sync::Arc::new(hook);
        self
    }
}

impl sessdb::storage::Storage for Hooked {
    fn create_dir_all(&self, dir: &str) -> std::io::Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn list(&self, dir: &str) -> std::io::Result<Vec<String>> {
        (self.list)(dir, self.inner.list(dir)?)
    }
    fn list_with_ids(&self, dir: &str) -> std::io::Result<Vec<(String, Option<u64>)>> {
        // The names the hook keeps, each with the identity listed beside it.
        let listed = self.inner.list_with_ids(dir)?;
        let kept = (self.list)(dir, listed.iter().map(|(n, _)| n.clone()).collect())?;
        Ok(kept
            .into_iter()
            .map(|n| {
                let id = listed.iter().find(|(l, _)| *l == n).and_then(|(_, id)| *id);
                (n, id)
            })
            .collect())
    }
    fn open(
        &self,
        path: &str,
        mode: sessdb::storage::OpenMode,
    ) -> std::io::Result<Box<dyn sessdb::storage::StorageFile>> {
        (self.open)(path)?;
        self.inner.open(path, mode)
    }
    fn rename(&self, from: &str, to: &str) -> std::io::Result<()> {
        (self.change)(to);
        let r = self.inner.rename(from, to);
        (self.change)(to);
        r
    }
    fn remove(&self, path: &str) -> std::io::Result<()> {
        (self.change)(path);
        let r = self.inner.remove(path);
        (self.change)(path);
        r
    }
    fn sync_dir(&self, dir: &str) -> std::io::Result<()> {
        self.inner.sync_dir(dir)
    }
    fn try_lock(&self, path: &str) -> std::io::Result<Option<sessdb::storage::LockGuard>> {
        self.inner.try_lock(path)
    }
    fn describe(&self, path: &str) -> String {
        self.inner.describe(path)
    }
}

/// A sync hook: given a file's path and its sync, runs the sync (or not) and returns what the
/// file's `sync_data` returns.
pub type SyncHook =
    dyn Fn(&str, &dyn Fn() -> std::io::Result<()>) -> std::io::Result<()> + Send + Sync;

/// A storage that hands every call to `inner` but runs each file's `sync_data` through a
/// hook: a sync held at a gate, counted, or made to take a while.
#[derive(Clone)]
pub struct SyncHooked {
    inner: std::sync::Arc<dyn sessdb::storage::Storage>,
    hook: std::sync::Arc<SyncHook>,
}

impl std::fmt::Debug for SyncHooked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SyncHooked")
    }
}

impl SyncHooked {
    /// `inner`, each file's sync run through `hook`.
    pub fn new(
        inner: std::sync::Arc<dyn sessdb::storage::Storage>,
        hook: impl Fn(&str, &dyn Fn() -> std::io::Result<()>) -> std::io::Result<()>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            inner,
            hook: std::sync::Arc::new(hook),
        }
    }

    /// The storage it wraps.
    pub fn inner(&self) -> &std::sync::Arc<dyn sessdb::storage::Storage> {
        &self.inner
    }
}

/// A file of [`SyncHooked`].
struct SyncHookedFile {
    inner: Box<dyn sessdb::storage::StorageFile>,
    path: String,
    hook: std::sync::Arc<SyncHook>,
}

impl std::fmt::Debug for SyncHookedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SyncHookedFile({})", self.path)
    }
}

impl sessdb::storage::StorageFile for SyncHookedFile {
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        self.inner.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> std::io::Result<()> {
        self.inner.write_at(buf, offset)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        (self.hook)(&self.path, &|| self.inner.sync_data())
    }
    fn view(&self) -> std::io::Result<sessdb::storage::FileView> {
        self.inner.view()
    }
    fn preallocate(&self, len: u64) -> std::io::Result<bool> {
        self.inner.preallocate(len)
    }
    fn preallocate_written(&self, from: u64, len: u64) -> std::io::Result<bool> {
        self.inner.preallocate_written(from, len)
    }
    fn writes_zeros_ahead(&self) -> bool {
        self.inner.writes_zeros_ahead()
    }
    fn map_window(
        &self,
        start: u64,
        end: u64,
    ) -> std::io::Result<Option<sessdb::storage::WriteWindow>> {
        self.inner.map_window(start, end)
    }
    fn start_writeback(&self, start: u64, len: u64) {
        self.inner.start_writeback(start, len);
    }
    fn identity(&self) -> Option<(u64, u64)> {
        self.inner.identity()
    }
}

crate::delegate_storage!(SyncHooked, |this, path, file| SyncHookedFile {
    inner: file,
    path: path.to_owned(),
    hook: std::sync::Arc::clone(&this.hook),
});
