//! Poisoning: after a failed write or sync the store refuses every later write and sync until
//! it is reopened (fsyncgate: a failed `fdatasync` may have dropped dirty pages that a later
//! one would report as written). One type, checked under the tail lock by every write, so no
//! append that waited for the lock while another failed can write after the failure.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use crate::{Error, Result};

/// Whether, and by what, the store is poisoned.
#[derive(Debug, Default)]
pub(crate) struct Poison {
    cause: Mutex<Option<String>>,
    /// Set once `cause` is: the check is one atomic load while the store is healthy.
    set: AtomicBool,
}

impl Poison {
    /// `Poisoned` once a write or sync has failed.
    pub(crate) fn check(&self) -> Result<()> {
        if !self.set.load(Ordering::Acquire) {
            return Ok(());
        }
        match self.cause.lock().clone() {
            Some(cause) => Err(Error::Poisoned { cause }),
            None => Ok(()),
        }
    }

    /// Whether a write or sync has failed.
    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// Records the first failure and returns `e`.
    pub(crate) fn set<T>(&self, e: Error) -> Result<T> {
        let mut cause = self.cause.lock();
        if cause.is_none() {
            *cause = Some(e.to_string());
            self.set.store(true, Ordering::Release);
        }
        Err(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_is_kept_and_reported() {
        let p = Poison::default();
        assert!(p.check().is_ok() && !p.is_set());
        let first = Error::io("sync", "segments/x", std::io::Error::other("EIO"));
        assert!(p.set::<()>(first).is_err());
        let _ = p.set::<()>(Error::io(
            "write",
            "segments/y",
            std::io::Error::other("later"),
        ));
        match p.check() {
            Err(Error::Poisoned { cause }) => assert!(cause.contains("EIO"), "{cause}"),
            other => panic!("{other:?}"),
        }
    }
}
