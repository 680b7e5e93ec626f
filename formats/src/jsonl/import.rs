//! Import of DSH JSONL sessions into a store (`docs/FORMATS.md` §2.5, `docs/DESIGN.md` §4).
//!
//! Per file: the header line (version 0 or `UnsupportedFormat`), then every line decoded
//! (event lines, packed rows). A line is committed when it parses, decodes and continues
//! the seq. At the first bad line (unparsable, malformed packed row, seq gap, cut short) the
//! scan keeps only looking: if a later line is a `turn/end`, the log is corrupt (refused,
//! naming the bad line); otherwise everything from the bad line on is a torn tail, dropped and
//! reported. The committed events then go through the store's acceptance function as one
//! record: a session is imported whole or not at all, and nothing is appended to it.

use std::path::{Path, PathBuf};

use sessdb::json::{JsonKind, JsonRef, validate};
use sessdb::{Error as StoreError, Event, Limits, PackHint, SessionHeader, Store};

use super::grammar::parses_as_dsh_json;
use super::layout::{NO_CWD_DIR, RAW_FILE, ZSTD_FILE, session_dir};
use super::lines::{Line, LineReader};
use crate::admit::{Places, admit};
use crate::pack::{TOO_MANY_PIECES, is_packed_row, is_row_type, mark_row_start, unpack};
use crate::report::{ImportReport, TornTail};
use crate::target::{DryRun, RestoreTarget};
use crate::{Error, Progress, Result};

/// Imports from a DSH sessions root, one session directory, or one `session.jsonl[.zstd]`
/// file.
///
/// Every session is read and validated first (a dry run that stores nothing), then stored:
/// a refused or conflicting session leaves the store untouched. Import is incremental and
/// idempotent: a session the store holds with the same events is skipped, one whose input
/// continues the stored events is extended, one that differs is a `Conflict`.
///
/// # Errors
/// `Layout` for a root sessdb cannot read, `Corrupt`, `UnsupportedFormat`, `Invalid` naming
/// file, line, seq and rule, `Conflict`; nothing is stored then.
pub fn import_jsonl(store: &Store, path: &Path) -> Result<ImportReport> {
    import_jsonl_with_progress(store, path, &mut |_| {})
}

