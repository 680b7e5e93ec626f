//! The one way a file is replaced atomically and durably: written under a temp name beside
//! its target, synced, renamed over the target, and the directory synced. Checkpoints and
//! both exports use it; an uncommitted replacement removes its temp file when dropped, so a
//! failed write leaves nothing behind.

use std::io;

use super::seam::{OpenMode, Storage, StorageFile, parent_dir};

/// A file being written under a temp name; [`commit`](Self::commit) puts it in place.
#[derive(Debug)]
pub struct Replacement<'a> {
    storage: &'a dyn Storage,
    tmp: String,
    target: String,
    file: Box<dyn StorageFile>,
    committed: bool,
}

/// The temp name for `target`: hidden, per process, ending in `.tmp` (an open removes such
/// leftovers from the checkpoint directory).
pub fn temp_name(target: &str) -> String {
    let dir = parent_dir(target);
    let name = target
        .get(dir.len()..)
        .unwrap_or(target)
        .trim_start_matches('/');
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    if dir.is_empty() {
        tmp
    } else {
        format!("{dir}/{tmp}")
    }
}

impl<'a> Replacement<'a> {
    /// Creates the temp file for `target` (a stale one of this process is removed first).
    ///
    /// # Errors
    /// I/O errors of creating it.
    pub fn create(storage: &'a dyn Storage, target: &str) -> io::Result<Self> {
        let tmp = temp_name(target);
        match storage.remove(&tmp) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        let file = storage.open(&tmp, OpenMode::CreateNew)?;
        Ok(Self {
            storage,
            tmp,
            target: target.to_owned(),
            file,
            committed: false,
        })
    }

    /// The temp file.
    pub fn file(&self) -> &dyn StorageFile {
        &*self.file
    }

    /// The temp file's path (relative to the storage root), for writers that open it by name.
    pub fn temp_path(&self) -> &str {
        &self.tmp
    }

    /// Syncs the temp file, renames it over the target and syncs the directory.
    ///
    /// # Errors
    /// I/O errors; the temp file is removed then.
    pub fn commit(mut self) -> io::Result<()> {
        self.file.sync_data()?;
        self.storage.rename(&self.tmp, &self.target)?;
        self.committed = true;
        self.storage.sync_dir(parent_dir(&self.target))
    }
}

impl Drop for Replacement<'_> {
    fn drop(&mut self) {
        if !self.committed {
            let _ = self.storage.remove(&self.tmp);
        }
    }
}

/// An `io::Write` over a storage file, appending from an offset (wrap it in a `BufWriter`).
#[derive(Debug)]
pub struct FileWriter<'a> {
    file: &'a dyn StorageFile,
    pos: u64,
}

impl<'a> FileWriter<'a> {
    /// A writer at offset 0.
    pub fn new(file: &'a dyn StorageFile) -> Self {
        Self { file, pos: 0 }
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl io::Write for FileWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write_at(buf, self.pos)?;
        self.pos += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemStorage;
    use std::io::Write;

    #[test]
    fn a_committed_replacement_is_in_place_and_an_abandoned_one_leaves_nothing() {
        let s = MemStorage::new();
        s.put("d/x", b"old".to_vec());
        {
            let r = Replacement::create(&s, "d/x").unwrap();
            FileWriter::new(r.file()).write_all(b"half").unwrap();
            // dropped without commit
        }
        assert_eq!(s.files(), vec![("d/x".to_owned(), b"old".to_vec())]);
        let r = Replacement::create(&s, "d/x").unwrap();
        let mut w = FileWriter::new(r.file());
        w.write_all(b"new!").unwrap();
        assert_eq!(w.position(), 4);
        r.commit().unwrap();
        assert_eq!(s.files(), vec![("d/x".to_owned(), b"new!".to_vec())]);
    }

    #[test]
    fn temp_names_are_hidden_siblings() {
        let pid = std::process::id();
        assert_eq!(temp_name("a/b/c.ckpt"), format!("a/b/.c.ckpt.{pid}.tmp"));
        assert_eq!(temp_name("top"), format!(".top.{pid}.tmp"));
    }
}
