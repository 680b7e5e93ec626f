//! Listing the catalog in an order, up to a limit (`Store::list_by`): decoded sessions and
//! those still in the checkpoint's index alike, ordered by the fields the index's slots carry,
//! and only the sessions returned decoded (for the index's, transiently: a listing does not
//! make them resident).

use std::cmp::Ordering;

use crate::Result;
use crate::codec::checkpoint::indexed::{EntryForm, Slot, entry_id, entry_row, id_hash};
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
        ListOrder::Stored => 0,
    }
}

/// Hands `f` the row of every live session.
fn each_row<'a>(cat: &'a Entries, order: ListOrder, mut f: impl FnMut(Row<'a>)) -> Result<()> {
    for e in cat.sessions.values() {
        f(Row {
            key: key_of(
                order,
                e.header.created_at,
                e.state.last_time(),
                e.state.next_seq(),
            ),
            place: Place::Decoded(e),
        });
    }
    if let Some(cold) = cat.cold() {
        cold.each_untaken(|i, s| {
            f(Row {
                key: key_of(order, s.created_at, s.last_time, s.next_seq),
                place: Place::Indexed(i),
            });
            Ok(())
        })?;
    }
    Ok(())
}

/// The rows of every live session.
fn rows<'a>(cat: &'a Entries, order: ListOrder) -> Result<Vec<Row<'a>>> {
    let mut rows: Vec<Row<'a>> = Vec::with_capacity(cat.len());
    each_row(cat, order, |r| rows.push(r))?;
    Ok(rows)
}

/// The rows that can be among the first `n` (`n` > 0) of a keyed order: the `n` with the
/// smallest ranks and every tie of the largest of them (the ids decide among ties), kept as
/// they are read ([`FirstN`]). Collecting every row first cost 32 bytes a session whatever
/// the limit (32 MB for `ls -n 20` of a million), and a freed block that large raised the
/// allocator's threshold for returning memory: the reads after a listing kept ~0.5 MB more
/// of heap (`docs/PERFORMANCE.md`, 2026-12-05).
fn first_rows<'a>(cat: &'a Entries, options: ListOptions, n: usize) -> Result<Vec<Row<'a>>> {
    debug_assert!(n > 0 && options.order != ListOrder::Id);
    // The first rows of the order asked have the smallest ranks (`!key` reverses an order
    // without overflow).
    let direction = options.direction;
    let rank = move |row: &Row<'_>| match direction {
        Direction::Ascending => row.key,
        Direction::Descending => !row.key,
    };
    let mut first = FirstN::new(n, MIN_ROOM, cat.len(), rank);
    each_row(cat, options.order, |row| first.push(row))?;
    Ok(first.finish())
}

/// The items of the `n` smallest ranks and every tie of the largest of them, kept as items
/// come. Items go into a buffer of a few times `n`; a full buffer is cut to its first `n`
/// and their ties by a linear selection, whose bound then turns away every later item ranked
/// after it with one comparison. (A binary heap of `n` took 190 µs against 128 µs for the
/// newest 20 of 11,765 sessions, which arrive oldest first: each replaced the heap's top.)
struct FirstN<T, R> {
    n: usize,
    rows: Vec<T>,
    /// Items held before the next cut.
    room: usize,
    /// The rank of the n-th item kept at the last cut: items ranked after it are out.
    bound: Option<i128>,
    rank: R,
}

/// The smallest buffer of [`FirstN`]: 32 KB of listing rows, well under the allocator's
/// threshold.
const MIN_ROOM: usize = 1024;

impl<T, R: Fn(&T) -> i128> FirstN<T, R> {
    /// For the first `n` (> 0) of up to `total` items, cut at `min_room` items at least.
    fn new(n: usize, min_room: usize, total: usize, rank: R) -> Self {
        let room = n.saturating_mul(4).max(min_room);
        Self {
            n,
            rows: Vec::with_capacity(room.min(total)),
            room,
            bound: None,
            rank,
        }
    }

    fn push(&mut self, item: T) {
        if self.bound.is_some_and(|b| (self.rank)(&item) > b) {
            return;
        }
        self.rows.push(item);
        if self.rows.len() >= self.room {
            self.cut();
            // Ties of the bound are all kept: room for as many again before the next cut.
            self.room = self.room.max(self.rows.len().saturating_mul(2));
        }
    }

    /// Keeps the `n` smallest ranks and the ties of the n-th.
    fn cut(&mut self) {
        if self.rows.len() <= self.n {
            return;
        }
        let rank = &self.rank;
        let (_, nth, _) = self
            .rows
            .select_nth_unstable_by_key(self.n - 1, |r| rank(r));
        let b = rank(nth);
        self.rows.retain(|r| rank(r) <= b);
        self.bound = Some(b);
    }

