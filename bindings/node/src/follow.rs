//! Subscriptions that hold no libuv pool thread. Each runs on a thread of its own: it waits
//! on the store's notification (an append in this process wakes it at once; a writer in
//! another process is seen by a refresh every `pollMs`), hands each batch of event lines to
//! JavaScript through a thread-safe function, and waits — without polling — until JavaScript
//! has taken the batch (`ack`) or closed the subscription. A closed subscription's thread
//! ends within 100 ms. A pool thread held per
//! subscription would stall every other call and `fs` operation of the process once four
//! subscribers waited (libuv's default pool).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use sessdb::Store;

use crate::error::to_js;

/// Events handed over in one batch at most.
const BATCH: usize = 1024;

/// The longest a waiting thread goes without looking whether it was closed.
const CLOSE_SLICE: Duration = Duration::from_millis(100);

#[derive(Default)]
struct State {
    closed: bool,
    /// JavaScript has taken the last batch.
    taken: bool,
}

#[derive(Default)]
struct Gate {
    state: Mutex<State>,
    cv: Condvar,
}

impl Gate {
    fn update(&self, f: impl FnOnce(&mut State)) {
        let mut s = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut s);
        self.cv.notify_all();
    }

    fn closed(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .closed
    }

    /// Waits until the batch is taken; `false` when closed instead.
    fn wait_taken(&self) -> bool {
        let mut s = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while !s.taken && !s.closed {
            s = self
                .cv
                .wait(s)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        !s.closed
    }
}

/// A running subscription, as JavaScript holds it.
#[napi]
pub struct Follower {
    gate: Arc<Gate>,
}

#[napi]
impl Follower {
    /// JavaScript has taken the last batch: the next may come.
    #[napi]
    pub fn ack(&self) {
        self.gate.update(|s| s.taken = true);
    }

    /// Ends the subscription: no batch comes after this; its thread ends within `pollMs`.
    #[napi]
    pub fn close(&self) {
        self.gate.update(|s| s.closed = true);
    }
}

/// Starts following `session` of `store` from seq `from`; `deliver` gets each batch of
/// event lines, or the error that ended the subscription.
pub(crate) fn start(
    store: Store,
    session: String,
    from: u64,
    poll: Duration,
    deliver: ThreadsafeFunction<Vec<String>>,
) -> Follower {
    let gate = Arc::new(Gate::default());
    let thread_gate = Arc::clone(&gate);
    std::thread::spawn(move || {
        if let Err(e) = run(&store, &session, from, poll, &deliver, &thread_gate) {
            deliver.call(Err(to_js(&e)), ThreadsafeFunctionCallMode::Blocking);
        }
    });
    Follower { gate }
}

fn run(
    store: &Store,
    session: &str,
    from: u64,
    poll: Duration,
    deliver: &ThreadsafeFunction<Vec<String>>,
    gate: &Gate,
) -> sessdb::Result<()> {
    let mut sub = store.subscribe(session, from)?;
    let mut refreshed: Option<Instant> = None;
    while !gate.closed() {
        // A writable store has nothing to catch up with (0 at once).
        if refreshed.is_none_or(|t| t.elapsed() >= poll) {
            store.refresh()?;
            refreshed = Some(Instant::now());
        }
        let mut got = Vec::new();
        while got.len() < BATCH {
            match sub.try_next()? {
                Some(e) => got.push(e),
                None => break,
            }
        }
        if got.is_empty() {
            // Woken by an append in this process; a writer elsewhere is seen by the next
            // refresh.
            // In slices, so that a close ends the thread soon (it holds the event loop).
            match sub.next_timeout(poll.min(CLOSE_SLICE))? {
                Some(e) => got.push(e),
                None => continue,
            }
        }
        gate.update(|s| s.taken = false);
        deliver.call(
            Ok(crate::lines_of(&got)),
            ThreadsafeFunctionCallMode::Blocking,
        );
        if !gate.wait_taken() {
            break;
        }
    }
    Ok(())
}
