//! Room for open files. A store keeps one file open per segment, so a store of more segments
//! than the process's soft limit on open files (`RLIMIT_NOFILE`, often 1,024: 64 GB of log in
//! 64 MiB segments) could not be opened, nor a long-running writer roll past it. When an
//! open fails for want of descriptors (`EMFILE`), the soft limit is raised towards the hard
//! one and the open tried once more — what Node and Go do for every process at start. Where
//! the hard limit leaves no room, the error says which limit and what to do.

use std::io;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// Where no hard limit is set, the most asked for: Linux refuses more than `fs.nr_open`
/// (1,048,576 unless raised).
const UNLIMITED_ASK: u64 = 1 << 20;

/// What raising the soft limit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Raised {
    /// The soft limit is now this.
    To(u64),
    /// No higher limit was granted: the soft limit stays at `soft`, the hard one is `hard`
    /// (`None`: unlimited).
    No { soft: u64, hard: Option<u64> },
}

/// Raises this process's soft limit on open files towards its hard limit: to the hard limit,
/// or where that is refused, to as much as the kernel grants between.
pub(crate) fn raise() -> Raised {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    // `None` is unlimited: nothing to raise.
    let Some(soft) = current else {
        return Raised::No {
            soft: u64::MAX,
            hard: maximum,
        };
    };
    let mut ask = maximum.unwrap_or(UNLIMITED_ASK);
    // Halving towards the soft limit where the ask is refused (an unlimited hard limit above
    // `fs.nr_open`).
    while ask > soft {
        let asked = Rlimit {
            current: Some(ask),
            maximum,
        };
        if setrlimit(Resource::Nofile, asked).is_ok() {
            return Raised::To(ask);
        }
        ask = soft + (ask - soft) / 2;
    }
    Raised::No {
        soft,
        hard: maximum,
    }
}

/// Whether `e` is an open refused for want of file descriptors.
fn out_of_descriptors(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::MFILE.raw_os_error())
}

/// Runs `op` (an open, of a file or a directory); when it fails for want of descriptors,
/// raises the soft limit and runs it once more. The error that stays says which limit.
pub(crate) fn with_room<T>(op: impl Fn() -> io::Result<T>) -> io::Result<T> {
    match op() {
        Err(e) if out_of_descriptors(&e) => match raise() {
            Raised::To(_) => op().map_err(explained),
            Raised::No { .. } => Err(explained(e)),
        },
        other => other,
    }
}

/// `e` with the limits it met and what to do, when it is a want of descriptors.
fn explained(e: io::Error) -> io::Error {
    if !out_of_descriptors(&e) {
        return e;
    }
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    let show = |l: Option<u64>| l.map_or_else(|| "unlimited".to_owned(), |l| l.to_string());
    io::Error::new(
        e.kind(),
        format!(
            "{e}: this process may hold {} open files (RLIMIT_NOFILE, hard limit {}) and a \
             store keeps one open per segment file; raise the hard limit (`ulimit -Hn`, \
             `LimitNOFILE=`), or hold fewer, larger segments (`segment_bytes_max`, compaction \
             merges compacted ones)",
            show(current),
            show(maximum)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_error_passes_through_unchanged_and_is_not_retried() {
        let calls = std::cell::Cell::new(0);
        let e = with_room(|| -> io::Result<()> {
            calls.set(calls.get() + 1);
            Err(io::Error::from(io::ErrorKind::NotFound))
        })
        .unwrap_err();
        assert_eq!(calls.get(), 1);
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            e.to_string(),
            io::Error::from(io::ErrorKind::NotFound).to_string()
        );
    }

    #[test]
    fn a_want_of_descriptors_is_explained() {
        let e = explained(io::Error::from_raw_os_error(
            rustix::io::Errno::MFILE.raw_os_error(),
        ));
        let text = e.to_string();
        assert!(text.contains("RLIMIT_NOFILE"), "{text}");
        assert!(text.contains("one open per segment file"), "{text}");
    }
}