/// As [`import_jsonl`], telling `progress` how far it has come (for progress bars).
///
/// # Errors
/// As [`import_jsonl`].
pub fn import_jsonl_with_progress(
    store: &Store,
    path: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportReport> {
    let mut kept = Kept::with_budget(KEPT_BYTES);
    import_into(
        &DryRun::new(store),
        path,
        &mut |_| {},
        Pass::DryRun(&mut kept),
    )?;
    import_into(store, path, progress, Pass::Import(&mut kept))
}

/// The most bytes of events (as [`expanded_bytes`] counts them) the dry run of an import keeps
/// for the import that follows it.
const KEPT_BYTES: u64 = 64 << 20;

/// Files the dry run of an import read and decoded, kept (up to [`KEPT_BYTES`]) for the
/// import that follows it: a directory within that is read and decoded once, not twice
/// (`docs/PERFORMANCE.md`, 2026-12-06, latest), and the import stores what its dry run
/// checked.
struct Kept {
    files: std::collections::HashMap<PathBuf, Scanned>,
    bytes: u64,
    budget: u64,
}

impl Kept {
    fn with_budget(budget: u64) -> Self {
        Self {
            files: std::collections::HashMap::new(),
            bytes: 0,
            budget,
        }
    }
}

/// Which pass over the files [`import_into`] makes.
enum Pass<'a> {
    /// The dry run before an import: what it decodes is kept in `Kept` while there is room.
    DryRun(&'a mut Kept),
    /// The import after its dry run: a file kept there is not read again.
    Import(&'a mut Kept),
    /// A dry run alone (`plan_jsonl`).
    Plan,
}

impl Pass<'_> {
    /// The file's content: as the dry run kept it, or read now.
    fn scan(&mut self, file: &Path) -> Result<Scanned> {
        if let Pass::Import(kept) = self
            && let Some(scanned) = kept.files.remove(file)
        {
            return Ok(scanned);
        }
        let scanned = read_session(file, &store_limits())?;
        if let Pass::DryRun(kept) = self {
            let bytes: u64 = scanned.1.iter().map(|(e, _)| expanded_bytes(e)).sum();
            if kept.bytes + bytes <= kept.budget {
                kept.bytes += bytes;
                kept.files.insert(file.to_owned(), scanned.clone());
            }
        }
        Ok(scanned)
    }
}

/// What [`import_jsonl`] would do, storing nothing: the same reading, validation and
/// comparison with the stored sessions.
///
/// # Errors
/// As [`import_jsonl`].
pub fn plan_jsonl(store: &Store, path: &Path) -> Result<ImportReport> {
    import_into(&DryRun::new(store), path, &mut |_| {}, Pass::Plan)
}

/// Imports one session file's content read from `input` — raw or zstd, told apart by the
/// zstd magic — named `name` in errors and in the report: what `sessdb import --jsonl -`
/// does with stdin. The input is read once (raw lines streamed, a zstd input's compressed
/// bytes held while its frames are checked), and the session is stored whole or not at all,
/// with the same rules as [`import_jsonl`].
///
/// # Errors
/// As [`import_jsonl`].
pub fn import_jsonl_reader(
    store: &Store,
    input: impl std::io::Read + 'static,
    name: &Path,
) -> Result<ImportReport> {
    import_one(store, Box::new(input), name)
}

/// What [`import_jsonl_reader`] would do, storing nothing.
///
/// # Errors
/// As [`import_jsonl`].
pub fn plan_jsonl_reader(
    store: &Store,
    input: impl std::io::Read + 'static,
    name: &Path,
) -> Result<ImportReport> {
    import_one(&DryRun::new(store), Box::new(input), name)
}

/// One session from a reader through the pipeline into `target`: one session needs no dry
/// run first, since the target stores it whole or not at all.
fn import_one(
    target: &dyn RestoreTarget,
    input: Box<dyn std::io::Read>,
    name: &Path,
) -> Result<ImportReport> {
    let limits = store_limits();
    let reader = LineReader::from_reader(input, name, max_line(&limits))?;
    let (header, events, torn, _, invalid_utf8_lines) = read_lines(reader, name, &limits)?;
    let (events, lines): (Vec<Event>, Vec<u64>) = events.into_iter().unzip();
    let mut imported = admit(target, name, header, events, Places::Lines(&lines))?;
    imported.torn = torn;
    imported.invalid_utf8_lines = invalid_utf8_lines;
    Ok(ImportReport {
        sessions: vec![imported],
    })
}

fn import_into(
    store: &dyn RestoreTarget,
    path: &Path,
    progress: &mut dyn FnMut(Progress),
    mut pass: Pass<'_>,
) -> Result<ImportReport> {
    let files = session_files(path)?;
    let bytes_total = files
        .iter()
        .map(|(f, _)| std::fs::metadata(f).map_or(0, |m| m.len()))
        .sum();
    let mut report = ImportReport::default();
    let mut done = Progress {
        bytes_total,
        ..Progress::default()
    };
    let mut seen_ids = std::collections::BTreeMap::new();
    for (file, check_place) in files {
        let (header, events, torn, bytes, invalid_utf8_lines) = pass.scan(&file)?;
        if let Some(root) = &check_place {
            let expected = session_dir(root, &header.id, header.cwd.as_deref());
            if file.parent() != Some(expected.as_path()) {
                return Err(Error::Layout {
                    path: file,
                    problem: format!("the header's id and cwd belong in {}", expected.display()),
                });
            }
            if let Some(other) = seen_ids.insert(header.id.clone(), file.clone()) {
                return Err(Error::Layout {
                    path: file,
                    problem: format!("session {:?} is also in {}", header.id, other.display()),
                });
            }
        }
        let count = events.len() as u64;
        let (events, lines): (Vec<Event>, Vec<u64>) = events.into_iter().unzip();
        let mut imported = admit(store, &file, header, events, Places::Lines(&lines))?;
        imported.torn = torn;
        imported.invalid_utf8_lines = invalid_utf8_lines;
        done.events_done += count;
        done.bytes_done += bytes;
        progress(done);
        report.sessions.push(imported);
    }
    Ok(report)
}

fn store_limits() -> Limits {
    Limits::default()
}

/// The files to read; with `Some(root)` each must sit where its header says.
fn session_files(path: &Path) -> Result<Vec<(PathBuf, Option<PathBuf>)>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io("stat", path, e))?;
    if meta.is_file() {
        return Ok(vec![(path.to_owned(), None)]);
    }
    if let Some(file) = file_in(path)? {
        return Ok(vec![(file, None)]);
    }
    // A sessions root: <root>/--<key>--/<id>/session.jsonl[.zstd] and <root>/_no-cwd/<id>/...
    let mut files = Vec::new();
    for project in sorted_entries(path)? {
        let name = project
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        if project.is_file() {
            if name.ends_with(".jsonl") || name.ends_with(".jsonl.zstd") {
                return Err(Error::Layout {
                    path: project,
                    problem:
                        "a legacy flat session file; sessdb reads only <project>/<id>/session.jsonl"
                            .into(),
                });
            }
            continue;
        }
        let is_project = (name.starts_with("--") && name.ends_with("--") && name.len() > 4)
            || name == NO_CWD_DIR;
        if !is_project {
            continue;
        }
        for session in sorted_entries(&project)? {
            if session.is_file() {
                if session
                    .extension()
                    .is_some_and(|e| e == "jsonl" || e == "zstd")
                {
                    return Err(Error::Layout { path: session, problem: "a legacy flat session file; sessdb reads only <project>/<id>/session.jsonl".into() });
                }
                continue;
            }
            if let Some(file) = file_in(&session)? {
                files.push((file, Some(path.to_owned())));
            }
        }
    }
    let zstd = files
        .iter()
        .filter(|(f, _)| f.extension().is_some_and(|e| e == "zstd"))
        .count();
    if zstd != 0 && zstd != files.len() {
        return Err(Error::Layout { path: path.to_owned(), problem: "a sessions root holds one encoding only, and this one mixes session.jsonl and session.jsonl.zstd".into() });
    }
    if files.is_empty() {
        return Err(Error::Layout { path: path.to_owned(), problem: "no session.jsonl or session.jsonl.zstd found (expected a sessions root, a session directory or a file)".into() });
    }
    Ok(files)
}

fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io("list", dir, e))?
        .map(|e| e.map(|e| e.path()).map_err(|e| Error::io("list", dir, e)))
        .collect::<Result<_>>()?;
    v.sort();
    Ok(v)
}

/// The session file of a session directory, if it has one.
fn file_in(dir: &Path) -> Result<Option<PathBuf>> {
    let raw = dir.join(RAW_FILE);
    let zst = dir.join(ZSTD_FILE);
    match (raw.is_file(), zst.is_file()) {
        (true, true) => Err(Error::Layout {
            path: dir.to_owned(),
            problem: "holds both session.jsonl and session.jsonl.zstd".into(),
        }),
        (true, false) => Ok(Some(raw)),
        (false, true) => Ok(Some(zst)),
        (false, false) => Ok(None),
    }
}

/// A session read: header, events with their lines, the torn tail, bytes read, and the lines
/// whose invalid UTF-8 was read as U+FFFD.
type Scanned = (
    SessionHeader,
    Vec<(Event, u64)>,
    Option<TornTail>,
    u64,
    Vec<u64>,
);

/// Reads one file: header, committed events with their line numbers, the torn tail.
pub(crate) fn read_session(file: &Path, limits: &Limits) -> Result<Scanned> {
    read_lines(LineReader::open(file, max_line(limits))?, file, limits)
}

/// The longest line read: one `data` of the limit plus its envelope, or a packed row.
fn max_line(limits: &Limits) -> usize {
    limits
        .max_data_bytes
        .saturating_mul(2)
        .saturating_add(1 << 20)
}

