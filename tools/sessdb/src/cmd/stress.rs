//! `sessdb stress STORE --seconds N [--sessions K] [--threads T] [--sync] [--seed S] [--churn]
//! [--segment-bytes B] [--checkpoint-bytes B] [--try-first]`
//!
//! Appends a realistic generated workload (turns, text chunks, tool calls, compaction
//! replaces, prunes, forks) for N seconds and prints `ack <session> <seq>` on stdout, flushed,
//! after every acknowledged append: the tool for kill loops (kill it at any moment, reopen,
//! and every printed event must be there), and for users testing their disks. With
//! `--churn` each round's sessions are deleted when it ends (`deleting <session>` before and
//! `deleted <session>` after each acknowledged deletion; the first round's stay, to be
//! followed), so the writer's background
//! compaction runs beside the appends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sessdb::{
    CompactionPolicy, Draft, Durability, ForkSpec, SessionHeader, Store, StoreOptions, TryAppend,
};
use sessdb_workload::{Sink, WorkloadSpec, generate};

use crate::cmd::{PathArg, open_or_create_writer};
use crate::error::{CliError, CliResult, code};
use crate::out::{Unit, bar};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory (created if it is new or empty).
    pub store: PathArg,
    /// How long to append, in seconds.
    #[arg(long, allow_negative_numbers = true)]
    seconds: f64,
    /// Root sessions per generated round (a round may fork one more).
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    /// Appending threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// `Durability::Sync`: every append is durable (fdatasync, group commit) before its ack.
    #[arg(long)]
    sync: bool,
    /// Random seed of the workload (runs with the same seed on a fresh store are identical).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Delete each round's sessions when it ends (but the first round's), printing
    /// `deleting <session>` before and `deleted <session>` after each: the background
    /// compaction then runs beside the appends.
    #[arg(long)]
    churn: bool,
    /// Segments roll over at this size (default 64 MiB; small ones give the background
    /// compaction many segments to choose from).
    #[arg(long, value_name = "BYTES")]
    segment_bytes: Option<u64>,
    /// A checkpoint falls due after this much log (default 64 MiB; small ones put the
    /// checkpointer's thread to work beside the appends, where kills land).
    #[arg(long, value_name = "BYTES")]
    checkpoint_bytes: Option<u64>,
    /// Each append through `try_append_events` first (written at once where nothing waits,
    /// as the Node binding appends), `append_events` with what it hands back.
    #[arg(long)]
    try_first: bool,
}

/// How the appending threads append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Appends {
    /// `Store::append`.
    Plain,
    /// `Store::try_append_events`, then `append_events` with what it hands back.
    TryFirst,
}

/// A sink that prints an `ack` line after each acknowledged write and stops at the deadline.
struct AckSink {
    store: Store,
    deadline: Instant,
    acked: Arc<AtomicU64>,
    /// The sessions this round created (with `--churn`).
    created: Vec<String>,
    appends: Appends,
}

impl AckSink {
    fn check_time(&self) -> sessdb::Result<()> {
        if Instant::now() >= self.deadline {
            return Err(sessdb::Error::Closed);
        }
        Ok(())
    }

    fn ack(&self, session: &str, seq: u64) {
        // A closed stdout ends the run quietly (`| head`), another write error with exit 1.
        crate::out::println(&format!("ack {} {seq}", session.escape_debug()));
        self.acked.fetch_add(1, Ordering::Relaxed);
    }
}

impl AckSink {
    /// Deletes what the round created, each acknowledged by a `deleted` line.
    fn churn(&mut self) -> sessdb::Result<()> {
        for id in std::mem::take(&mut self.created) {
            self.check_time()?;
            // Said before: a kill between the two lines may or may not have deleted it.
            crate::out::println(&format!("deleting {}", id.escape_debug()));
            self.store.delete_session(&id)?;
            crate::out::println(&format!("deleted {}", id.escape_debug()));
        }
        Ok(())
    }
}

impl Sink for AckSink {
    fn create(&mut self, header: SessionHeader) -> sessdb::Result<()> {
        self.check_time()?;
        let id = header.id.clone();
        let len = self.store.create_session(header, Vec::new())?.len()?;
        self.ack(&id, len.saturating_sub(1));
        self.created.push(id);
        Ok(())
    }

