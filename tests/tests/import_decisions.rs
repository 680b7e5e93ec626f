//! One rule, every importer (`docs/FORMATS.md` §1.1): the same sessions written into every
//! format sessdb imports — a JSONL file, a sessdb SQLite export (layout 1, whose surface op
//! is JSON text, and layout 3, whose op is columns) and a DSH database — are decided alike by
//! every importer: all import the same events, or all refuse.
//!
//! The sessions are DSH's 1,264 load cases (mostly mutated sessions, with what DSH's loader
//! decided). A case goes into a format when the format's columns can hold what its lines
//! say (a `seq` of `"3"` fits no INTEGER column; a `surfaceOp` with a fourth key fits no
//! layout-3 column but does fit layout 1's and DSH's JSON text); what only a JSONL file has
//! — a torn tail, lines that are no JSON, lines out of seq order — stays the JSONL reader's
//! and is not compared.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

#[path = "support/load_cases.rs"]
mod load_cases;

use std::path::Path;

use rusqlite::{Connection, params};
use sessdb::json::{JsonKind, JsonRef, validate};
use sessdb::{Event, Limits, Origin, SessionHeader, SurfaceOp};
use sessdb_formats::jsonl::import_jsonl;
use sessdb_formats::sqlite::{
    APPLICATION_ID, DDL, DDL_V1, DSH_APPLICATION_ID, DSH_DDL, DSH_SCHEMA_VERSION, SCHEMA_VERSION,
    SCHEMA_VERSION_V1, import_sqlite,
};
use sessdb_tests::mem_store;

/// One line of a case, read as DSH's loader reads it (after `JSON.parse`).
struct Row {
    /// The event type, or a packed row's tag.
    ty: String,
    /// `seq`, or a packed row's `seq0`.
    seq: u64,
    /// `time`, or `time0`.
    time: i64,
    /// `data`, exact.
    data: Vec<u8>,
    /// `sourceEventSeqs`, `surfaceOp`, `ignorable`: their exact JSON.
    sources: Option<Vec<u8>>,
    op: Option<Vec<u8>>,
    ignorable: Option<Vec<u8>>,
    /// `surfaceOp` came before `sourceEventSeqs`.
    op_first: bool,
    /// A packed chunk row.
    packed: bool,
    /// The line itself.
    line: Vec<u8>,
}

const PACKED: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// A case's header and rows, when every line is a JSON object whose envelope fields have
/// values a column can hold; `None` otherwise (a JSONL-only case).
fn rows_of(bytes: &[u8]) -> Option<(SessionHeader, Vec<Row>)> {
    let body = bytes.strip_suffix(b"\n")?;
    let mut lines = body.split(|&b| b == b'\n').map(<[u8]>::trim_ascii);
    let limits = Limits {
        max_depth: Limits::default().max_depth + 1,
        max_data_bytes: Limits::default().max_data_bytes * 2,
    };
    let header_line = lines.next()?;
    validate(header_line, &limits).ok()?;
    JsonRef::new(header_line).get("delegationDepth")?;
    let header = SessionHeader::from_json(header_line).ok()?;
    let mut rows = Vec::new();
    for line in lines {
        validate(line, &limits).ok()?;
        let v = JsonRef::new(line);
        if v.kind() != JsonKind::Object {
            return None;
        }
        let ty = v.get("type")?.as_str()?.into_owned();
        let packed = PACKED.contains(&ty.as_str());
        let (seq_key, time_key) = if packed {
            ("seq0", "time0")
        } else {
            ("seq", "time")
        };
        let allowed: &[&str] = if packed {
            &["type", "seq0", "time0", "data"]
        } else {
            &[
                "type",
                "seq",
                "time",
                "data",
                "sourceEventSeqs",
                "surfaceOp",
                "ignorable",
            ]
        };
        if !v
            .members()
            .all(|(k, _)| allowed.iter().any(|a| k.str_eq(a)))
        {
            return None;
        }
        let keys: Vec<String> = v
            .members()
            .filter_map(|(k, _)| k.as_str().map(|k| k.into_owned()))
            .collect();
        let first = |k: &str| keys.iter().position(|x| x == k);
        let raw = |k: &str| v.get(k).map(|x| x.bytes().to_vec());
        rows.push(Row {
            ty,
            seq: u64::try_from(v.get(seq_key)?.as_safe_integer()?).ok()?,
            time: v.get(time_key)?.as_safe_integer()?,
            data: raw("data")?,
            sources: raw("sourceEventSeqs"),
            op: raw("surfaceOp"),
            ignorable: raw("ignorable"),
            op_first: matches!((first("surfaceOp"), first("sourceEventSeqs")), (Some(a), Some(b)) if a < b),
            packed,
            line: line.to_vec(),
        });
    }
    Some((header, rows))
}

