//! One store scenario, two storages: [`Backend`] gives a test the same operations on memory
//! and on real files in a temp directory, and [`on_both_storages!`](crate::on_both_storages)
//! runs a scenario function once on each.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sessdb::storage::{FsStorage, MemStorage, Storage};

/// A store directory on memory or on real files.
#[derive(Debug)]
pub enum Backend {
    /// In memory.
    Mem(MemStorage),
    /// Real files under a temp directory (removed on drop).
    Fs(tempfile::TempDir),
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if let (Ok(rel), Ok(bytes)) = (path.strip_prefix(root), std::fs::read(&path)) {
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, bytes));
        }
    }
}

impl Backend {
    /// An empty memory store directory.
    pub fn mem() -> Self {
        Self::Mem(MemStorage::new())
    }

    /// An empty directory on disk.
    ///
    /// # Panics
    /// If no temp directory can be made: a test helper.
    pub fn fs() -> Self {
        Self::Fs(tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}")))
    }

    /// The storage to open a store on.
    pub fn storage(&self) -> Arc<dyn Storage> {
        match self {
            Self::Mem(m) => Arc::new(m.clone()),
            Self::Fs(d) => Arc::new(FsStorage::new(d.path())),
        }
    }

    fn path(&self, rel: &str) -> Option<PathBuf> {
        match self {
            Self::Mem(_) => None,
            Self::Fs(d) => Some(d.path().join(rel)),
        }
    }

    /// The bytes of file `rel` (panics when there is none).
    pub fn file(&self, rel: &str) -> Vec<u8> {
        self.files()
            .into_iter()
            .find(|(p, _)| p == rel)
            .unwrap_or_else(|| panic!("no file {rel}"))
            .1
    }

    /// Every file, `(relative path, bytes)`, sorted by path.
    pub fn files(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = match self {
            Self::Mem(m) => m.files(),
            Self::Fs(d) => {
                let mut v = Vec::new();
                walk(d.path(), d.path(), &mut v);
                v
            }
        };
        out.sort();
        out
    }

    /// Every file but the writer lock as `(relative path, length, hash of the bytes)`: what
    /// "an open that refuses writes nothing" compares (the lock file is the lock, not store
    /// data), short enough to print.
    pub fn fingerprint(&self) -> Vec<(String, usize, u64)> {
        use std::hash::{Hash, Hasher};
        self.files()
            .into_iter()
            .filter(|(p, _)| p != "LOCK")
            .map(|(p, b)| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                b.hash(&mut h);
                (p, b.len(), h.finish())
            })
            .collect()
    }

    /// Writes `bytes` as the file `rel`.
    ///
    /// # Panics
    /// On an I/O error: a test helper.
    pub fn put(&self, rel: &str, bytes: Vec<u8>) {
        match (self, self.path(rel)) {
            (Self::Mem(m), _) => m.put(rel, bytes),
            (_, Some(path)) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{rel}: {e}"));
                }
                std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{rel}: {e}"));
            }
            (Self::Fs(_), None) => unreachable!("a file backend has paths"),
        }
    }

    /// A new directory of the same kind holding `files`.
    pub fn image(&self, files: impl IntoIterator<Item = (String, Vec<u8>)>) -> Self {
        let out = match self {
            Self::Mem(_) => Self::mem(),
            Self::Fs(_) => Self::fs(),
        };
        for (rel, bytes) in files {
            out.put(&rel, bytes);
        }
        out
    }

    /// A copy of this directory with the files `keep` accepts.
    pub fn image_where(&self, keep: impl Fn(&str) -> bool) -> Self {
        self.image(self.files().into_iter().filter(|(p, _)| keep(p)))
    }

    /// A copy of this directory with the file `rel` holding `bytes`.
    pub fn image_with(&self, rel: &str, bytes: &[u8]) -> Self {
        let image = self.image(self.files());
        image.put(rel, bytes.to_vec());
        image
    }

    /// A copy without checkpoints: opening it replays the whole log.
    pub fn without_checkpoints(&self) -> Self {
        self.image_where(|p| !p.starts_with("checkpoints/"))
    }
}

/// Runs each named scenario `fn(&Backend)` as two tests, `<name>::mem` and `<name>::fs`.
#[macro_export]
macro_rules! on_both_storages {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn mem() {
                    super::$name(&$crate::Backend::mem());
                }
                #[test]
                fn fs() {
                    super::$name(&$crate::Backend::fs());
                }
            }
        )*
    };
}
