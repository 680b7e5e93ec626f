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
