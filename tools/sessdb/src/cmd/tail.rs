//! `sessdb tail STORE SESSION [-n N] [-f]`

use std::time::Duration;

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::print;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// The session id.
    session: String,
    /// How many of the last events.
    #[arg(short = 'n', long = "lines", default_value_t = 10)]
    n: u64,
    /// Keep printing events as they are appended (until interrupted).
    #[arg(short = 'f', long)]
    follow: bool,
    /// The events are JSON lines already (DSH's event lines); with this, a failure is the
    /// error object on stdout too, as for every `--json` command.
    #[arg(long)]
    pub json: bool,
}

fn line(e: &sessdb::Event) -> Vec<u8> {
    let mut out = e.to_jsonl();
    out.push(b'\n');
    out
}

pub fn run(a: &Args) -> CliResult {
    let store = open_existing(&a.store)?;
    let events = store.last_events(&a.session, a.n)?;
    print(&events.iter().flat_map(line).collect::<Vec<u8>>());
    if !a.follow {
        return Ok(code::OK);
    }
    let mut sub = store.subscribe(&a.session, store.session_len(&a.session)?)?;
    loop {
        // The writer is another process: catch up with its appends, then print them.
        store.refresh()?;
        while let Some(e) = sub.try_next()? {
            print(&line(&e));
        }
        // Waits for the next look — or ends at once when stdout's reader is gone
        // (`tail -f … | head -1`), as GNU tail does, not at the next event's write.
        if reader_gone(Duration::from_millis(200)) {
            return Ok(code::OK);
        }
    }
}

/// Waits up to `wait` for stdout's reader to go (a pipe whose read end closed reports an
/// error to `poll`); `true` when it went. A terminal or a file never does.
fn reader_gone(wait: Duration) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdout = std::io::stdout();
    // No event asked for: only the error and hang-up `poll` always reports wake it.
    let mut fds = [PollFd::new(&stdout, PollFlags::empty())];
    let timeout = Timespec {
        tv_sec: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(n) if n > 0 => fds[0]
            .revents()
            .intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL),
        // Interrupted, or poll cannot look at it: go on as before.
        _ => false,
    }
}
