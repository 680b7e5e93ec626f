//! DSH's own SQLite databases, read (`docs/FORMATS.md` §3.4): schema 17 of DSH's SQLite
//! backend (application id `DSHP`), one database for all sessions, chunk runs packed per
//! write batch into rows tagged `text-chunks` / `reasoning-chunks` / `tool-call-chunks`, large
//! `data` stored as a zstd frame, `sourceEventSeqs` as varints.

use std::io::Read;
use std::path::Path;

use rusqlite::Connection;
use sessdb::event::envelope;
use sessdb::json::{JsonRef, validate};
use sessdb::{Event, Limits, MAX_SAFE_INTEGER, Origin, PackHint, SessionHeader, SurfaceOp};

use super::listing::sessions_and_progress;
use super::schema::{input_err, reference_objects, schema_objects};
use crate::admit::{Places, admit};
use crate::pack::{TOO_MANY_PIECES, mark_row_start, unpack_parts};
use crate::report::ImportReport;
use crate::target::RestoreTarget;
use crate::{Error, Progress, Result};

/// `PRAGMA application_id` of DSH's databases: ASCII `DSHP`.
pub const DSH_APPLICATION_ID: i32 = 0x4453_4850;

/// `PRAGMA user_version` of the DSH schema sessdb reads.
pub const DSH_SCHEMA_VERSION: i64 = 17;

/// DSH's schema 17, as its backend creates it.
pub const DSH_DDL: &str = "CREATE TABLE persistence_state (
  singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
  store_id  TEXT NOT NULL
) STRICT;
CREATE TABLE sessions (
  id               TEXT PRIMARY KEY,
  version          INTEGER NOT NULL,
  created_at       INTEGER NOT NULL,
  cwd              TEXT,
  parent_session   TEXT,
  seed_length      INTEGER,
  origin           TEXT,
  delegation_depth INTEGER,
  agent_preset     TEXT,
  incarnation      TEXT NOT NULL,
  revision         INTEGER NOT NULL
) STRICT;
CREATE TABLE events (
  session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq               INTEGER NOT NULL,
  type              TEXT NOT NULL,
  time              INTEGER NOT NULL,
  data              ANY NOT NULL,
  source_event_seqs ANY,
  surface_op        TEXT,
  ignorable         INTEGER CHECK (ignorable IS NULL OR ignorable IN (0, 1)),
  PRIMARY KEY (session_id, seq)
) STRICT;";

/// The packed-row tags (`ignorable = 0` marks a row as packed).
const ROW_TYPES: [&str; 3] = ["text-chunks", "reasoning-chunks", "tool-call-chunks"];

/// A zstd-compressed `data` expands to at most this (a packed row holds ≤ 1 MiB of JSON, an
/// event's `data` at most the default data limit).
const MAX_DATA: u64 = Limits::DEFAULT_MAX_DATA_BYTES as u64;

/// Imports every session of a DSH schema-17 database through `store` (a dry run or the
/// store), as DSH's loader would read them; each session whole or not at all.
pub(super) fn import_into(
    store: &dyn RestoreTarget,
    conn: &Connection,
    file: &Path,
    progress: &mut dyn FnMut(Progress),
) -> Result<ImportReport> {
    let err = input_err(file);
    let found = schema_objects(conn, file)?;
    let reference = reference_objects(DSH_DDL)?;
    if found != reference {
        return Err(Error::UnsupportedFormat {
            file: file.to_owned(),
            found: "a DSH database whose schema differs from schema 17".into(),
            expected: "DSH's SQLite schema 17 exactly".into(),
        });
    }
    let (ids, mut done) = sessions_and_progress(conn, &err)?;
    let mut report = ImportReport::default();
    for id in ids {
        let (header_rowid, header) = read_header(conn, file, &id)?;
        let (events, rowids) = read_events(conn, file, &id)?;
        let rows = rowids.len() as u64;
        let places = Places::Rows {
            header: header_rowid,
            events: &rowids,
        };
        report
            .sessions
            .push(admit(store, file, header, events, places)?);
        done.events_done += rows;
        progress(done);
    }
    Ok(report)
}

fn invalid(file: &Path, table: &'static str, rowid: i64, problem: String) -> Error {
    Error::InvalidRow {
        file: file.to_owned(),
        table,
        rowid,
        source: sessdb::Error::InvalidEnvelope { seq: None, problem },
    }
}

