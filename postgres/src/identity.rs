//! A store's ship id: the name PostgreSQL knows it by (`sessdb_stores.store_id`, the owner of
//! its sessions). Kept in the store directory as `ship-id` (one line, a random UUID), made by
//! the first `ship` or `pull`; the engine never reads it.

use std::io::Write;
use std::path::Path;

use crate::{Error, Result};

/// The file that holds the id, in the store directory.
pub const SHIP_ID_FILE: &str = "ship-id";

/// The store's ship id, made (and written durably) if the store has none.
///
/// # Errors
/// `Io` when the file cannot be read or written.
pub fn ship_id(store_dir: &Path) -> Result<String> {
    let path = store_dir.join(SHIP_ID_FILE);
    let io = |source| Error::Io {
        path: path.display().to_string(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => return Ok(text.trim().to_owned()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let id = sessdb::random_uuid();
    // Written to a temporary name and renamed: a crash leaves no half-written id.
    let tmp = store_dir.join(format!("{SHIP_ID_FILE}.tmp"));
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(format!("{id}\n").as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    if let Ok(dir) = std::fs::File::open(store_dir) {
        // Best effort: the rename is durable on the next sync otherwise.
        let _ = dir.sync_all();
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_made_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = ship_id(dir.path()).unwrap();
        assert_eq!(a.len(), 36);
        assert_eq!(ship_id(dir.path()).unwrap(), a);
        let other = tempfile::tempdir().unwrap();
        assert_ne!(ship_id(other.path()).unwrap(), a);
    }
}
