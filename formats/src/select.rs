//! Which sessions an export covers.

use sessdb::Store;
use sessdb::store::SessionInfo;

use crate::{Error, Result};

/// The sessions named in `ids`, in that order, or every session when `ids` is empty.
///
/// # Errors
/// `SessionNotFound` for a name that is not a session of `store`.
pub(crate) fn chosen_sessions(store: &Store, ids: &[String]) -> Result<Vec<SessionInfo>> {
    let all = store.list()?;
    if ids.is_empty() {
        return Ok(all);
    }
    ids.iter()
        .map(|id| {
            all.iter()
                .find(|i| &i.header.id == id)
                .cloned()
                .ok_or_else(|| Error::Store(sessdb::Error::SessionNotFound { id: id.clone() }))
        })
        .collect()
}
