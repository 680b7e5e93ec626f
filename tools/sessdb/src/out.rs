//! Output helpers: stdout for data, stderr for messages and progress bars, JSON text, times.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Prints one value as one line of JSON on stdout (the shapes are documented in the README).
pub fn print_json<T: serde::Serialize>(value: &T) {
    match serde_json::to_vec(value) {
        Ok(mut bytes) => {
            bytes.push(b'\n');
            print(&bytes);
        }
        // The CLI's own structs always serialize; an error here is a bug, said plainly.
        Err(e) => eprintln!("sessdb: cannot write JSON: {e}"),
    }
}

/// Writes to stdout. A closed stdout (`| head`) ends the program quietly; any other write
/// error (a full disk, `> /dev/full`) ends it with exit code 1 and the error on stderr: output
/// that was not written is never reported as success.
pub fn print(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("sessdb: write stdout: {e}");
        std::process::exit(i32::from(crate::error::code::OTHER));
    }
}

/// The result of writing to stdout: a closed stdout (`| head`) ends the output quietly.
pub fn to_stdout<T>(r: sessdb_formats::Result<T>) -> crate::error::CliResult<()> {
    match r {
        Ok(_) => Ok(()),
        Err(sessdb_formats::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes one line to stdout.
pub fn println(line: &str) {
    let mut b = line.as_bytes().to_vec();
    b.push(b'\n');
    print(&b);
}

/// Epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso_time(ms: i64) -> String {
    // jiff's range is years -9999..=9999; a time past it (data, not a clock) prints as its
    // number of milliseconds.
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        Err(_) => format!("{ms} ms"),
    }
}

/// What a progress bar counts.
#[derive(Debug, Clone, Copy)]
pub enum Unit {
    /// Events, with their total.
    Events,
    /// Bytes, with their total.
    Bytes,
    /// Seconds of a timed run.
    Seconds,
}

/// A progress bar on stderr, only when stderr is a terminal and not `--quiet`: done, total,
/// and the time left. It stays hidden until its total is known (a first frame of `0/0` drew
/// a full bar).
pub fn bar(quiet: bool, what: &str, unit: Unit) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
    set_unit(&bar, unit);
    bar.set_message(what.to_owned());
    Some(bar)
}

/// Sets a bar's total, and shows it once the total is known.
pub fn set_total(bar: &ProgressBar, total: u64) {
    if bar.length() != Some(total) {
        bar.set_length(total);
    }
    if total > 0 && bar.is_hidden() {
        bar.set_draw_target(ProgressDrawTarget::stderr());
    }
}

fn set_unit(bar: &ProgressBar, unit: Unit) {
    let template = match unit {
        Unit::Events => "{msg} [{bar:30}] {human_pos}/{human_len} events{left}",
        Unit::Bytes => "{msg} [{bar:30}] {bytes}/{total_bytes}{left}",
        // Positions in milliseconds, shown as seconds with a tenth.
        Unit::Seconds => "{msg} [{bar:30}] {secs}",
    };
    let style = ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        // The time left only once the rate means something (a second in, 5 % done): the
        // first estimates of a short import said "30m left".
        .with_key("left", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            if s.elapsed().as_secs_f64() >= 1.0 && s.fraction() >= 0.05 {
                let left = s.eta().as_secs();
                let _ = if left >= 60 {
                    write!(w, ", {}m{:02}s left", left / 60, left % 60)
                } else {
                    write!(w, ", {left}s left")
                };
            }
        })
        .with_key("secs", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let ms = |v: u64| v as f64 / 1000.0;
            let _ = write!(
                w,
                "{:.1}/{:.1} s",
                ms(s.pos()),
                ms(s.len().unwrap_or_default())
            );
        });
    bar.set_style(style.progress_chars("=> "));
}

/// Updates a bar from a formats progress report: events when their total is known, else
/// bytes (a JSONL import knows the bytes to read, not the events in them).
pub fn update(bar: &Option<ProgressBar>, p: sessdb_formats::Progress) {
    let Some(b) = bar else { return };
    if p.events_total > 0 {
        set_total(b, p.events_total);
        b.set_position(p.events_done);
    } else if p.bytes_total > 0 {
        if b.length() != Some(p.bytes_total) {
            set_unit(b, Unit::Bytes);
            set_total(b, p.bytes_total);
        }
        b.set_position(p.bytes_done);
    }
}

/// A bar for open's log scan (`verify`, `repair`), as an [`sessdb::store::OpenProgress`].
pub fn scan_bar(quiet: bool, what: &str) -> (Option<ProgressBar>, sessdb::store::OpenProgress) {
    let Some(b) = bar(quiet, what, Unit::Bytes) else {
        return (None, sessdb::store::OpenProgress::default());
    };
    let shared = b.clone();
    let progress = sessdb::store::OpenProgress::new(move |done, total| {
        set_total(&shared, total);
        shared.set_position(done);
    });
    (Some(b), progress)
}

/// The cells `s` takes on a terminal (a wide character two, a combining mark none).
pub fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` padded with spaces to `cells` terminal cells.
pub fn pad(s: &str, cells: usize) -> String {
    let mut out = s.to_owned();
    out.extend(std::iter::repeat_n(' ', cells.saturating_sub(width(s))));
    out
}

/// A message on stderr, unless quiet.
pub fn note(quiet: bool, text: &str) {
    if !quiet {
        eprintln!("{text}");
    }
}

/// A warning about data (dropped, replaced or stored in another shape) on stderr, quiet or
/// not: `--quiet` silences progress and chatter, never what happened to the data.
pub fn warn(text: &str) {
    eprintln!("sessdb: warning: {text}");
}

/// An id or name as the terminal shows it: unchanged when every character is printable, else
/// with control and other unprintable characters escaped (`\n`, `\u{1b}`), so an id can forge
/// no row and inject no terminal escape.
pub fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    if s.chars().all(|c| !c.is_control() && c != '\u{7f}') {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(
            s.chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_debug().to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_padded_by_terminal_cells() {
        assert_eq!(width("会话"), 4);
        assert_eq!(pad("会话", 6), "会话  ");
        assert_eq!(pad("ab", 6), "ab    ");
        assert_eq!(pad("abcdefg", 3), "abcdefg");
        // A combining mark takes no cell.
        assert_eq!(pad("e\u{301}", 3), "e\u{301}  ");
    }

    #[test]
    fn iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso_time(i64::MAX), "9223372036854775807 ms");
    }
}
