//! A checkpoint file's bytes as the catalog holds them: mapped at open (the newest file of a
//! chain, whose index is checked whole) or when first read (an earlier file of the chain,
//! whose pages, entries and runs the newest index names, each checked against its own CRC
//! when read). An open maps one file, not every file of its chain: `mmap` and the first
//! page's fault were ~5 µs a file, and a chain is up to `checkpoint_merge_every` files
//! (`docs/PERFORMANCE.md`, 2026-12-05).

use std::sync::{Arc, OnceLock};

use crate::storage::{FileView, StorageFile};
use crate::{Error, Result};

/// A checkpoint file's bytes, mapped now or on first read; clones share the map.
#[derive(Debug, Clone)]
pub(crate) struct BodyView(Arc<Place>);

#[derive(Debug)]
enum Place {
    /// Mapped (or read, on a backend without maps) when the file was opened.
    Mapped(FileView),
    /// Mapped when first read: the file stays open until then (a file retention removes
    /// meanwhile is still read whole through its open handle).
    OnUse {
        file: Arc<dyn StorageFile>,
        path: Arc<str>,
        view: OnceLock<FileView>,
    },
}

impl BodyView {
    /// Bytes already mapped.
    pub(crate) fn mapped(view: FileView) -> Self {
        Self(Arc::new(Place::Mapped(view)))
    }

    /// The file `file` at `path`, mapped when first read.
    pub(crate) fn on_use(file: Arc<dyn StorageFile>, path: Arc<str>) -> Self {
        Self(Arc::new(Place::OnUse {
            file,
            path,
            view: OnceLock::new(),
        }))
    }

    /// The file's bytes, mapped now if not yet.
    ///
    /// # Errors
    /// I/O errors of the map (then asked again on the next read).
    pub(crate) fn view(&self) -> Result<&FileView> {
        match &*self.0 {
            Place::Mapped(view) => Ok(view),
            Place::OnUse { file, path, view } => {
                if let Some(v) = view.get() {
                    return Ok(v);
                }
                let mapped = file
                    .view()
                    .map_err(|e| Error::io("map a checkpoint", &**path, e))?;
                // Two readers mapping at once: one map is kept, the other dropped.
                Ok(view.get_or_init(|| mapped))
            }
        }
    }
}