fn text(b: &[u8]) -> Option<String> {
    String::from_utf8(b.to_vec()).ok()
}

/// An optional JSON field as a TEXT column: `None` when it is not UTF-8.
fn opt_text(b: Option<&[u8]>) -> Option<Option<String>> {
    match b {
        None => Some(None),
        Some(b) => text(b).map(Some),
    }
}

/// `ignorable` as an INTEGER column holds it: `true` is 1, absent NULL; nothing else fits.
fn ignorable_column(raw: Option<&[u8]>) -> Option<Option<i64>> {
    match raw {
        None => Some(None),
        Some(b"true") => Some(Some(1)),
        Some(_) => None,
    }
}

fn insert_header(conn: &Connection, h: &SessionHeader, dsh: bool) {
    let origin = h.origin.map(|o| match o {
        Origin::Subagent => "subagent",
        _ => unreachable!("an origin this test does not write"),
    });
    let depth = i64::try_from(h.delegation_depth).unwrap();
    let seed = h.seed_length.map(|s| i64::try_from(s).unwrap());
    // DSH's table adds its incarnation and revision.
    let sql = if dsh {
        "INSERT INTO sessions VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'inc', 1)"
    } else {
        "INSERT INTO sessions VALUES (?1, 0, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
    };
    conn.execute(
        sql,
        params![
            h.id,
            h.created_at,
            h.cwd,
            h.parent_session,
            seed,
            origin,
            depth,
            h.agent_preset
        ],
    )
    .unwrap();
}

/// A fresh database of `ddl` with its identity.
fn database(file: &Path, ddl: &str, app: i32, version: i64) -> Connection {
    let conn = Connection::open(file).unwrap();
    // Test files: no syncs, no journal on disk.
    conn.execute_batch("PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY;")
        .unwrap();
    conn.execute_batch(ddl).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA application_id = {app}; PRAGMA user_version = {version};"
    ))
    .unwrap();
    conn
}

/// Every row as the scalar events a sessdb export holds (packed rows unpacked); `None` when a
/// packed row does not unpack (only the JSONL and DSH readers have packed rows).
fn scalar_events(rows: &[Row]) -> Option<Vec<(Option<&Row>, Event)>> {
    let mut out = Vec::new();
    for row in rows {
        if row.packed {
            for e in sessdb_formats::pack::unpack(&JsonRef::new(&row.line)).ok()? {
                out.push((None, e));
            }
        } else {
            out.push((
                Some(row),
                Event::new(row.ty.clone(), row.seq, row.time, row.data.clone()),
            ));
        }
    }
    Some(out)
}

/// The case as a sessdb export of layout 1 (surface op as JSON text).
fn write_v1(file: &Path, h: &SessionHeader, rows: &[Row]) -> Option<()> {
    let conn = database(file, DDL_V1, APPLICATION_ID, SCHEMA_VERSION_V1);
    insert_header(&conn, h, false);
    for (row, e) in scalar_events(rows)? {
        let (sources, op, ignorable, key_order) = match row {
            Some(r) => (
                opt_text(r.sources.as_deref())?,
                opt_text(r.op.as_deref())?,
                ignorable_column(r.ignorable.as_deref())?,
                (r.op_first && r.sources.is_some()).then_some(1),
            ),
            None => (None, None, None, None),
        };
        conn.execute(
            "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                h.id,
                i64::try_from(e.seq()).unwrap(),
                e.event_type(),
                e.time(),
                text(e.data())?,
                sources,
                op,
                ignorable,
                key_order
            ],
        )
        .ok()?;
    }
    Some(())
}

