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