    /// The items kept: those of the `n` smallest ranks and every tie of the n-th.
    fn finish(mut self) -> Vec<T> {
        self.cut();
        self.rows
    }
}

/// The live sessions `options` asks for: in its order (ties by id) from the end it names, at
/// most its limit.
///
/// # Errors
/// `Corruption` when an entry of the index that the listing reads is damaged.
pub(crate) fn list(cat: &Entries, options: ListOptions) -> Result<Vec<SessionInfo>> {
    select(cat, options)?.into_iter().map(info).collect()
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
    if options.order == ListOrder::Stored && options.direction == Direction::Ascending {
        // No order to make: each row handed over as it is read, nothing collected (the rows
        // of 100,000 sessions collected first were 13 MB of fresh pages per listing).
        let mut left = options.limit.unwrap_or(usize::MAX);
        for e in cat.sessions.values() {
            if left == 0 {
                return Ok(());
            }
            left -= 1;
            emit(Picked::Decoded(e), &mut f)?;
        }
        if let Some(cold) = cat.cold() {
            cold.each_untaken(|i, slot| {
                if left == 0 {
                    return Ok(());
                }
                left -= 1;
                emit(
                    picked_slot(slot, cold.entry_bytes_at(i, &slot)?, cold.form())?,
                    &mut f,
                )
            })?;
        }
        return Ok(());
    }
    for picked in select(cat, options)? {
        emit(picked, &mut f)?;
    }
    Ok(())
}

