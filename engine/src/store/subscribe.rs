//! Following a session as events are appended (for live viewers and for shipping events
//! elsewhere).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::event::Event;
use crate::store::inner::Inner;
use crate::{Error, Result};

/// A cursor over a session's events from a seq on; waits for new ones.
#[derive(Debug)]
pub struct Subscription {
    pub(super) inner: Arc<Inner>,
    pub(super) session: String,
    pub(super) next_seq: u64,
}

impl Subscription {
    /// The seq of the next event this subscription returns.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The next event if it is already there.
    ///
    /// # Errors
    /// `SessionNotFound` if the session was deleted, `Closed` after the store closed, read
    /// errors.
    pub fn try_next(&mut self) -> Result<Option<Event>> {
        let event = self.inner.event_at(&self.session, self.next_seq)?;
        if event.is_some() {
            self.next_seq += 1;
        }
        Ok(event)
    }

    /// The next event, waiting up to `timeout` for it to be appended.
    ///
    /// # Errors
    /// As [`Subscription::try_next`].
    pub fn next_timeout(&mut self, timeout: Duration) -> Result<Option<Event>> {
        let deadline = Instant::now() + timeout;
        loop {
            // Read the change counter before looking, so an append between the look and the
            // wait is not missed.
            let seen = self.inner.writer.changes().seen();
            if let Some(e) = self.try_next()? {
                return Ok(Some(e));
            }
            if self.inner.writer.is_closed() {
                return Err(Error::Closed);
            }
            if !self.inner.writer.changes().wait_past(seen, deadline) {
                return Ok(None);
            }
        }
    }
}

/// Blocking iteration: each event as it is appended; the iteration ends when the store is
/// closed (after every event already there). An append in this process wakes it at once; a
/// read-only store sees another process's appends only when something calls
/// [`Store::refresh`](crate::store::Store::refresh) on it (a follower thread, say).
impl Iterator for Subscription {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        loop {
            match self.next_timeout(Duration::from_secs(3600)) {
                Ok(Some(e)) => return Some(Ok(e)),
                Ok(None) => {}
                Err(Error::Closed) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
