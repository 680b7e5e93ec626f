//! `sessdb stress STORE --seconds N [--sessions K] [--threads T] [--sync] [--seed S]`
//!
//! Appends a realistic generated workload (turns, text chunks, tool calls, compaction
//! replaces, prunes, forks) for N seconds and prints `ack <session> <seq>` on stdout, flushed,
//! after every acknowledged append: the tool for kill loops (kill it at any moment, reopen,
//! and every printed event must be there), and for users testing their disks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sessdb::{Draft, Durability, ForkSpec, SessionHeader, Store, StoreOptions};
use sessdb_workload::{Sink, WorkloadSpec, generate};

use crate::cmd::{PathArg, open_or_create_writer};
use crate::error::{CliError, CliResult, code};
use crate::out::{Unit, bar};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory (created if it is new or empty).
    store: PathArg,
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
}

/// A sink that prints an `ack` line after each acknowledged write and stops at the deadline.
struct AckSink {
    store: Store,
    deadline: Instant,
    acked: Arc<AtomicU64>,
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

impl Sink for AckSink {
    fn create(&mut self, header: SessionHeader) -> sessdb::Result<()> {
        self.check_time()?;
        let id = header.id.clone();
        let len = self.store.create_session(header, Vec::new())?.len()?;
        self.ack(&id, len.saturating_sub(1));
        Ok(())
    }

    fn append(&mut self, session: &str, draft: Draft) -> sessdb::Result<u64> {
        self.check_time()?;
        let seq = self.store.append(session, draft)?;
        self.ack(session, seq);
        Ok(seq)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> sessdb::Result<String> {
        self.check_time()?;
        let child = self.store.fork(source, spec)?;
        let len = self.store.session_len(&child)?;
        self.ack(&child, len.saturating_sub(1));
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
    let options = StoreOptions::default().with_durability(if a.sync {
        Durability::Sync
    } else {
        Durability::Buffered
    });
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
            };
            let (seed, sessions) = (a.seed, a.sessions);
            std::thread::spawn(move || -> sessdb::Result<()> {
                for round in 0.. {
                    let spec = WorkloadSpec {
                        seed: round_seed(seed, t, round),
                        sessions,
                        ..WorkloadSpec::default()
                    };
                    match generate(&spec, &mut sink) {
                        Ok(_) => {}
                        Err(sessdb::Error::Closed) => return Ok(()),
                        // A rerun on the same store meets ids an earlier run made: next round.
                        Err(sessdb::Error::SessionExists { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
                Ok(())
            })
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
    Ok(code::OK)
}