/// Reads one session's lines (named `file` in errors): as [`read_session`].
fn read_lines(mut reader: LineReader, file: &Path, limits: &Limits) -> Result<Scanned> {
    let max_line = max_line(limits);
    let corrupt = |line, problem: String| Error::Corrupt {
        file: file.to_owned(),
        line,
        problem,
    };
    let header_line = reader
        .next_line()?
        .ok_or_else(|| corrupt(Some(1), "the file is empty".into()))?;
    if !header_line.terminated || header_line.oversized {
        return Err(corrupt(Some(1), "the header line is incomplete".into()));
    }
    // Whitespace around a line (a CRLF file's `\r`, trailing spaces) is outside the JSON
    // value: `JSON.parse` ignores it, and so does the import (nothing stored depends on it).
    let header = read_header(file, header_line.bytes.trim_ascii())?;
    let line_limits = Limits {
        max_depth: limits.max_depth.saturating_add(1),
        max_data_bytes: max_line,
    };
    let mut events: Vec<(Event, u64)> = Vec::new();
    let mut expanded = 0u64;
    let mut bad: Option<(u64, String)> = None;
    let mut dropped = 0;
    while let Some(line) = reader.next_line()? {
        if let Some((first, problem)) = &bad {
            dropped += 1;
            after_torn(&line, *first, problem, &line_limits)
                .map_err(|(at, why)| corrupt(Some(at), why))?;
            continue;
        }
        let next = events.len() as u64;
        match decode_line(&line, next, &line_limits, limits) {
            Ok(decoded) => {
                expanded += decoded.iter().map(expanded_bytes).sum::<u64>();
                if expanded > MAX_SESSION_BYTES {
                    return Err(corrupt(
                        Some(line.number),
                        format!(
                            "the session expands past {MAX_SESSION_BYTES} bytes of events: refused to bound memory"
                        ),
                    ));
                }
                for (i, e) in decoded.into_iter().enumerate() {
                    // The first event of a zstd frame: the export starts a frame there.
                    let e = if i == 0 && line.frame_start {
                        e.with_frame_start(true)
                    } else {
                        e
                    };
                    events.push((e, line.number));
                }
            }
            Err(BadLine::Refuse(problem)) => {
                return Err(corrupt(Some(line.number), problem));
            }
            Err(BadLine::Torn(problem)) => {
                bad = Some((line.number, problem));
                dropped = 1;
            }
        }
    }
    let torn = bad.map(|(line, reason)| TornTail {
        line,
        reason,
        lines_dropped: dropped,
    });
    Ok((
        header,
        events,
        torn,
        reader.bytes_read,
        std::mem::take(&mut reader.replaced_lines),
    ))
}

/// A line after the first bad one, read only to see whether a turn ends later (then the
/// bad line was no torn tail) or whether it is `null`, which DSH's loader fails on anywhere:
/// `Err((line, why))` names the line to report.
fn after_torn(
    line: &Line,
    first: u64,
    problem: &str,
    line_limits: &Limits,
) -> std::result::Result<(), (u64, String)> {
    let bytes = line.bytes.trim_ascii();
    if line.terminated && bytes == b"null" {
        return Err((
            line.number,
            "the line is `null`, a record DSH's loader fails on".into(),
        ));
    }
    let closes_a_turn = line.terminated
        && validate(bytes, line_limits).is_ok()
        && JsonRef::new(bytes)
            .get("type")
            .is_some_and(|t| t.str_eq("turn/end"));
    if closes_a_turn {
        return Err((
            first,
            format!(
                "{problem}, yet line {} later closes a turn: this is not a torn tail",
                line.number
            ),
        ));
    }
    Ok(())
}

fn read_header(file: &Path, bytes: &[u8]) -> Result<SessionHeader> {
    // DSH's JSONL reader requires the header line's `delegationDepth` (its writer always
    // writes it): a line without it is no header DSH loads.
    let v = sessdb::json::JsonRef::new(bytes);
    if sessdb::json::validate(bytes, &sessdb::Limits::default()).is_ok()
        && v.kind() == sessdb::json::JsonKind::Object
        && v.get("delegationDepth").is_none()
        && v.get("version").is_some_and(|n| n.bytes() == b"0")
    {
        return Err(Error::Invalid {
            file: file.to_owned(),
            line: Some(1),
            source: StoreError::InvalidHeader {
                problem: "delegationDepth is missing (DSH's JSONL reader requires it)".into(),
            },
        });
    }
    SessionHeader::from_json(bytes).map_err(|e| match e {
        StoreError::UnsupportedFormat { found, expected } => {
            let newer = found.parse::<u64>().is_ok_and(|v| v > expected);
            Error::UnsupportedFormat {
                file: file.to_owned(),
                found: format!(
                    "session format version {found} ({})",
                    if newer {
                        "written by a newer harness: upgrade sessdb"
                    } else {
                        "sessdb ships no upgrade path from it"
                    }
                ),
                expected: format!("version {expected}"),
            }
        }
        other => Error::Invalid {
            file: file.to_owned(),
            line: Some(1),
            source: other,
        },
    })
}

/// The most bytes the events of one imported session may take once unpacked (their `data`
/// plus a fixed per-event overhead): the importer holds a session in memory to store it whole,
/// so this bounds its memory whatever the input's compression hides.
pub const MAX_SESSION_BYTES: u64 = 1 << 30;