    fn append(&mut self, session: &str, draft: Draft) -> sessdb::Result<u64> {
        self.check_time()?;
        let seq = match self.appends {
            Appends::Plain => self.store.append(session, draft)?,
            Appends::TryFirst => {
                // One thread appends to a session: its length is the next seq.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                let event = draft.into_event(self.store.session_len(session)?, now);
                match self.store.try_append_events(session, vec![event])? {
                    TryAppend::Appended(range) => range.start,
                    TryAppend::WouldWait(back) => self.store.append_events(session, back)?.start,
                }
            }
        };
        self.ack(session, seq);
        Ok(seq)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> sessdb::Result<String> {
        self.check_time()?;
        let child = self.store.fork(source, spec)?;
        let len = self.store.session_len(&child)?;
        self.ack(&child, len.saturating_sub(1));
        self.created.push(child.clone());
        Ok(child)
    }
}

/// A seed per thread and round (splitmix64 of the three).
fn round_seed(seed: u64, thread: u64, round: u64) -> u64 {
    let mut z = seed ^ thread.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ round.rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The store's options for a run: its durability, segment size, and for `--churn` a
/// background compaction that reads the log at once and takes small segments too.
fn options_of(a: &Args) -> StoreOptions {
    let mut options = StoreOptions::default().with_durability(if a.sync {
        Durability::Sync
    } else {
        Durability::Buffered
    });
    if let Some(bytes) = a.segment_bytes {
        options = options.with_segment_bytes_max(bytes.max(4096));
    }
    if let Some(bytes) = a.checkpoint_bytes {
        options = options.with_checkpoint_interval_bytes(bytes.max(4096));
    }
    if a.churn {
        // What an earlier run left dead is read at once, not after 10 s; small segments
        // are written again too.
        options = options.with_compaction(Some(
            CompactionPolicy::default()
                .with_first_check_after(Duration::ZERO)
                .with_min_dead_bytes(4096),
        ));
    }
    options
}

/// One appending thread: generated rounds until the deadline closes the sink (`--churn`:
/// each round's sessions deleted after it, but the first round's).
fn rounds(
    sink: &mut AckSink,
    seed: u64,
    thread: u64,
    sessions: usize,
    churn: bool,
) -> sessdb::Result<()> {
    for round in 0.. {
        let spec = WorkloadSpec {
            seed: round_seed(seed, thread, round),
            sessions,
            ..WorkloadSpec::default()
        };
        let done = generate(&spec, sink).map(|_| ()).and_then(|()| {
            if !churn {
                return Ok(());
            }
            if round == 0 {
                sink.created.clear();
                return Ok(());
            }
            sink.churn()
        });
        match done {
            Ok(()) => {}
            Err(sessdb::Error::Closed) => return Ok(()),
            // A rerun on the same store meets ids an earlier run made: next round.
            Err(sessdb::Error::SessionExists { .. }) => sink.created.clear(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    if !(a.seconds.is_finite() && a.seconds >= 0.0) {
        return Err(CliError::new(code::USAGE, "--seconds must be a number ≥ 0"));
    }
    if a.threads == 0 || a.sessions == 0 {
        return Err(CliError::new(
            code::USAGE,
            "--threads and --sessions must be at least 1",
        ));
    }
    let options = options_of(a);
    let store = open_or_create_writer(&a.store, options)?;
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(a.seconds);
    let acked = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..a.threads as u64)
        .map(|t| {
            let mut sink = AckSink {
                store: store.clone(),
                deadline,
                acked: Arc::clone(&acked),
                created: Vec::new(),
                appends: if a.try_first {
                    Appends::TryFirst
                } else {
                    Appends::Plain
                },
            };
            let (seed, sessions, churn) = (a.seed, a.sessions, a.churn);
            std::thread::spawn(move || rounds(&mut sink, seed, t, sessions, churn))
        })
        .collect();
    // A bar of the seconds run (terminal only); the acks go to stdout meanwhile.
    if let Some(b) = bar(quiet, "stressing", Unit::Seconds) {
        crate::out::set_total(&b, (a.seconds * 1000.0).ceil() as u64);
        while !threads.iter().all(std::thread::JoinHandle::is_finished) {
            b.set_position(started.elapsed().as_millis() as u64);
            std::thread::sleep(Duration::from_millis(200));
        }
        b.finish_and_clear();
    }
    let mut first_error = None;
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                return Err(CliError::new(code::OTHER, "a stress thread panicked"));
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e.into());
    }
    let background = store.maintenance();
    store.close()?;
    let n = acked.load(Ordering::Relaxed);
    let secs = started.elapsed().as_secs_f64();
    crate::out::note(
        quiet,
        &format!(
            "stress: {n} writes acknowledged in {secs:.1} s ({:.0}/s), {} thread(s), {}",
            n as f64 / secs.max(1e-9),
            a.threads,
            if a.sync { "Sync" } else { "Buffered" }
        ),
    );
    if a.churn {
        crate::out::note(
            quiet,
            &format!(
                "stress: {} background compaction(s) wrote {} segment(s) again, {} byte(s) given back{}",
                background.compactions,
                background.segments_compacted,
                background.bytes_reclaimed,
                background
                    .last_error
                    .map_or_else(String::new, |e| format!("; last error: {e}"))
            ),
        );
    }
    Ok(code::OK)
}
