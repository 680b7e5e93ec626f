//! Listing the catalog in an order, up to a limit (`Store::list_by`): decoded sessions and
//! those still in the checkpoint's index alike, ordered by the fields the index's slots carry,
//! and only the sessions returned decoded (for the index's, transiently: a listing does not
//! make them resident).

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::Result;
use crate::codec::checkpoint::indexed::{entry_id, entry_row, id_hash};
use crate::model::SessionHeader;
use crate::store::catalog::entries::{Entries, SessionEntry};
use crate::store::info::{Direction, Incarnation, ListOptions, ListOrder, ListedRow, SessionInfo};

/// Where a live session is.
#[derive(Clone, Copy)]
enum Place<'a> {
    Decoded(&'a SessionEntry),
    /// A slot of the index.
    Indexed(usize),
}

/// A session as the listing orders it: its key in the order asked, then its id.
struct Row<'a> {
    key: i128,
    place: Place<'a>,
}

fn key_of(order: ListOrder, created_at: i64, last_time: Option<i64>, events: u64) -> i128 {
    match order {
        ListOrder::Id => 0,
        ListOrder::Created => i128::from(created_at),
        // No events first, as `None < Some`.
        ListOrder::Updated => last_time.map_or(i128::MIN, i128::from),
        ListOrder::Events => i128::from(events),
    }
}

/// The rows of every live session.
fn rows<'a>(cat: &'a Entries, order: ListOrder) -> Result<Vec<Row<'a>>> {
    let mut rows: Vec<Row<'a>> = Vec::with_capacity(cat.len());
    rows.extend(cat.sessions.values().map(|e| Row {
        key: key_of(
            order,
            e.header.created_at,
            e.state.last_time(),
            e.state.next_seq(),
        ),
        place: Place::Decoded(e),
    }));
    if let Some(cold) = cat.cold() {
        cold.each_untaken(|i, s| {
            rows.push(Row {
                key: key_of(order, s.created_at, s.last_time, s.next_seq),
                place: Place::Indexed(i),
            });
            Ok(())
        })?;
    }
    Ok(rows)
}

/// The live sessions `options` asks for: in its order (ties by id) from the end it names, at
/// most its limit.
///
/// # Errors
/// `Corruption` when an entry of the index that the listing reads is damaged.
pub(crate) fn list(cat: &Entries, options: ListOptions) -> Result<Vec<SessionInfo>> {
    select(cat, options)?
        .into_iter()
        .map(|place| info(cat, place))
        .collect()
}

