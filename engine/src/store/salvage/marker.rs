//! The salvage marker (`docs/FORMAT.md` §1): set before a salvage changes the first file,
//! cleared after the last, so that a read-only view refreshing beside it never builds
//! itself from a log half rewritten (`refresh.rs`).

use crate::codec::SALVAGE_MARKER;
use crate::storage::{OpenMode, Storage};
use crate::{Error, Result};

/// Creates the marker, durably.
pub(in crate::store) fn set(storage: &dyn Storage) -> Result<()> {
    let io = |op| move |e| Error::io(op, SALVAGE_MARKER, e);
    match storage.open(SALVAGE_MARKER, OpenMode::CreateNew) {
        Ok(f) => f.sync_data().map_err(io("sync"))?,
        // Left by a salvage that died: this one takes it over.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("create")(e)),
    }
    storage.sync_dir("").map_err(io("sync directory"))
}

/// Removes the marker, durably (nothing when there is none).
pub(in crate::store) fn clear(storage: &dyn Storage) -> Result<()> {
    let io = |op| move |e| Error::io(op, SALVAGE_MARKER, e);
    match storage.remove(SALVAGE_MARKER) {
        Ok(()) => storage.sync_dir("").map_err(io("sync directory")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io("remove")(e)),
    }
}

/// Whether a salvage is (or was, when it died) rewriting the log. An error reading is taken
/// as "yes": a view is kept rather than rebuilt from what cannot be looked at.
pub(in crate::store) fn is_set(storage: &dyn Storage) -> bool {
    match storage.open(SALVAGE_MARKER, OpenMode::Read) {
        Ok(_) => true,
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}
