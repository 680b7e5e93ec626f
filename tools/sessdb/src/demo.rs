//! `sessdb demo`: the deterministic DSH workload through the session model.

use std::io::Write;

use clap::Args;
use sessdb::workload::{WorkloadSpec, generate};
use sessdb::{Clock, Config, SessionSet};

/// Options of `sessdb demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Random seed of the workload.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Number of root sessions (a fork adds one).
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    /// Most turns per session.
    #[arg(long, default_value_t = 6)]
    turns: u64,
}

/// Runs the demo and prints its summary on stdout.
pub fn run(args: &DemoArgs) -> sessdb::Result<()> {
    let spec = WorkloadSpec {
        seed: args.seed,
        sessions: args.sessions,
        max_turns: args.turns,
        ..WorkloadSpec::default()
    };
    let clock_ms = spec.start_time_ms;
    let mut set = SessionSet::new(Config {
        clock: Clock::fixed(clock_ms),
        ..Config::default()
    });
    let started = std::time::Instant::now();
    let summary = generate(&spec, &mut set)?;
    let mut repaired = Vec::new();
    for id in &summary.interrupted {
        if let Some(session) = set.get_mut(id) {
            repaired.push((id.clone(), session.resume()?));
        }
    }
    let elapsed = started.elapsed();

    let mut out = std::io::stdout().lock();
    let mut line = |text: String| {
        // A closed stdout (`sessdb demo | head`) is not an error worth reporting.
        let _ = writeln!(out, "{text}");
    };
    line(format!(
        "{:<28} {:>7} {:>8} {:>9} {:>7}  parent",
        "session", "events", "surface", "messages", "bytes"
    ));
    let (mut events, mut bytes) = (0u64, 0usize);
    for s in set.iter() {
        let size: usize = s.events().map(|e| e.data().len()).sum();
        events += s.len();
        bytes += size;
        line(format!(
            "{:<28} {:>7} {:>8} {:>9} {:>7}  {}",
            s.id(),
            s.len(),
            s.surface().len(),
            s.messages().len(),
            size,
            s.header().parent_session.as_deref().unwrap_or("-")
        ));
    }
    line(String::new());
    line(format!(
        "{} sessions, {events} events, {bytes} bytes of event data, accepted in {:.1} ms",
        set.len(),
        elapsed.as_secs_f64() * 1000.0
    ));
    line(format!(
        "compactions: {}, tool-result prunes: {}, forks: {}",
        summary.compactions,
        summary.prunes,
        summary.forks.len()
    ));
    for (id, report) in repaired {
        line(format!(
            "repaired {id}: {} closer(s) at seqs {:?}, end-seed marker at {:?}",
            report.closers.len(),
            report.closers,
            report.end_seed
        ));
    }
    Ok(())
}