/// The case as a sessdb export of layout 3 (surface op as columns).
fn write_v3(file: &Path, h: &SessionHeader, rows: &[Row]) -> Option<()> {
    let conn = database(file, DDL, APPLICATION_ID, SCHEMA_VERSION);
    insert_header(&conn, h, false);
    for (row, e) in scalar_events(rows)? {
        let (sources, op, ignorable, key_order) = match row {
            Some(r) => (
                opt_text(r.sources.as_deref())?,
                match r.op.as_deref() {
                    None => None,
                    Some(op) => Some(op_columns(op)?),
                },
                ignorable_column(r.ignorable.as_deref())?,
                (r.op_first && r.sources.is_some()).then_some(1),
            ),
            None => (None, None, None, None),
        };
        let (op, start, end) = match op {
            None => (None, None, None),
            Some((op, range)) => (Some(op), range.map(|r| r.0), range.map(|r| r.1)),
        };
        let inherited =
            (h.parent_session.is_some() && e.seq() < h.seed_length.unwrap_or(0)).then_some(1);
        conn.execute(
            "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            params![
                h.id,
                i64::try_from(e.seq()).unwrap(),
                e.event_type(),
                e.time(),
                text(e.data())?,
                sources,
                op,
                start,
                end,
                ignorable,
                key_order,
                inherited
            ],
        )
        .ok()?;
    }
    Some(())
}

/// A `surfaceOp`'s JSON as layout 3's columns, when they can hold it: `"append"`, or an
/// object of exactly `op: "replace"` and two integers (any other value fits no column).
fn op_columns(op: &[u8]) -> Option<(&'static str, Option<(i64, i64)>)> {
    let v = JsonRef::new(op);
    if v.str_eq("append") {
        return Some(("append", None));
    }
    let keys: Vec<String> = v
        .members()
        .filter_map(|(k, _)| k.as_str().map(|k| k.into_owned()))
        .collect();
    if v.kind() != JsonKind::Object
        || !keys
            .iter()
            .all(|k| ["op", "start", "end"].contains(&k.as_str()))
        || !v.get("op")?.str_eq("replace")
    {
        return None;
    }
    let int = |k| v.get(k)?.as_safe_integer();
    Some(("replace", Some((int("start")?, int("end")?))))
}

/// The case as a DSH database: packed rows as DSH's packed rows, sources as its varint blob.
fn write_dsh(file: &Path, h: &SessionHeader, rows: &[Row]) -> Option<()> {
    let conn = database(file, DSH_DDL, DSH_APPLICATION_ID, DSH_SCHEMA_VERSION);
    conn.execute("INSERT INTO persistence_state VALUES (1, 'store')", [])
        .unwrap();
    insert_header(&conn, h, true);
    for r in rows {
        let data = text(&r.data)?;
        let seq = i64::try_from(r.seq).unwrap();
        if r.packed {
            conn.execute(
                "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, NULL, NULL, 0)",
                params![h.id, seq, r.ty, r.time, data],
            )
            .ok()?;
            continue;
        }
        let sources = match &r.sources {
            None => None,
            Some(raw) => {
                let v = JsonRef::new(raw);
                if v.kind() != JsonKind::Array {
                    return None;
                }
                let seqs = v
                    .elements()
                    .map(|s| u64::try_from(s.as_safe_integer()?).ok())
                    .collect::<Option<Vec<u64>>>()?;
                Some(varint_blob(&seqs))
            }
        };
        conn.execute(
            "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                h.id,
                seq,
                r.ty,
                r.time,
                data,
                sources,
                opt_text(r.op.as_deref())?,
                ignorable_column(r.ignorable.as_deref())?
            ],
        )
        .ok()?;
    }
    Some(())
}

