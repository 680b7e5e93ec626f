//! Medians, alternation and the rows the report prints.

use std::time::Duration;

/// Median, min, max of timings.
#[derive(Clone, Copy)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

pub fn stat(mut v: Vec<f64>) -> Stat {
    v.sort_by(f64::total_cmp);
    Stat {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// Runs subject and baseline alternately `reps` times; each returns a figure (higher better
/// when a rate, else a time in seconds).
pub fn pair(reps: usize, mut a: impl FnMut() -> f64, mut b: impl FnMut() -> f64) -> (Stat, Stat) {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        xs.push(a());
        ys.push(b());
    }
    (stat(xs), stat(ys))
}

/// One line of the report: a subject beside its baseline, on a named workload.
pub struct Row {
    pub what: &'static str,
    /// `ev/s` (higher is better), `s` (a time), `s/ev` (a time per event) or `B` (bytes).
    pub unit: &'static str,
    pub subject: Stat,
    pub baseline_name: &'static str,
    pub baseline: Stat,
    pub goal: &'static str,
    /// The workload the row ran on, as the report names it.
    pub workload: String,
}

pub fn temp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub fn dur(s: f64) -> String {
    let d = Duration::from_secs_f64(s);
    if d < Duration::from_millis(1) {
        format!("{:.1}us", s * 1e6)
    } else {
        format!("{:.2}ms", s * 1e3)
    }
}

/// Resident bytes of this process (`VmRSS`).
pub fn rss() -> u64 {
    status_bytes("VmRSS:")
}

/// Resident bytes of this process that are its own memory (`RssAnon`: the heap, not pages
/// of mapped files, which the kernel can drop and read again).
pub fn rss_anon() -> u64 {
    status_bytes("RssAnon:")
}

/// A field of `/proc/self/status` given in kB, in bytes.
fn status_bytes(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The machine while a row was measured (from the row before it to this one): the 1-minute
/// load average at its end, and the shares of the machine's CPU time that other processes
/// used and that the hypervisor took (`steal`), so a row measured on a busy machine says so.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub avg1: Option<f64>,
    /// Busy CPU time of everything but this report and its waited-for children (the kernel's
    /// threads that write out and journal the report's files included), over all CPU time,
    /// 0–1.
    pub others: Option<f64>,
    /// CPU time stolen from this machine, over all CPU time, 0–1.
    pub steal: Option<f64>,
}

impl Load {
    /// `CPU outside 0.3%, steal 0.0%, load 1.52`, with `?` for what this system does not say.
    pub fn text(&self) -> String {
        let pct = |v: Option<f64>| v.map_or("?".to_owned(), |v| format!("{:.1}%", v * 100.0));
        let avg = self.avg1.map_or("?".to_owned(), |v| format!("{v:.2}"));
        format!(
            "CPU outside {}, steal {}, load {avg}",
            pct(self.others),
            pct(self.steal)
        )
    }
}

/// Clock ticks from `/proc/stat` (the machine) and `/proc/self/stat` (this process).
#[derive(Debug, Clone, Copy)]
struct Ticks {
    /// Every CPU state's ticks.
    total: u64,
    /// user, nice, system, irq, softirq.
    busy: u64,
    steal: u64,
    /// This process's and its waited-for children's user and system ticks.
    own: u64,
}

impl Ticks {
    fn now() -> Option<Ticks> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|v| v.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal (guest time is inside user).
        let [user, nice, system, idle, iowait, irq, softirq, steal, ..] = cpu[..] else {
            return None;
        };
        let own_stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the command name (which may hold spaces), from field 3 on:
        // utime, stime, cutime, cstime are fields 14–17.
        let after = own_stat.rsplit_once(") ")?.1;
        let own: u64 = after
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|v| v.parse::<u64>().ok())
            .sum::<Option<u64>>()?;
        Some(Ticks {
            total: user + nice + system + idle + iowait + irq + softirq + steal,
            busy: user + nice + system + irq + softirq,
            steal,
            own,
        })
    }
}

/// The rows of a report, each with the [`Load`] while it was measured.
pub struct Rows {
    rows: Vec<(Row, Load)>,
    since: Option<Ticks>,
}

impl Rows {
    pub fn new() -> Rows {
        Rows {
            rows: Vec::new(),
            since: Ticks::now(),
        }
    }

    /// Adds `row`, measured since the row before it (or since the report began).
    pub fn push(&mut self, row: Row) {
        let now = Ticks::now();
        let share = |part: fn(&Ticks, &Ticks) -> Option<u64>| -> Option<f64> {
            let (a, b) = (self.since.as_ref()?, now.as_ref()?);
            let total = b.total.checked_sub(a.total).filter(|t| *t > 0)?;
            Some(part(a, b)? as f64 / total as f64)
        };
        let others = share(|a, b| {
            // This process's own ticks are counted per thread and may run ahead of the
            // machine's by a tick or two: none is then read as none.
            let busy = b.busy.checked_sub(a.busy)?;
            Some(busy.saturating_sub(b.own.checked_sub(a.own)?))
        });
        let steal = share(|a, b| b.steal.checked_sub(a.steal));
        let avg1 = std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok());
        self.rows.push((
            row,
            Load {
                avg1,
                others,
                steal,
            },
        ));
        self.since = now;
    }

    pub fn iter(&self) -> impl Iterator<Item = &(Row, Load)> {
        self.rows.iter()
    }
}
