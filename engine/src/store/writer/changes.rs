//! The change signal subscribers wait on: a counter every write bumps. A write takes no lock
//! unless someone waits (a lock and a condvar per append before: the subscribers are rare,
//! the appends are not).
//!
//! No wake-up is lost: a waiter registers (under the lock) before it reads the counter, and a
//! writer bumps the counter before it reads the registrations; both sequentially consistent,
//! so either the waiter sees the new count or the writer sees the waiter and wakes it under
//! the lock the waiter holds until it sleeps.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

#[derive(Debug, Default)]
pub(crate) struct Changes {
    count: AtomicU64,
    waiters: AtomicUsize,
    lock: Mutex<()>,
    cv: Condvar,
}

impl Changes {
    /// The counter now (read before looking for what it signals).
    pub(crate) fn seen(&self) -> u64 {
        self.count.load(SeqCst)
    }

    /// A write happened: wakes the waiters, if any.
    pub(crate) fn notify(&self) {
        self.count.fetch_add(1, SeqCst);
        if self.waiters.load(SeqCst) > 0 {
            let _guard = self.lock.lock();
            self.cv.notify_all();
        }
    }

    /// Waits until the counter moves past `seen` or `deadline` passes; `false` on the deadline.
    pub(crate) fn wait_past(&self, seen: u64, deadline: Instant) -> bool {
        let mut guard = self.lock.lock();
        self.waiters.fetch_add(1, SeqCst);
        let mut moved = true;
        while self.count.load(SeqCst) == seen {
            if self.cv.wait_until(&mut guard, deadline).timed_out() {
                moved = self.count.load(SeqCst) != seen;
                break;
            }
        }
        self.waiters.fetch_sub(1, SeqCst);
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_waiter_sees_a_notify_and_times_out_without_one() {
        let c = Arc::new(Changes::default());
        let seen = c.seen();
        assert!(!c.wait_past(seen, Instant::now() + Duration::from_millis(1)));
        let writer = Arc::clone(&c);
        let t = std::thread::spawn(move || writer.notify());
        // Wakes on the notify (or finds the count already moved); the deadline is far.
        assert!(c.wait_past(seen, Instant::now() + Duration::from_secs(30)));
        t.join().unwrap_or_default();
        assert_eq!(c.seen(), seen + 1);
        assert_eq!(c.waiters.load(SeqCst), 0);
    }
}
