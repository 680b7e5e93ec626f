//! DSH's `listSnapshots` in pieces. The rows are written on a pool thread and handed to
//! JavaScript a piece at a time, so that the JS thread parses one piece while the next is
//! written: on two cores the native listing and `JSON.parse` overlap, where one buffer made
//! the parse wait for the whole listing (`docs/PERFORMANCE.md`, "listSnapshots in pieces").
//! The catalog stays read-locked for the whole listing, so the pieces together are one
//! snapshot of the store.

use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use sessdb::Store;
use sessdb::store::{ListOptions, ListOrder, ListedRow};

/// Rows in the first piece (what the JS thread waits for before it starts); each next piece
/// holds twice as many as the last, up to [`MOST`].
const FIRST: usize = 512;
/// Rows in a piece at most (~1 MB of JSON for DSH's headers).
const MOST: usize = 8192;

/// One piece: `[header, revision, header, revision, …]`, each header the stored line without
/// its `"type"` key (DSH's `SessionHeader`), each revision whole (`sessdb:<root>#<incarnation>:
/// <events>`, as `revision` gives it). Whole revisions cost more bytes than a prefix sent
/// once, but `JSON.parse` makes each string in one step where joining the parts in
/// JavaScript took longer than the parse (`docs/PERFORMANCE.md`).
struct Piece<'p> {
    json: Vec<u8>,
    /// The revisions' common start as JSON: the opening quote and the escaped prefix.
    open_revision: &'p [u8],
    rows: usize,
    limit: usize,
}

impl<'p> Piece<'p> {
    fn new(open_revision: &'p [u8], limit: usize) -> Self {
        let mut json = Vec::with_capacity(limit * (96 + open_revision.len()));
        json.push(b'[');
        Self {
            json,
            open_revision,
            rows: 0,
            limit,
        }
    }

    fn push(&mut self, header_json: &[u8], incarnation: u64, events: u64) {
        let out = &mut self.json;
        if self.rows > 0 {
            out.push(b',');
        }
        // The line starts `{"type":"session",` as the store writes it; a line that does not
        // (none today) goes whole, and index.js drops the key.
        match header_json.strip_prefix(br#"{"type":"session","#) {
            Some(rest) => {
                out.push(b'{');
                out.extend_from_slice(rest);
            }
            None => out.extend_from_slice(header_json),
        }
        out.push(b',');
        write_revision(out, self.open_revision, incarnation, events);
        self.rows += 1;
    }

    fn full(&self) -> bool {
        self.rows >= self.limit
    }

    /// The piece's text, closed.
    fn finish(mut self) -> String {
        self.json.push(b']');
        crate::text(self.json)
    }
}

/// Writes a revision as a JSON string: `open` (from [`open_revision`]), then
/// `<incarnation>:<events>` — digits and ':' need no escape — and the closing quote.
pub(crate) fn write_revision(out: &mut Vec<u8>, open: &[u8], incarnation: u64, events: u64) {
    out.extend_from_slice(open);
    sessdb::json::write_u64(out, incarnation);
    out.push(b':');
    sessdb::json::write_u64(out, events);
    out.push(b'"');
}

/// The revisions' common start as a JSON string's first bytes (its closing quote left off).
pub(crate) fn open_revision(prefix: &str) -> Vec<u8> {
    let mut quoted = Vec::with_capacity(prefix.len() + 2);
    sessdb::json::write_str(&mut quoted, prefix);
    quoted.pop();
    quoted
}

/// Lists every session of `store` in no order, handing `deliver` one piece after another;
/// returns how many pieces it handed over (at least one: the last may hold no row).
///
/// # Errors
/// The listing's errors; `Io` when a piece cannot be handed over (the JS environment is
/// closing). Pieces handed over before an error are left to the caller to drop.
pub(crate) fn list(
    store: &Store,
    prefix: &str,
    deliver: &ThreadsafeFunction<String>,
) -> sessdb::Result<u32> {
    store.refresh()?;
    let open = open_revision(prefix);
    let mut piece = Piece::new(&open, FIRST);
    let mut handed = 0u32;
    let mut refused: Option<Status> = None;
    let mut hand = |p: Piece| {
        if refused.is_some() {
            return;
        }
        match deliver.call(Ok(p.finish()), ThreadsafeFunctionCallMode::NonBlocking) {
            Status::Ok => handed += 1,
            other => refused = Some(other),
        }
    };
    store.list_each(
        ListOptions::new(ListOrder::Stored),
        |row: &ListedRow<'_>| {
            piece.push(row.header_json, row.incarnation.get(), row.events);
            if piece.full() {
                let next = Piece::new(&open, (piece.limit * 2).min(MOST));
                hand(std::mem::replace(&mut piece, next));
            }
        },
    )?;
    hand(piece);
    match refused {
        None => Ok(handed),
        Some(status) => Err(sessdb::Error::Io {
            op: "hand a listing's piece to JavaScript",
            path: String::new(),
            source: std::io::Error::other(format!(
                "a piece of the listing could not be handed to JavaScript ({status})"
            )),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_grow_to_the_most_and_revisions_go_whole() {
        let mut limit = FIRST;
        let mut sizes = vec![limit];
        while limit < MOST {
            limit = (limit * 2).min(MOST);
            sizes.push(limit);
        }
        assert_eq!(sizes.last(), Some(&MOST));
        assert!(sizes.windows(2).all(|w| w[0] < w[1]));
        let open = open_revision("sessdb:/a \"b\"#");
        assert_eq!(open, br##""sessdb:/a \"b\"#"##);
        let p = Piece::new(&open, 1);
        assert!(!p.full());
        assert_eq!(p.finish(), "[]");
        let mut p = Piece::new(&open, 3);
        p.push(br#"{"type":"session","id":"a"}"#, u64::MAX, 5);
        p.push(br#"{"id":"b","type":"session"}"#, 0, 0);
        assert!(!p.full());
        p.push(br#"{"type":"session","id":"c"}"#, 7, 1);
        assert!(p.full());
        assert_eq!(
            p.finish(),
            concat!(
                r##"[{"id":"a"},"sessdb:/a \"b\"#18446744073709551615:5","##,
                r##"{"id":"b","type":"session"},"sessdb:/a \"b\"#0:0","##,
                r##"{"id":"c"},"sessdb:/a \"b\"#7:1"]"##
            )
        );
    }
}