fn read_header(conn: &Connection, file: &Path, id: &str) -> Result<(i64, SessionHeader)> {
    let (rowid, version, header) = conn
        .query_row(
            "SELECT rowid, version, created_at, cwd, parent_session, seed_length, origin, delegation_depth, agent_preset FROM sessions WHERE id = ?1",
            [id],
            |r| {
                let mut h = SessionHeader::new(id, r.get(2)?);
                h.cwd = r.get(3)?;
                h.parent_session = r.get(4)?;
                h.seed_length = r.get::<_, Option<i64>>(5)?.map(i64::unsigned_abs);
                h.origin = match r.get::<_, Option<String>>(6)?.as_deref() {
                    Some("subagent") => Some(Origin::Subagent),
                    _ => None,
                };
                h.delegation_depth = r.get::<_, Option<i64>>(7)?.unwrap_or(0).unsigned_abs();
                h.agent_preset = r.get(8)?;
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, h))
            },
        )
        .map_err(input_err(file))?;
    if version != 0 {
        return Err(Error::UnsupportedFormat {
            file: file.to_owned(),
            found: format!("session {id:?} of format version {version}"),
            expected: "version 0".into(),
        });
    }
    Ok((rowid, header))
}

/// A session's events in seq order, packed rows expanded, with each event's row id.
fn read_events(conn: &Connection, file: &Path, id: &str) -> Result<(Vec<Event>, Vec<i64>)> {
    let err = input_err(file);
    let mut stmt = conn
        .prepare(
            "SELECT rowid, seq, type, time, data, source_event_seqs, surface_op, ignorable FROM events WHERE session_id = ?1 ORDER BY seq",
        )
        .map_err(&err)?;
    let mut rows = stmt.query([id]).map_err(&err)?;
    let (mut events, mut rowids) = (Vec::new(), Vec::new());
    while let Some(r) = rows.next().map_err(&err)? {
        let rowid: i64 = r.get(0).map_err(&err)?;
        let decoded = decode_row(r).map_err(|p| invalid(file, "events", rowid, p))?;
        for e in decoded {
            if e.seq() != events.len() as u64 {
                return Err(invalid(
                    file,
                    "events",
                    rowid,
                    format!("seq gap: expected seq {}, found {}", events.len(), e.seq()),
                ));
            }
            events.push(e);
            rowids.push(rowid);
        }
    }
    Ok((events, rowids))
}

/// One row: a packed row (its events) or one event.
fn decode_row(r: &rusqlite::Row<'_>) -> std::result::Result<Vec<Event>, String> {
    let col = |e: rusqlite::Error| format!("unreadable column: {e}");
    let seq: i64 = r.get(1).map_err(col)?;
    let seq = envelope::checked_seq(seq).ok_or("seq must be a non-negative safe integer")?;
    let ty: String = r.get(2).map_err(col)?;
    let time: i64 = r.get(3).map_err(col)?;
    let time = envelope::checked_time(time).ok_or("time must be a safe integer")?;
    let data = data_bytes(r.get_ref(4).map_err(col)?)?;
    let ignorable: Option<i64> = r.get(7).map_err(col)?;
    if ignorable == Some(0) {
        // The physical discriminator of a packed row.
        if !ROW_TYPES.contains(&ty.as_str()) {
            return Err(format!("ignorable 0 on a row of type {ty:?}"));
        }
        validate(&data, &Limits::default()).map_err(|e| format!("packed row data: {e}"))?;
        let events = unpack_parts(&ty, seq, time, &JsonRef::new(&data)).map_err(|e| {
            if e == TOO_MANY_PIECES {
                e.to_owned()
            } else {
                format!("malformed packed row: {e}")
            }
        })?;
        // DSH packed this run in one write batch: the JSONL export keeps the row.
        return Ok(mark_row_start(events));
    }
    let mut event = Event::with_type_name(&ty, seq, time, data);
    let sources = r.get_ref(5).map_err(col)?;
    match sources {
        rusqlite::types::ValueRef::Null => {}
        rusqlite::types::ValueRef::Blob(b) => event = event.with_sources(decode_sources(b)?),
        _ => return Err("source_event_seqs must be a blob".into()),
    }
    let op: Option<String> = r.get(6).map_err(col)?;
    if let Some(op) = op {
        event = event.with_surface_op(
            SurfaceOp::from_json_text(op.as_bytes()).map_err(|e| format!("surface_op: {e}"))?,
        );
    }
    match ignorable {
        None => {}
        Some(1) => event = event.with_ignorable(true),
        Some(other) => return Err(format!("ignorable {other}")),
    }
    // A chunk DSH stored as a row of its own stays a line of its own in a JSONL export.
    if event.event_type() == "assistant/chunk" {
        event = event.with_pack_hint(PackHint::Lone);
    }
    Ok(vec![event])
}

/// `data`: JSON text, or a zstd frame of it (DSH compresses 4 KiB and more when smaller).
fn data_bytes(v: rusqlite::types::ValueRef<'_>) -> std::result::Result<Vec<u8>, String> {
    match v {
        rusqlite::types::ValueRef::Text(t) => Ok(t.to_vec()),
        rusqlite::types::ValueRef::Blob(b) => {
            let mut out = Vec::new();
            zstd::stream::read::Decoder::new(b)
                .map_err(|e| format!("data: zstd: {e}"))?
                .take(MAX_DATA + 1)
                .read_to_end(&mut out)
                .map_err(|e| format!("data: zstd: {e}"))?;
            if out.len() as u64 > MAX_DATA {
                return Err(format!("data expands past {MAX_DATA} bytes"));
            }
            Ok(out)
        }
        _ => Err("data must be text or a zstd blob".into()),
    }
}