/// DSH's `sourceEventSeqs` blob: the first seq as a varint, then ZigZag deltas.
fn varint_blob(seqs: &[u64]) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let mut out = Vec::new();
    let mut prev: Option<u64> = None;
    for &s in seqs {
        match prev {
            None => put(&mut out, s),
            Some(p) => {
                let d = s as i64 - p as i64;
                put(&mut out, ((d << 1) ^ (d >> 63)) as u64);
            }
        }
        prev = Some(s);
    }
    out
}

/// What an importer decided: the stored events (what DSH's loader keeps of them: no key
/// order, no packing hints), or the refusal.
type Decision = Result<
    Vec<(
        String,
        u64,
        i64,
        Vec<u8>,
        Option<Vec<u64>>,
        Option<SurfaceOp>,
        bool,
    )>,
    String,
>;

fn decision<T>(result: sessdb_formats::Result<T>, store: &sessdb::Store) -> Decision {
    result.map_err(|e| e.to_string())?;
    let info = store.list().unwrap();
    let id = &info[0].header.id;
    Ok(store
        .events(id, ..)
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.event_type().to_owned(),
                e.seq(),
                e.time(),
                e.data().to_vec(),
                e.sources().map(<[u64]>::to_vec),
                e.surface_op(),
                e.ignorable(),
            )
        })
        .collect())
}

#[test]
fn every_importer_decides_every_session_alike() {
    let dir = tempfile::tempdir().unwrap();
    let mut compared = [0usize; 3];
    let mut refused = [0usize; 3];
    let mut differ = Vec::new();
    for (n, case) in load_cases::cases().iter().enumerate() {
        let Some((header, rows)) = rows_of(&case.bytes) else {
            continue;
        };
        let jsonl = dir.path().join(format!("{n}.jsonl"));
        std::fs::write(&jsonl, &case.bytes).unwrap();
        let store = mem_store();
        let result = import_jsonl(&store, &jsonl);
        if result.as_ref().is_ok_and(|r| r.sessions[0].torn.is_some()) {
            continue; // a torn tail: the JSONL reader's alone
        }
        if rows.windows(2).any(|w| w[0].seq >= w[1].seq) {
            continue; // lines out of seq order: a database's rows have no other order
        }
        let expected = decision(result, &store);
        type Writer = fn(&Path, &SessionHeader, &[Row]) -> Option<()>;
        let writers: [(&str, Writer); 3] = [
            ("sessdb layout 1", write_v1),
            ("sessdb layout 3", write_v3),
            ("DSH schema 17", write_dsh),
        ];
        for (k, (layout, write)) in writers.into_iter().enumerate() {
            let file = dir.path().join(format!("{n}-{k}.sqlite"));
            if write(&file, &header, &rows).is_none() {
                continue; // the layout's columns cannot hold this case
            }
            let store = mem_store();
            let got = decision(import_sqlite(&store, &file), &store);
            compared[k] += 1;
            refused[k] += usize::from(got.is_err());
            if got.is_ok() != expected.is_ok() || (got.is_ok() && got != expected) {
                differ.push(format!(
                    "{} ({layout}): JSONL {:?}, SQLite {:?}",
                    case.name,
                    expected.as_ref().map(Vec::len),
                    got.as_ref().map(Vec::len)
                ));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
    // Most cases reach every layout, and both decisions occur in each: the test compares.
    // (On the code before the one pipeline, 8 comparisons differed: DSH's reader took a
    // surfaceOp with a fourth key, layouts 1 and 3 refused `2.0` among the sources and did
    // not migrate legacy shapes.)
    for k in 0..3 {
        assert!(compared[k] > 600, "layout {k}: {} compared", compared[k]);
        assert!(
            refused[k] > 150 && refused[k] + 300 < compared[k],
            "layout {k}: {} of {} refused",
            refused[k],
            compared[k]
        );
    }
}