/// Hands one row to `f`.
fn emit(picked: Picked<'_>, f: &mut impl FnMut(&ListedRow<'_>)) -> Result<()> {
    match picked {
        Picked::Decoded(e) => {
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
        Picked::Indexed {
            slot,
            id,
            bytes,
            form,
        } => {
            let row =
                entry_row(form, bytes).map_err(|_| damaged(slot.generation, slot.entry_at))?;
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
    Ok(())
}

fn damaged(generation: u64, at: u64) -> crate::Error {
    crate::Error::corruption(
        &crate::codec::checkpoint::checkpoint_path(generation),
        at,
        crate::codec::CorruptionKind::CheckpointEntry,
    )
}

/// A session a listing returns: decoded, or a slot of the index with its entry's bytes
/// (checked against the slot's CRC once) and the id read from them.
enum Picked<'a> {
    Decoded(&'a SessionEntry),
    Indexed {
        slot: Slot,
        id: &'a str,
        bytes: &'a [u8],
        /// How its file holds the arrays.
        form: EntryForm,
    },
}

impl Picked<'_> {
    fn id(&self) -> &str {
        match self {
            Picked::Decoded(e) => &e.header.id,
            Picked::Indexed { id, .. } => id,
        }
    }
}

/// The sessions `options` asks for, in its order.
fn select(cat: &Entries, options: ListOptions) -> Result<Vec<Picked<'_>>> {
    let directed = |o: Ordering| match options.direction {
        Direction::Ascending => o,
        Direction::Descending => o.reverse(),
    };
    let mut rows = match options.limit {
        Some(0) => return Ok(Vec::new()),
        Some(n) if !matches!(options.order, ListOrder::Id | ListOrder::Stored) => {
            first_rows(cat, options, n)?
        }
        _ => rows(cat, options.order)?,
    };
    if options.order == ListOrder::Stored {
        if options.direction == Direction::Descending {
            rows.reverse();
        }
        if let Some(n) = options.limit {
            rows.truncate(n);
        }
        return rows.into_iter().map(|r| pick(cat, r.place)).collect();
    }
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
    let picked: Vec<(i128, Picked<'_>)> = rows
        .into_iter()
        .map(|r| Ok((r.key, pick(cat, r.place)?)))
        .collect::<Result<_>>()?;
    // Ties of the key are ordered by id: by the 8 bytes after the prefix every id shares
    // first (an integer compare, decisive for most pairs), then by the whole id — sorting
    // 100,000 ids by a string compare alone was half of a full listing's time.
    let shared = picked.first().map_or(0, |(_, first)| {
        picked.iter().fold(first.id().len(), |n, (_, p)| {
            n.min(common_prefix(first.id().as_bytes(), p.id().as_bytes()))
        })
    });
    let mut named: Vec<(i128, u64, Picked<'_>)> = picked
        .into_iter()
        .map(|(key, p)| (key, prefix_key(p.id().as_bytes(), shared), p))
        .collect();
    let by = |a: &(i128, u64, Picked<'_>), b: &(i128, u64, Picked<'_>)| {
        directed(
            a.0.cmp(&b.0)
                .then(a.1.cmp(&b.1))
                .then_with(|| a.2.id().cmp(b.2.id())),
        )
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
    Ok(named.into_iter().map(|(_, _, picked)| picked).collect())
}

/// A row's session: decoded, or its index entry read, checked and its id read.
fn pick<'a>(cat: &'a Entries, place: Place<'a>) -> Result<Picked<'a>> {
    match (place, cat.cold()) {
        (Place::Decoded(e), _) => Ok(Picked::Decoded(e)),
        (Place::Indexed(i), Some(cold)) => {
            let (slot, bytes) = cold.entry_bytes_of(i)?;
            picked_slot(slot, bytes, cold.form())
        }
        (Place::Indexed(_), None) => Err(damaged(0, 0)),
    }
}

/// An index slot and its entry's checked bytes as a listed session: its id read, and checked
/// against the slot's hash.
fn picked_slot(slot: Slot, bytes: &[u8], form: EntryForm) -> Result<Picked<'_>> {
    let id = entry_id(bytes)
        .ok()
        .filter(|id| id_hash(id) == slot.id_hash)
        .ok_or_else(|| damaged(slot.generation, slot.entry_at))?;
    Ok(Picked::Indexed {
        slot,
        id,
        bytes,
        form,
    })
}

/// The length of the prefix `a` and `b` share.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// The 8 bytes of `id` from `from`, big-endian, zeros past its end: ordering by it, then by
/// the whole id, is ordering by the id (a shorter id's zeros never sort after a longer one's
/// bytes at the same place).
fn prefix_key(id: &[u8], from: usize) -> u64 {
    let bytes = id.iter().skip(from).chain(std::iter::repeat(&0)).take(8);
    bytes.fold(0u64, |word, &b| (word << 8) | u64::from(b))
}

/// One session's row: copied from a decoded session, decoded from the index for the others.
fn info(picked: Picked<'_>) -> Result<SessionInfo> {
    match picked {
        Picked::Decoded(e) => Ok(info_of(e)),
        Picked::Indexed {
            slot,
            id,
            bytes,
            form,
        } => {
            let bad = || damaged(slot.generation, slot.entry_at);
            let row = entry_row(form, bytes).map_err(|_| bad())?;
            let header = SessionHeader::from_json(row.header_json).map_err(|_| bad())?;
            if header.id != id {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Ordering by the prefix key after any shared prefix, then by the id, is ordering by
        /// the id (NUL bytes and ids that are prefixes of others included).
        #[test]
        fn the_prefix_key_orders_as_the_id(
            ids in proptest::collection::vec(proptest::collection::vec(prop_oneof![Just(0u8), Just(b'a'), Just(b'b'), any::<u8>()], 0..12), 0..40),
            shared in 0usize..4,
        ) {
            let with_prefix: Vec<Vec<u8>> = ids.iter().map(|id| [&b"abc"[..shared.min(3)], id].concat()).collect();
            let common = with_prefix.first().map_or(0, |f| {
                with_prefix.iter().fold(f.len(), |n, id| n.min(common_prefix(f, id)))
            });
            let mut by_key = with_prefix.clone();
            by_key.sort_by(|a, b| prefix_key(a, common).cmp(&prefix_key(b, common)).then_with(|| a.cmp(b)));
            let mut by_id = with_prefix;
            by_id.sort();
            prop_assert_eq!(by_key, by_id);
        }

        /// Whatever the order items come in and however small the buffer, what is kept holds
        /// exactly the `n` smallest ranks' items and every tie of the n-th: the items the
        /// whole list sorted would put first, with the ties the ids decide among.
        #[test]
        fn the_first_n_keep_the_smallest_ranks_and_the_ties_of_the_last(
            ranks in proptest::collection::vec(-5i128..20, 0..300),
            n in 1usize..40,
            min_room in 1usize..16,
        ) {
            let mut first = FirstN::new(n, min_room, ranks.len(), |&(r, _): &(i128, usize)| r);
            for (i, &r) in ranks.iter().enumerate() {
                first.push((r, i));
            }
            let mut kept = first.finish();
            kept.sort_unstable();
            let mut sorted: Vec<(i128, usize)> = ranks.iter().copied().zip(0..).collect();
            sorted.sort_unstable();
            let expected: Vec<(i128, usize)> = match sorted.get(n - 1) {
                Some(&(nth, _)) => sorted.into_iter().filter(|&(r, _)| r <= nth).collect(),
                None => sorted,
            };
            prop_assert_eq!(kept, expected);
        }
    }
}
