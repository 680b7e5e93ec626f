//! What a salvage plan is: the report, and the edits of segment files that carry it out; and
//! reading a segment file whole.

use crate::Result;
use crate::storage::{Checked, CheckedFile};
use crate::storage::{OpenMode, Storage, StorageFile};
use crate::store::report::SalvageReport;

/// What to do to one segment file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Edit {
    Remove,
    Rewrite {
        header: bool,
        /// Compaction wrote the segment: a header written anew says so (version 4).
        compacted: bool,
        /// `(offset, len)` ranges that become void records.
        voids: Vec<(usize, usize)>,
        /// Keep only the bytes before this offset.
        cut_at: Option<usize>,
    },
}

/// A salvage plan: the report and the file edits that carry it out.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    pub(crate) report: SalvageReport,
    pub(super) edits: Vec<(u64, Edit)>,
    /// What the plan read of the log, undamaged.
    pub(crate) read: Read,
}

/// What a plan read of the log: the intact records and their bytes, the sessions and events
/// they hold.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) records: u64,
    pub(crate) log_bytes: u64,
    pub(crate) sessions: usize,
    pub(crate) events: u64,
}

/// A file opened for reading and all of its bytes.
pub(super) fn read_whole(
    storage: &dyn Storage,
    path: &str,
) -> Result<(Box<dyn StorageFile>, Vec<u8>)> {
    let file = storage.open_file(path, OpenMode::Read)?;
    let bytes = bytes_of(&*file, path)?;
    Ok((file, bytes))
}

/// All of an open file's bytes.
pub(super) fn bytes_of(file: &dyn StorageFile, path: &str) -> Result<Vec<u8>> {
    let len = file.at(path).len()?;
    let mut bytes = vec![0u8; crate::width::index(len)];
    file.at(path).read_at(&mut bytes, 0)?;
    Ok(bytes)
}
