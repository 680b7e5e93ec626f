//! Pulling sessions from PostgreSQL into a store (`docs/FORMATS.md` §4.3): read back as
//! events, imported through the one pipeline every importer uses (so validated by the
//! acceptance function, incremental and idempotent), then owned by the pulling store.

use std::path::Path;

use postgres::Client;
use sessdb::event::envelope;
use sessdb::{Event, SessionHeader, Store, SurfaceOp};
use sessdb_formats::{ImportReport, SourceSession, import_sessions};

use crate::{Error, Result, schema};

/// Brings `ids` (and the parents their forks need, first) from PostgreSQL into `store`,
/// then makes `store_id` their owner: the shipper of the store they came from stops shipping
/// them, this store's ships them from here on.
///
/// # Errors
/// `NotFound` for an id PostgreSQL does not hold, `BadRow`, the import's refusals (nothing
/// is stored then, and ownership stays), PostgreSQL and store errors.
pub fn pull(
    client: &mut Client,
    store: &Store,
    store_id: &str,
    ids: &[String],
) -> Result<ImportReport> {
    schema::ensure(client)?;
    // Parents before their forks, each once.
    let mut order: Vec<String> = Vec::new();
    for id in ids {
        let mut chain = vec![id.clone()];
        let mut at = id.clone();
        while let Some(parent) = parent_of(client, &at)? {
            if chain.contains(&parent) {
                break;
            }
            chain.push(parent.clone());
            at = parent;
        }
        for s in chain.into_iter().rev() {
            if !order.contains(&s) {
                order.push(s);
            }
        }
    }
    let mut sessions = Vec::with_capacity(order.len());
    for id in &order {
        sessions.push(read_session(client, id)?);
    }
    let report = import_sessions(store, Path::new("postgres"), sessions)?;
    let mut tx = client
        .transaction()
        .map_err(Error::pg("begin a transaction"))?;
    tx.execute(
        "INSERT INTO sessdb_stores (store_id) VALUES ($1) ON CONFLICT DO NOTHING",
        &[&store_id],
    )
    .map_err(Error::pg("register the store"))?;
    tx.execute(
        "UPDATE sessdb_sessions SET owner_store = $1, store_created_lsn = NULL WHERE id = ANY($2)",
        &[&store_id, &order],
    )
    .map_err(Error::pg("move the sessions' ownership"))?;
    tx.commit().map_err(Error::pg("commit"))?;
    Ok(report)
}

fn parent_of(client: &mut Client, id: &str) -> Result<Option<String>> {
    let row = client
        .query_opt(
            "SELECT parent_session FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .map_err(Error::pg("read a session"))?
        .ok_or_else(|| Error::NotFound(id.to_owned()))?;
    Ok(row.get(0))
}

/// One session as PostgreSQL holds it: the exact header line, the events rebuilt from their
/// columns (`data_text` exact).
fn read_session(client: &mut Client, id: &str) -> Result<SourceSession> {
    let row = client
        .query_opt(
            "SELECT header_json, events FROM sessdb_sessions WHERE id = $1",
            &[&id],
        )
        .map_err(Error::pg("read a session"))?
        .ok_or_else(|| Error::NotFound(id.to_owned()))?;
    let header_json: String = row.get(0);
    let shipped: i64 = row.get(1);
    let header = SessionHeader::from_json(header_json.as_bytes())?;
    let rows = client
        .query(
            "SELECT seq, type, time, data_text, source_event_seqs, surface_op, replace_start, replace_end, ignorable, key_order
             FROM sessdb_events WHERE session_id = $1 AND seq < $2 ORDER BY seq",
            &[&id, &shipped],
        )
        .map_err(Error::pg("read a session's events"))?;
    let mut events = Vec::with_capacity(rows.len());
    for r in &rows {
        let seq: i64 = r.get(0);
        let bad = |problem: &str| Error::BadRow {
            session: id.to_owned(),
            seq,
            problem: problem.to_owned(),
        };
        let seq_u = envelope::checked_seq(seq).ok_or_else(|| bad("seq out of range"))?;
        if seq_u != events.len() as u64 {
            return Err(bad("seqs do not follow one another"));
        }
        let time = envelope::checked_time(r.get(2)).ok_or_else(|| bad("time out of range"))?;
        let data: String = r.get(3);
        let sources: Option<Vec<i64>> = r.get(4);
        let sources = sources
            .map(|v| {
                v.into_iter()
                    .map(envelope::checked_seq)
                    .collect::<Option<Vec<u64>>>()
            })
            .map(|v| v.ok_or_else(|| bad("a source seq out of range")))
            .transpose()?;
        let op = match (
            r.get::<_, Option<String>>(5).as_deref(),
            r.get::<_, Option<i64>>(6),
            r.get::<_, Option<i64>>(7),
        ) {
            (None, None, None) => None,
            (Some("append"), None, None) => Some(SurfaceOp::Append),
            (Some("replace"), Some(start), Some(end)) => Some(SurfaceOp::Replace {
                start: envelope::checked_seq(start).ok_or_else(|| bad("replace_start"))?,
                end: envelope::checked_seq(end).ok_or_else(|| bad("replace_end"))?,
            }),
            _ => return Err(bad("surface_op and its range do not go together")),
        };
        let event = Event::new(r.get::<_, String>(1), seq_u, time, data.into_bytes())
            .with_sources_opt(sources.map(Into::into))
            .with_surface_op_opt(op)
            .with_ignorable(r.get(8));
        let both = event.sources().is_some() && event.surface_op().is_some();
        events.push(event.with_surface_op_first(r.get::<_, bool>(9) && both));
    }
    if events.len() as u64 != shipped.unsigned_abs() {
        return Err(Error::BadRow {
            session: id.to_owned(),
            seq: events.len() as i64,
            problem: format!("{shipped} events shipped, {} rows held", events.len()),
        });
    }
    Ok(SourceSession { header, events })
}