/// Bytes an event is counted as against [`MAX_SESSION_BYTES`].
fn expanded_bytes(e: &Event) -> u64 {
    (e.data().len() + e.event_type().len() + 96) as u64
}

/// Whether a line (grammatical JSON) is an object with a `seq` member: a record DSH decodes.
fn is_seq_object(bytes: &[u8]) -> bool {
    let trimmed = bytes.trim_ascii();
    let row = JsonRef::new(trimmed);
    row.kind() == sessdb::json::JsonKind::Object && row.get("seq").is_some()
}

/// Why a line is not committed.
enum BadLine {
    /// DSH's loader would not keep it either (it does not parse as JSON, is cut short, or its
    /// events do not continue the seq): a torn tail when nothing after it closes a turn.
    Torn(String),
    /// The line is a record DSH's loader decodes (JSON, an object with a seq): it keeps it or
    /// refuses the file; never a torn tail to drop silently.
    Refuse(String),
}

/// The events of one line, or why it is a bad line.
fn decode_line(
    line: &Line,
    next_seq: u64,
    line_limits: &Limits,
    limits: &Limits,
) -> std::result::Result<Vec<Event>, BadLine> {
    // Most lines are one event in the canonical envelope, as DSH's writer and sessdb's export
    // write them: read by the engine's shortcut, which passes every check below by
    // construction — a whole line (not oversized: the reader marks those) that is JSON within
    // the line limits (its `data` within `limits`, one level less deep), an event and not a
    // packed row, the next seq — without validating the line and walking it for its keys
    // first (`docs/PERFORMANCE.md`, 2026-12-06, latest).
    if line.terminated
        && !line.oversized
        && let Some(event) = Event::from_canonical_jsonl(line.bytes.trim_ascii(), limits)
        && event.seq() == next_seq
        && !is_row_type(event.event_type())
    {
        let events = vec![lone_chunk(event)];
        debug_assert!(
            matches!(
                decode_any_line(line, next_seq, line_limits, limits),
                Ok(ref general) if general == &events
            ),
            "line {next_seq}: the shortcut and the general decoding disagree"
        );
        return Ok(events);
    }
    decode_any_line(line, next_seq, line_limits, limits)
}

/// A chunk that stood alone in the file is remembered as one (`PackHint::Lone`), so the
/// export writes it alone again.
fn lone_chunk(event: Event) -> Event {
    if event.event_type() == "assistant/chunk" {
        event.with_pack_hint(PackHint::Lone)
    } else {
        event
    }
}

