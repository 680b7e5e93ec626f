//! Output helpers: stdout for data, stderr for messages and progress bars, JSON text, times.

use std::io::{IsTerminal, Write};

use indicatif::{ProgressBar, ProgressStyle};

/// A JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut out = Vec::new();
    sessdb::json::write_str(&mut out, s);
    String::from_utf8_lossy(&out).into_owned()
}

/// `null` or the JSON of a value.
pub fn json_opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

/// `null` or a JSON string.
pub fn json_opt_str(v: Option<&str>) -> String {
    v.map_or_else(|| "null".to_owned(), json_str)
}

/// Writes to stdout; a closed stdout (`| head`) ends the program quietly.
pub fn print(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if out.write_all(bytes).and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
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
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A progress bar on stderr, only when stderr is a terminal and not `--quiet`.
pub fn bar(quiet: bool, what: &str) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} events ({elapsed})")
        .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar.set_message(what.to_owned());
    Some(bar)
}

/// Updates a bar from a formats progress report.
pub fn update(bar: &Option<ProgressBar>, p: sessdb_formats::Progress) {
    if let Some(b) = bar {
        if p.events_total > 0 {
            b.set_length(p.events_total);
        }
        b.set_position(p.events_done);
    }
}

/// A message on stderr, unless quiet.
pub fn note(quiet: bool, text: &str) {
    if !quiet {
        eprintln!("{text}");
    }
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
    fn iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(-1), "1969-12-31T23:59:59.999Z");
    }
}