/// DSH's `sourceEventSeqs` blob: the first seq as an unsigned varint (7 bits a byte, low
/// first), each next one as the ZigZag-encoded difference from the previous, varint; empty is
/// `[]`. Non-canonical varints, varints over 56 bits and values outside the safe range are
/// refused, as DSH refuses them.
fn decode_sources(mut b: &[u8]) -> std::result::Result<Vec<u64>, String> {
    let mut out: Vec<u64> = Vec::new();
    while !b.is_empty() {
        let (v, used) = varint(b)?;
        b = b.get(used..).unwrap_or_default();
        let value = match out.last() {
            None => i128::from(v),
            Some(&prev) => {
                let delta =
                    i128::from(v >> 1) * if v & 1 == 1 { -1 } else { 1 } - i128::from(v & 1);
                i128::from(prev) + delta
            }
        };
        let value = u64::try_from(value)
            .ok()
            .filter(|v| *v <= MAX_SAFE_INTEGER.unsigned_abs())
            .ok_or("source_event_seqs: a seq outside the safe range")?;
        out.push(value);
    }
    Ok(out)
}

/// [`decode_sources`]'s encoding: what DSH's backend writes.
pub(crate) fn encode_sources(seqs: &[u64]) -> Vec<u8> {
    fn put(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let low = u8::try_from(v & 0x7f).unwrap_or(0);
            v >>= 7;
            if v == 0 {
                out.push(low);
                return;
            }
            out.push(low | 0x80);
        }
    }
    let mut out = Vec::with_capacity(seqs.len() * 2);
    let mut prev: Option<i128> = None;
    for &s in seqs {
        let s = i128::from(s);
        match prev {
            None => put(&mut out, u64::try_from(s).unwrap_or(0)),
            Some(p) => {
                let d = s - p;
                let zigzag = if d >= 0 { d * 2 } else { -d * 2 - 1 };
                put(&mut out, u64::try_from(zigzag).unwrap_or(0));
            }
        }
        prev = Some(s);
    }
    out
}

/// One canonical varint of at most 8 bytes (56 bits); returns it and its length.
fn varint(b: &[u8]) -> std::result::Result<(u64, usize), String> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(8) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            if byte == 0 && i > 0 {
                return Err("source_event_seqs: a non-canonical varint".into());
            }
            return Ok((v, i + 1));
        }
    }
    Err("source_event_seqs: a varint cut short or over 56 bits".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(seqs: &[u64]) -> Vec<u8> {
        fn put(out: &mut Vec<u8>, mut v: u64) {
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(byte);
                    return;
                }
                out.push(byte | 0x80);
            }
        }
        let mut out = Vec::new();
        for (i, &s) in seqs.iter().enumerate() {
            if i == 0 {
                put(&mut out, s);
            } else {
                let d = i64::try_from(s).unwrap() - i64::try_from(seqs[i - 1]).unwrap();
                put(&mut out, ((d << 1) ^ (d >> 63)) as u64);
            }
        }
        out
    }

    #[test]
    fn sources_encode_as_the_reader_decodes() {
        for seqs in [vec![], vec![0], vec![9, 3, 3_000_000, 4], vec![300, 2]] {
            assert_eq!(encode_sources(&seqs), encode(&seqs), "{seqs:?}");
            assert_eq!(decode_sources(&encode_sources(&seqs)).unwrap(), seqs);
        }
    }

    #[test]
    fn sources_varints_decode_as_dsh_encodes_them() {
        for seqs in [
            vec![],
            vec![0],
            vec![5, 6, 7],
            vec![300, 2, 1_000_000, 1_000_001, 0],
            vec![MAX_SAFE_INTEGER.unsigned_abs()],
        ] {
            assert_eq!(decode_sources(&encode(&seqs)).unwrap(), seqs, "{seqs:?}");
        }
        // Hand-made: 300 = ac 02; then -298 zigzag 595 = d3 04.
        assert_eq!(decode_sources(&[0xac, 0x02, 0xd3, 0x04]).unwrap(), [300, 2]);
        // Non-canonical (a trailing zero group), cut short, over 56 bits, below zero.
        assert!(decode_sources(&[0x80, 0x00]).is_err());
        assert!(decode_sources(&[0x80]).is_err());
        assert!(decode_sources(&[0xff; 9]).is_err());
        assert!(decode_sources(&[0x01, 0x05]).is_err());
    }
}
