//! The storage calls with the crate's errors: each names its operation and the path it was
//! for ([`Error::Io`](crate::Error::Io)), once, here — a call site says what it does, not how
//! its error is worded (`storage.sync_directory(SEGMENTS_DIR)?`).

use super::seam::{OpenMode, Storage, StorageFile};
use crate::{Error, Result};

/// [`Storage`]'s calls, their errors naming the operation and the path.
pub(crate) trait Checked {
    /// Creates `dir` and its parents ("create directory").
    fn create_directory(&self, dir: &str) -> Result<()>;
    /// The names in `dir` ("list").
    fn list_dir(&self, dir: &str) -> Result<Vec<String>>;
    /// The names in `dir` with the identities listed ("list").
    fn list_dir_with_ids(&self, dir: &str) -> Result<Vec<(String, Option<u64>)>>;
    /// Opens `path` ("open"; "create" for [`OpenMode::CreateNew`]).
    fn open_file(&self, path: &str, mode: OpenMode) -> Result<Box<dyn StorageFile>>;
    /// Removes `path` ("remove").
    fn remove_file(&self, path: &str) -> Result<()>;
    /// Makes `dir`'s entries durable ("sync directory").
    fn sync_directory(&self, dir: &str) -> Result<()>;
}

impl<S: Storage + ?Sized> Checked for S {
    fn create_directory(&self, dir: &str) -> Result<()> {
        self.create_dir_all(dir)
            .map_err(|e| Error::io("create directory", dir, e))
    }

    fn list_dir(&self, dir: &str) -> Result<Vec<String>> {
        self.list(dir).map_err(|e| Error::io("list", dir, e))
    }

    fn list_dir_with_ids(&self, dir: &str) -> Result<Vec<(String, Option<u64>)>> {
        self.list_with_ids(dir)
            .map_err(|e| Error::io("list", dir, e))
    }

    fn open_file(&self, path: &str, mode: OpenMode) -> Result<Box<dyn StorageFile>> {
        let op = match mode {
            OpenMode::CreateNew => "create",
            _ => "open",
        };
        self.open(path, mode).map_err(|e| Error::io(op, path, e))
    }

    fn remove_file(&self, path: &str) -> Result<()> {
        self.remove(path).map_err(|e| Error::io("remove", path, e))
    }

    fn sync_directory(&self, dir: &str) -> Result<()> {
        self.sync_dir(dir)
            .map_err(|e| Error::io("sync directory", dir, e))
    }
}

/// A file and the path its errors name ([`CheckedFile::at`]).
#[derive(Clone, Copy)]
pub(crate) struct Named<'a> {
    file: &'a (dyn StorageFile + 'a),
    path: &'a str,
}

/// [`StorageFile`]'s calls, their errors naming the operation and the file's path.
pub(crate) trait CheckedFile {
    /// The file, its errors naming `path`.
    fn at<'a>(&'a self, path: &'a str) -> Named<'a>;
}

impl<'f> CheckedFile for dyn StorageFile + 'f {
    fn at<'a>(&'a self, path: &'a str) -> Named<'a> {
        Named { file: self, path }
    }
}

impl Named<'_> {
    /// Its length ("stat").
    pub(crate) fn len(self) -> Result<u64> {
        self.file.len().map_err(|e| Error::io("stat", self.path, e))
    }

    /// Fills `buf` from `offset` ("read").
    pub(crate) fn read_at(self, buf: &mut [u8], offset: u64) -> Result<()> {
        self.file
            .read_at(buf, offset)
            .map_err(|e| Error::io("read", self.path, e))
    }

    /// Writes `buf` at `offset` ("write").
    pub(crate) fn write_at(self, buf: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_at(buf, offset)
            .map_err(|e| Error::io("write", self.path, e))
    }

    /// Cuts or extends it to `len` ("truncate").
    pub(crate) fn set_len(self, len: u64) -> Result<()> {
        self.file
            .set_len(len)
            .map_err(|e| Error::io("truncate", self.path, e))
    }

    /// Makes its data durable ("sync").
    pub(crate) fn sync_data(self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", self.path, e))
    }
}

impl std::fmt::Debug for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Named")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}