/// As [`list`], each row handed to `f` with its header as the stored JSON line (parsed only
/// for a session the catalog has decoded): what a caller that writes the rows out as JSON
/// needs, without a header parsed and written again per session.
///
/// # Errors
/// As [`list`].
pub(crate) fn list_each(
    cat: &Entries,
    options: ListOptions,
    mut f: impl FnMut(&ListedRow<'_>),
) -> Result<()> {
    for place in select(cat, options)? {
        match place {
            Place::Decoded(e) => {
                let header_json = e.header.to_json();
                f(&ListedRow {
                    id: &e.header.id,
                    header_json: &header_json,
                    events: e.state.next_seq(),
                    last_time: e.state.last_time(),
                    turn_open: e.state.repair().turn_is_open(),
                    incarnation: Incarnation(e.created_lsn),
                });
            }
            Place::Indexed(i) => {
                let cold = cat.cold().ok_or_else(|| damaged(0, 0))?;
                let (slot, bytes) = cold.entry_bytes_of(i)?;
                let bad = || damaged(slot.generation, slot.entry_at);
                let id = entry_id(bytes).map_err(|_| bad())?;
                let row = entry_row(bytes).map_err(|_| bad())?;
                if id_hash(id) != slot.id_hash {
                    return Err(bad());
                }
                f(&ListedRow {
                    id,
                    header_json: row.header_json,
                    events: slot.next_seq,
                    last_time: slot.last_time,
                    turn_open: row.turn_open,
                    incarnation: Incarnation(row.created_lsn),
                });
            }
        }
    }
    Ok(())
}

fn damaged(generation: u64, at: u64) -> crate::Error {
    crate::Error::corruption(
        &crate::codec::checkpoint::checkpoint_path(generation),
        at,
        crate::codec::CorruptionKind::CheckpointEntry,
    )
}

/// Where the sessions `options` asks for are, in its order.
fn select(cat: &Entries, options: ListOptions) -> Result<Vec<Place<'_>>> {
    let directed = |o: Ordering| match options.direction {
        Direction::Ascending => o,
        Direction::Descending => o.reverse(),
    };
    let mut rows = rows(cat, options.order)?;
    // The rows that can be among the first `n`: those before the n-th key, and all of its
    // ties (their ids decide); ids are read for these only.
    if let Some(n) = options.limit
        && n < rows.len()
        && options.order != ListOrder::Id
    {
        if n == 0 {
            return Ok(Vec::new());
        }
        let (_, nth, _) = rows.select_nth_unstable_by(n - 1, |a, b| directed(a.key.cmp(&b.key)));
        let bound = nth.key;
        rows.retain(|r| directed(r.key.cmp(&bound)) != Ordering::Greater);
    }
    fn id_of<'a>(cat: &'a Entries, place: Place<'a>) -> Result<Cow<'a, str>> {
        match (place, cat.cold()) {
            (Place::Decoded(e), _) => Ok(Cow::Borrowed(e.header.id.as_str())),
            (Place::Indexed(i), Some(cold)) => cold.id(i).map(Cow::Borrowed),
            (Place::Indexed(_), None) => Err(damaged(0, 0)),
        }
    }
    let mut named: Vec<(i128, Cow<'_, str>, Place<'_>)> = rows
        .into_iter()
        .map(|r| Ok((r.key, id_of(cat, r.place)?, r.place)))
        .collect::<Result<_>>()?;
    let by = |a: &(i128, Cow<'_, str>, Place<'_>), b: &(i128, Cow<'_, str>, Place<'_>)| {
        directed(a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
    };
    match options.limit {
        Some(n) if n < named.len() => {
            if n > 0 {
                named.select_nth_unstable_by(n - 1, by);
            }
            named.truncate(n);
        }
        _ => {}
    }
    named.sort_unstable_by(by);
    Ok(named.into_iter().map(|(_, _, place)| place).collect())
}

/// One session's row: copied from a decoded session, decoded from the index for the others.
fn info(cat: &Entries, place: Place<'_>) -> Result<SessionInfo> {
    match (place, cat.cold()) {
        (Place::Decoded(e), _) => Ok(info_of(e)),
        (Place::Indexed(_), None) => Err(damaged(0, 0)),
        (Place::Indexed(i), Some(cold)) => {
            let (slot, bytes) = cold.entry_bytes_of(i)?;
            let bad = || damaged(slot.generation, slot.entry_at);
            let row = entry_row(bytes).map_err(|_| bad())?;
            let header = SessionHeader::from_json(row.header_json).map_err(|_| bad())?;
            if id_hash(&header.id) != slot.id_hash {
                return Err(bad());
            }
            Ok(SessionInfo {
                header,
                events: slot.next_seq,
                surface_len: row.surface_len,
                last_time: slot.last_time,
                turn_open: row.turn_open,
                incarnation: Incarnation(row.created_lsn),
            })
        }
    }
}

/// A decoded session's row of a listing.
pub(crate) fn info_of(e: &SessionEntry) -> SessionInfo {
    SessionInfo {
        header: e.header.clone(),
        events: e.state.next_seq(),
        surface_len: e.state.surface().seqs().len(),
        last_time: e.state.last_time(),
        turn_open: e.state.repair().turn_is_open(),
        incarnation: Incarnation(e.created_lsn),
    }
}