/// [`decode_line`] of any line: checked step by step, each refusal named.
fn decode_any_line(
    line: &Line,
    next_seq: u64,
    line_limits: &Limits,
    limits: &Limits,
) -> std::result::Result<Vec<Event>, BadLine> {
    // Whitespace around a line (a CRLF file's `\r`) is outside the JSON value, as for the
    // header line.
    let (bytes, terminated, oversized) = (line.bytes.trim_ascii(), line.terminated, line.oversized);
    if oversized {
        return Err(BadLine::Torn(format!(
            "the line is longer than {} bytes",
            line_limits.max_data_bytes
        )));
    }
    if !terminated {
        return Err(BadLine::Torn(
            "the last line has no newline (a torn write)".into(),
        ));
    }
    if let Err(e) = validate(bytes, line_limits) {
        return Err(if parses_as_dsh_json(bytes) && is_seq_object(bytes) {
            BadLine::Refuse(format!(
                "the line is JSON that DSH's loader reads, but sessdb cannot store it losslessly: {e}"
            ))
        } else {
            BadLine::Torn(format!("the line is not JSON: {e}"))
        });
    }
    // DSH's loader fails on a `null` record wherever it stands (it reads the record's seq
    // before anything else; measured with DSH's own code): no torn tail, a refused file.
    if bytes == b"null" {
        return Err(BadLine::Refuse(
            "the line is `null`, a record DSH's loader fails on".into(),
        ));
    }
    let row = JsonRef::new(bytes);
    // Where the file's packed rows began and which chunks stood alone is remembered
    // (`PackHint`), so the export writes DSH's rows as DSH wrote them.
    let events = if is_packed_row(&row) {
        let events = unpack(&row).map_err(|e| {
            let problem = format!("malformed packed row: {e}");
            if e == TOO_MANY_PIECES {
                BadLine::Refuse(problem)
            } else {
                BadLine::Torn(problem)
            }
        })?;
        mark_row_start(events)
    } else {
        // DSH's scanner compares the record's seq before it decodes anything else: a seq that
        // is not the next one (negative, fractional, a string, past the safe range) makes a
        // seq gap — a torn tail at the end of the file — not an envelope refusal.
        if let Some(seq) = row.get("seq").filter(|_| row.kind() == JsonKind::Object)
            && seq.as_safe_integer() != i64::try_from(next_seq).ok()
        {
            let gap = format!(
                "seq gap: expected seq {next_seq}, found {}",
                String::from_utf8_lossy(seq.bytes())
            );
            return Err(if row.get("type").is_some_and(|t| t.str_eq("turn/end")) {
                BadLine::Refuse(format!("{gap}, and the line closes a turn"))
            } else {
                BadLine::Torn(gap)
            });
        }
        let event = Event::from_jsonl(bytes, limits).map_err(|e| {
            // DSH decodes an object with a seq as an event (refusing a bad one); anything else
            // that parses is an unreadable record, like a line that does not parse.
            if is_seq_object(bytes) {
                BadLine::Refuse(e.to_string())
            } else {
                BadLine::Torn(e.to_string())
            }
        })?;
        vec![lone_chunk(event)]
    };
    match events.first() {
        Some(e) if e.seq() != next_seq => {
            let gap = format!("seq gap: expected seq {next_seq}, found {}", e.seq());
            // A line that closes a turn out of order is no torn write (DSH: corrupt).
            Err(if events.iter().any(|e| e.event_type() == "turn/end") {
                BadLine::Refuse(format!("{gap}, and the line closes a turn"))
            } else {
                BadLine::Torn(gap)
            })
        }
        _ => Ok(events),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three sessions in the layout DSH writes them in, under `root`.
    fn sessions(root: &Path) -> Vec<String> {
        (0..3)
            .map(|i| {
                let id = format!("s{i}");
                let dir = session_dir(root, &id, Some("/w"));
                std::fs::create_dir_all(&dir).unwrap();
                let text = format!(
                    "{{\"type\":\"session\",\"version\":0,\"id\":\"{id}\",\"createdAt\":1,\"cwd\":\"/w\",\"delegationDepth\":0}}\n\
                     {{\"type\":\"turn/start\",\"seq\":0,\"time\":{i},\"data\":{{\"turn\":1}}}}\n\
                     {{\"type\":\"turn/end\",\"seq\":1,\"time\":{i},\"data\":{{\"turn\":1,\"reason\":{{\"kind\":\"completed\"}}}}}}\n"
                );
                std::fs::write(dir.join(RAW_FILE), text).unwrap();
                id
            })
            .collect()
    }

    /// Whatever the dry run kept — nothing, one file, every file — the import stores each
    /// session from its own file, and takes every kept file.
    #[test]
    fn the_import_stores_what_each_file_holds_whatever_the_dry_run_kept() {
        let input = tempfile::tempdir().unwrap();
        let ids = sessions(input.path());
        // One file's events as the budget counts them (the three files hold as many bytes).
        let first = session_dir(input.path(), &ids[0], Some("/w")).join(RAW_FILE);
        let one: u64 = read_session(&first, &store_limits())
            .unwrap()
            .1
            .iter()
            .map(|(e, _)| expanded_bytes(e))
            .sum();
        for (budget, kept_files) in [(0, 0), (one, 1), (u64::MAX, 3)] {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path(), sessdb::StoreOptions::default()).unwrap();
            let mut kept = Kept::with_budget(budget);
            import_into(
                &DryRun::new(&store),
                input.path(),
                &mut |_| {},
                Pass::DryRun(&mut kept),
            )
            .unwrap();
            assert_eq!(kept.files.len(), kept_files, "budget {budget}");
            let report =
                import_into(&store, input.path(), &mut |_| {}, Pass::Import(&mut kept)).unwrap();
            assert!(kept.files.is_empty());
            assert_eq!(report.sessions.len(), 3);
            for (i, id) in ids.iter().enumerate() {
                let events = store.events(id, 0..u64::MAX).unwrap();
                assert_eq!(events.len(), 2, "{id}");
                assert!(
                    events.iter().all(|e| e.time() == i as i64),
                    "{id}: another file's events"
                );
            }
        }
    }
}
