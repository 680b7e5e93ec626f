//! One sync of the log at a time (`docs/DESIGN.md` §3.2, "Syncs of the log"): a group-commit
//! leader's and a roll's `fdatasync` of the same segment never overlap, and none runs after
//! one has failed.
//!
//! Why: Linux reports a write-back error once per open file description, to the first sync
//! that asks after it, and a failed sync marks the pages it covered clean. The store has one
//! description per segment; two syncs of it at once could split the outcome — the roll's
//! sync takes the error while the leader's returns success for pages that were lost, and
//! the leader acknowledges its waiters before the roll's failure poisons the store. In turn,
//! the second sync starts only once the first one's failure is recorded here, and refuses.

use parking_lot::Mutex;

use crate::storage::{CheckedFile, StorageFile};
use crate::{Error, Result};

/// The turn to sync the log's files, and the first failure of one.
#[derive(Debug, Default)]
pub(crate) struct LogSyncs {
    /// Held for the whole of each sync; the failure that ended the turns, if one did.
    failed: Mutex<Option<String>>,
}

impl LogSyncs {
    /// `fdatasync` of `file` (at `path`, for the error) when no earlier sync failed, no other
    /// sync of the log running meanwhile.
    ///
    /// # Errors
    /// `Poisoned` after an earlier failure (nothing synced); this sync's own error, which
    /// every later call then refuses with.
    pub(crate) fn sync(&self, file: &dyn StorageFile, path: &str) -> Result<()> {
        let mut failed = self.failed.lock();
        if let Some(cause) = failed.as_ref() {
            return Err(Error::Poisoned {
                cause: cause.clone(),
            });
        }
        file.at(path)
            .sync_data()
            .inspect_err(|e| *failed = Some(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::storage::FileView;

    /// A file whose second sync fails; counts the syncs it is asked for.
    #[derive(Debug, Default)]
    struct SecondSyncFails(AtomicUsize);

    impl StorageFile for SecondSyncFails {
        fn len(&self) -> io::Result<u64> {
            Ok(0)
        }
        fn read_at(&self, _: &mut [u8], _: u64) -> io::Result<()> {
            Ok(())
        }
        fn write_at(&self, _: &[u8], _: u64) -> io::Result<()> {
            Ok(())
        }
        fn set_len(&self, _: u64) -> io::Result<()> {
            Ok(())
        }
        fn sync_data(&self) -> io::Result<()> {
            match self.0.fetch_add(1, Ordering::SeqCst) {
                1 => Err(io::Error::from_raw_os_error(5)),
                _ => Ok(()),
            }
        }
        fn view(&self) -> io::Result<FileView> {
            Err(io::Error::other("not viewed"))
        }
        fn preallocate(&self, _: u64) -> io::Result<bool> {
            Ok(false)
        }
    }

    #[test]
    fn after_a_failed_sync_no_sync_runs_and_each_is_refused() {
        let file = SecondSyncFails::default();
        let syncs = LogSyncs::default();
        assert!(syncs.sync(&file, "segments/a").is_ok());
        assert!(matches!(
            syncs.sync(&file, "segments/a"),
            Err(Error::Io { .. })
        ));
        // The file would succeed now (as Linux reports an error once): the turn refuses.
        for _ in 0..2 {
            match syncs.sync(&file, "segments/a") {
                Err(Error::Poisoned { cause }) => assert!(cause.contains("segments/a"), "{cause}"),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            file.0.load(Ordering::SeqCst),
            2,
            "no sync after the failure"
        );
    }
}
