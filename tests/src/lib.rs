//! Shared helpers of sessdb's cross-crate tests: loading the DSH v0 fixtures of
//! `tests/fixtures/dsh/` (copied from DSH, with its MIT notice).
//!
//! The fixtures are in DSH's normalized layout: `seq`, `time`, `seq0` and `time0` are
//! stripped and `{{cwd}}`-style placeholders stand for values. [`load`] renumbers them (seq =
//! index of the event from 0, packed chunk rows expanded into their member events), gives
//! every event a time, and puts an absolute path in place of `{{cwd}}`.

#![forbid(unsafe_code)]

mod backend;
pub mod pg;
mod wrapped;
pub use wrapped::{ChangeHook, Hooked, ListHook, OpenHook, SyncHook, SyncHooked};

pub use backend::Backend;

use std::path::PathBuf;

use sessdb::json::{JsonKind, JsonRef, write_str};
use std::sync::Arc;

use sessdb::storage::MemStorage;
use sessdb::{Clock, Event, Limits, SessionHeader, SessionState, Store, StoreOptions};

/// A property test's number of cases: `PROPTEST_CASES` when set (a longer run by hand),
/// else `default`. A config that names its cases (`ProptestConfig { cases, .. }`) ignores
/// the variable, which proptest reads only into its default config.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The five fixture files.
pub const FIXTURES: [&str; 5] = [
    "acp-subagent-fork-in-process.child.session.1.jsonl",
    "acp-subagent-fork-in-process.parent.session.jsonl",
    "acp-tool-call-turn.session.jsonl",
    "headless-compaction-recovery.session.jsonl",
    "headless-tool-outcome-unknown.session.expected.jsonl",
];

/// The path that replaces `{{cwd}}`.
pub const FIXTURE_CWD: &str = "/workspace/project";

/// Time given to seq 0; seq `n` gets `FIXTURE_TIME0 + 10 n` (packed members follow `dt`).
pub const FIXTURE_TIME0: i64 = 1_783_352_000_000;

/// The fixtures directory: `$SESSDB_FIXTURES`, else `tests/fixtures/dsh` in the repository
/// (DSH's files with DSH's MIT notice).
pub fn fixtures_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SESSDB_FIXTURES") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dsh")
}

/// A copy, in a temp dir the test may write to, of the store a previous release wrote under
/// `fixture/store/` (its `segments/` and `checkpoints/`).
///
/// # Panics
/// On an unreadable fixture or an unwritable temp dir.
pub fn copy_of_store_fixture(fixture: &std::path::Path) -> tempfile::TempDir {
    let io = |what: &str, path: &std::path::Path, e: std::io::Error| -> ! {
        panic!("{what} {}: {e}", path.display())
    };
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    for sub in ["segments", "checkpoints"] {
        let (from, to) = (fixture.join("store").join(sub), dir.path().join(sub));
        std::fs::create_dir_all(&to).unwrap_or_else(|e| io("create", &to, e));
        for entry in std::fs::read_dir(&from).unwrap_or_else(|e| io("list", &from, e)) {
            let path = entry.unwrap_or_else(|e| io("list", &from, e)).path();
            let target = to.join(path.file_name().unwrap_or_default());
            std::fs::copy(&path, &target).unwrap_or_else(|e| io("copy", &path, e));
        }
    }
    dir
}

/// A renumbered fixture.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The header line.
    pub header: SessionHeader,
    /// The events, seq = index.
    pub events: Vec<Event>,
}

/// The text of a fixture with `{{cwd}}` replaced.
///
/// # Panics
/// On an unreadable fixture.
pub fn fixture_text(name: &str) -> String {
    let path = fixtures_dir().join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read fixture {}: {e}", path.display()))
        .replace("{{cwd}}", FIXTURE_CWD)
}

/// Loads and renumbers one fixture.
///
/// # Panics
/// On an unreadable or malformed fixture: these are test inputs.
pub fn load(name: &str) -> Fixture {
    let text = fixture_text(name);
    let mut lines = text.lines();
    let header = SessionHeader::from_json(lines.next().unwrap_or_default().as_bytes())
        .unwrap_or_else(|e| panic!("{name}: header: {e}"));
    let mut events = Vec::new();
    for (n, line) in lines.enumerate() {
        for event in renumber(line.as_bytes(), events.len() as u64) {
            events.push(event.unwrap_or_else(|e| panic!("{name} line {}: {e}", n + 2)));
        }
    }
    Fixture { header, events }
}

