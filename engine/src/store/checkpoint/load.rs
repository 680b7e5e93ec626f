//! A chosen chain applied to the catalog, by its body layout: a chain of layout 3, 4 or 5 through its
//! newest index (`indexed.rs`), a layout-2 chain body by body (`files.rs`).

use crate::store::catalog::entries::Entries;
use crate::store::checkpoint::files::{self, BodyParts, LoadedBody, RestoreError};
use crate::store::checkpoint::indexed;

/// Applies a chain's bodies (oldest first) to an empty catalog: an indexed chain (layout 3
/// or 4) through its newest index, a layout-2 chain body by body.
pub(crate) fn apply_chain(
    bodies: Vec<LoadedBody>,
    catalog: &mut Entries,
) -> std::result::Result<(), RestoreError> {
    let indexed = |b: &LoadedBody| matches!(b.parts, BodyParts::Indexed(_));
    match bodies.last() {
        Some(newest) if indexed(newest) => {
            if !bodies.iter().all(indexed) {
                return Err("an indexed checkpoint on a layout-2 chain".into());
            }
            indexed::apply(&bodies, catalog)
        }
        _ => {
            for body in bodies {
                files::apply_table(body, catalog)?;
            }
            Ok(())
        }
    }
}
