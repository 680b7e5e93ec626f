//! A layout-3 or layout-4 chain (`docs/FORMAT.md` §5.2, §5.3) handed to the catalog: the newest file's index
//! over the chain's files, mapped; each session is decoded when first used
//! (`store/catalog/cold.rs`).

use std::collections::BTreeMap;

use crate::store::catalog::cold::{Cold, ColdFile};
use crate::store::catalog::entries::Entries;
use crate::store::checkpoint::files::{BodyParts, LoadedBody, RestoreError};

/// Gives an indexed chain (`bodies` oldest first, every one of layout 3, 4 or
/// 5) to an empty catalog.
pub(super) fn apply(bodies: &[LoadedBody], catalog: &mut Entries) -> Result<(), RestoreError> {
    let files: BTreeMap<u64, ColdFile> = bodies
        .iter()
        .filter_map(|b| match &b.parts {
            BodyParts::Indexed(regions) => Some((
                b.generation,
                ColdFile {
                    view: b.view.clone(),
                    path: b.path.clone(),
                    regions: *regions,
                },
            )),
            BodyParts::Table(_) => None,
        })
        .collect();
    let cold = Cold::new(files).map_err(RestoreError::Inconsistent)?;
    *catalog = Entries::with_cold(cold);
    Ok(())
}