/// The events of one normalized line, the first at `seq`: one for an event line, one per
/// member for a packed chunk row.
pub fn renumber(line: &[u8], seq: u64) -> Vec<sessdb::Result<Event>> {
    let row = JsonRef::new(line);
    let ty = row
        .get("type")
        .and_then(|t| t.as_str())
        .unwrap_or_default()
        .into_owned();
    let time = FIXTURE_TIME0 + 10 * seq as i64;
    let chunk_kind = match ty.as_str() {
        "text-chunks" => Some("text-delta"),
        "reasoning-chunks" => Some("reasoning-delta"),
        "tool-call-chunks" => Some("tool-call-delta"),
        _ => None,
    };
    let Some(kind) = chunk_kind else {
        return vec![Event::from_jsonl(
            &insert_seq_time(line, seq, time),
            &Limits::default(),
        )];
    };
    let Some(data) = row.get("data") else {
        return vec![Err(sessdb::Error::InvalidEnvelope {
            seq: Some(seq),
            problem: "packed row without data".into(),
        })];
    };
    let raw = |key: &str| {
        data.get(key)
            .map(|v| String::from_utf8_lossy(v.bytes()).into_owned())
    };
    let (turn, step, index) = (
        raw("turn").unwrap_or_default(),
        raw("step").unwrap_or_default(),
        raw("index").unwrap_or_default(),
    );
    let pieces: Vec<JsonRef<'_>> = data
        .get(if kind == "tool-call-delta" {
            "args"
        } else {
            "texts"
        })
        .map(|a| a.elements().collect())
        .unwrap_or_default();
    let dts: Vec<i64> = data
        .get("dt")
        .map(|a| a.elements().filter_map(|d| d.as_i64()).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut t = time;
    for (k, piece) in pieces.iter().enumerate() {
        if k > 0 {
            t += dts.get(k - 1).copied().unwrap_or(0);
        }
        let piece = String::from_utf8_lossy(piece.bytes());
        let chunk = if kind == "tool-call-delta" {
            let mut name = String::new();
            if let Some(n) = raw("name") {
                name = format!(",\"name\":{n}");
            }
            format!(
                r#"{{"type":"tool-call-delta","index":{index},"id":{}{name},"argumentsDelta":{piece}}}"#,
                raw("id").unwrap_or_default()
            )
        } else {
            format!(r#"{{"type":"{kind}","index":{index},"text":{piece}}}"#)
        };
        let data = format!(r#"{{"turn":{turn},"step":{step},"chunk":{chunk}}}"#);
        out.push(Ok(Event::new(
            "assistant/chunk",
            seq + k as u64,
            t,
            data.into_bytes(),
        )));
    }
    out
}

/// `{"type":T,<rest>}` -> `{"type":T,"seq":S,"time":M,<rest>}`.
fn insert_seq_time(line: &[u8], seq: u64, time: i64) -> Vec<u8> {
    let row = JsonRef::new(line);
    let mut out = b"{".to_vec();
    let mut first = true;
    for (key, value) in row.members() {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(key.bytes());
        out.push(b':');
        out.extend_from_slice(value.bytes());
        if key.str_eq("type") {
            out.extend_from_slice(format!(",\"seq\":{seq},\"time\":{time}").as_bytes());
        }
    }
    out.push(b'}');
    out
}

/// A fixture as the renumbered DSH file it stands for: `{{cwd}}` replaced, every event line
/// given `seq` and `time` right after its `type`, every packed row `seq0` and `time0`.
///
/// # Panics
/// On an unreadable fixture.
pub fn renumbered_text(name: &str) -> String {
    let text = fixture_text(name);
    let mut lines = text.lines();
    let mut out = String::new();
    out.push_str(lines.next().unwrap_or_default());
    out.push('\n');
    let mut seq = 0u64;
    for line in lines {
        let row = JsonRef::new(line.as_bytes());
        let ty = row
            .get("type")
            .and_then(|t| t.as_str())
            .unwrap_or_default()
            .into_owned();
        let time = FIXTURE_TIME0 + 10 * seq as i64;
        let packed = ty.ends_with("-chunks");
        let (names, count) = if packed {
            let data = row.get("data");
            let pieces = data
                .and_then(|d| d.get("texts").or_else(|| d.get("args")))
                .map_or(0, |a| a.elements().count());
            (("seq0", "time0"), pieces as u64)
        } else {
            (("seq", "time"), 1)
        };
        let mut first = true;
        out.push('{');
        for (key, value) in row.members() {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&String::from_utf8_lossy(key.bytes()));
            out.push(':');
            out.push_str(&String::from_utf8_lossy(value.bytes()));
            if key.str_eq("type") {
                out.push_str(&format!(",\"{}\":{seq},\"{}\":{time}", names.0, names.1));
            }
        }
        out.push_str("}\n");
        seq += count;
    }
    out
}

/// The `n`-th (from 1) fenced ```` ```sql ```` block after `heading` in a document (the
/// DDL and example queries the tests check against the code).
///
/// # Panics
/// When the heading or the block is missing: the document changed under the test.
pub fn sql_block<'a>(doc: &'a str, heading: &str, n: usize) -> &'a str {
    doc.split(heading)
        .nth(1)
        .and_then(|s| s.split("```sql").nth(n))
        .and_then(|s| s.split("```").next())
        .unwrap_or_else(|| panic!("no sql block {n} after {heading:?}"))
}

/// A JSON string literal for `s`.
pub fn json_string(s: &str) -> String {
    let mut out = Vec::new();
    write_str(&mut out, s);
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `bytes` is a JSON object (sanity helper for tests).
pub fn is_object(bytes: &[u8]) -> bool {
    JsonRef::new(bytes).kind() == JsonKind::Object
}

/// Every live session of a store: id, events as JSONL lines, derived state.
pub type StoreDump = Vec<(String, Vec<Vec<u8>>, SessionState)>;

/// A whole-store snapshot for comparisons.
///
/// # Panics
/// On read errors: a test helper.
pub fn dump_store(store: &Store) -> StoreDump {
    try_dump_store(store).unwrap_or_else(|e| panic!("{e}"))
}

/// [`dump_store`], or the first error a read gives.
///
/// # Errors
/// The first read that fails (a damaged checkpoint run is found on first use).
pub fn try_dump_store(store: &Store) -> sessdb::Result<StoreDump> {
    store
        .list()?
        .into_iter()
        .map(|i| {
            let id = i.header.id;
            let events = store.events(&id, ..)?.iter().map(Event::to_jsonl).collect();
            let state = store.state(&id)?;
            Ok((id, events, state))
        })
        .collect()
}

/// A store in memory with a fixed clock (time 1000), for format tests.
///
/// # Panics
/// Never in practice: opening an empty memory store cannot fail.
pub fn mem_store() -> Store {
    Store::open_with(
        Arc::new(MemStorage::new()),
        StoreOptions::default().with_clock(Clock::fixed(1_000)),
    )
    .unwrap_or_else(|e| panic!("memory store: {e}"))
}

/// Every session of `store` exported to raw JSONL under `root`: `(id, file bytes)`.
///
/// # Panics
/// On an export or read error: a test helper.
pub fn export_jsonl_files(
    store: &Store,
    root: &std::path::Path,
    options: &sessdb_formats::jsonl::ExportOptions,
) -> Vec<(String, Vec<u8>)> {
    let report = sessdb_formats::jsonl::export_jsonl(store, root, options)
        .unwrap_or_else(|e| panic!("export: {e}"));
    report
        .files
        .into_iter()
        .map(|(id, f)| {
            let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (id, bytes)
        })
        .collect()
}

/// Writes a fixture's renumbered text to a temp file and imports it into `store`; returns
/// the text and the report.
///
/// # Panics
/// On any error: a test helper.
pub fn import_fixture(store: &Store, name: &str) -> (String, sessdb_formats::jsonl::ImportReport) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("temp dir: {e}"));
    let input = dir.path().join("session.jsonl");
    let text = renumbered_text(name);
    std::fs::write(&input, &text).unwrap_or_else(|e| panic!("write: {e}"));
    let report = sessdb_formats::jsonl::import_jsonl(store, &input)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (text, report)
}
