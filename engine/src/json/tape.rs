//! A structural index of one validated JSON value, built by the validator in the same pass
//! ([`Tape::validate`]): the members of every object nested at most [`INDEXED_DEPTH`] deep,
//! with the spans of their keys and values, in document order.
//!
//! Why: the acceptance rules read a handful of members of each event's `data` (a message's
//! `id`, `role`, `source`, `content`; a tool-result block's keys). Read with [`JsonRef`],
//! each lookup walks the object and skips every value before and after the key (the last of
//! repeated keys wins), so a message's `content` — most of its bytes — was skipped several
//! times per event after the validator had already read it. A [`Node`] reads members from
//! the index instead; beyond the indexed depth it falls back to walking, as before.

use std::ops::Deref;

use super::nav::JsonRef;
use super::validate::{JsonError, Record, validate_with};
use crate::Limits;

/// Objects nested at most this deep (the top level is 1) have their members indexed: enough
/// for `data.message.content[i]` (the blocks of an assistant message or a tool result).
pub const INDEXED_DEPTH: usize = 4;

/// The most members one index holds (1.5 MiB of slots): a value with more is validated
/// without an index and navigated by walking, so no input makes the thread's index grow to a
/// multiple of its own size and stay that large.
pub const MAX_INDEXED_MEMBERS: usize = 1 << 16;

/// One member of an indexed object.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// Offset of the key's opening quote, and one past its closing quote.
    key: (u32, u32),
    /// The value's span.
    value: (u32, u32),
    /// The first slot after this member's subtree (its value's own members, if indexed).
    next: u32,
    /// Depth of the object the member belongs to.
    depth: u32,
}

/// A reusable structural index (see the module documentation). Validating into it reuses
/// its memory: no allocation per value in steady state.
#[derive(Debug, Default)]
pub struct Tape {
    slots: Vec<Slot>,
    /// Per depth, the slot whose value is being read.
    open: [u32; INDEXED_DEPTH + 1],
    /// Address and length of the bytes `slots` describe: set only when the last validation
    /// succeeded (and its input fit 32-bit offsets and [`MAX_INDEXED_MEMBERS`]).
    indexed: Option<(usize, usize)>,
    /// More members than [`MAX_INDEXED_MEMBERS`] were met: the index is incomplete.
    overflow: bool,
}

impl Tape {
    /// A new, empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Validates `bytes` as [`crate::json::validate`] does and indexes them; [`Tape::root`]
    /// then navigates them.
    ///
    /// # Errors
    /// As [`crate::json::validate`].
    pub fn validate(&mut self, bytes: &[u8], limits: &Limits) -> Result<(), JsonError> {
        self.slots.clear();
        self.indexed = None;
        self.overflow = false;
        if u32::try_from(bytes.len()).is_err() {
            // Offsets would not fit: validated without an index (navigation walks).
            return crate::json::validate(bytes, limits);
        }
        validate_with(bytes, limits, &mut *self)?;
        if !self.overflow {
            self.indexed = Some((bytes.as_ptr() as usize, bytes.len()));
        }
        Ok(())
    }

    /// `bytes`, navigable through the index when they are the bytes last validated into
    /// it (the same slice, not equal bytes elsewhere); anything else, or the bytes of a failed
    /// validation, is navigated by walking, as a [`JsonRef`].
    pub fn root<'a>(&'a self, bytes: &'a [u8]) -> Node<'a> {
        let json = JsonRef::new(bytes);
        if self.indexed != Some((bytes.as_ptr() as usize, bytes.len())) {
            return Node::plain(json);
        }
        let end = u32::try_from(self.slots.len()).unwrap_or(0);
        Node::container(json, &self.slots, 0, (0, end), 1)
    }
}

impl Record for &mut Tape {
    const RECORDS: bool = true;

    #[inline]
    #[allow(
        clippy::cast_possible_truncation,
        reason = "`Tape::validate` indexes only inputs shorter than 4 GiB"
    )]
    fn member(&mut self, depth: usize, key: (usize, usize), value_start: usize) {
        if depth > INDEXED_DEPTH || self.overflow {
            return;
        }
        if self.slots.len() >= MAX_INDEXED_MEMBERS {
            // The rest is validated only; the index is dropped at the end.
            self.overflow = true;
            return;
        }
        let (Ok(index), Some(open)) = (u32::try_from(self.slots.len()), self.open.get_mut(depth))
        else {
            return;
        };
        *open = index;
        self.slots.push(Slot {
            key: (key.0 as u32, key.1 as u32),
            value: (value_start as u32, value_start as u32),
            next: index + 1,
            depth: depth as u32,
        });
    }

    #[inline]
    #[allow(
        clippy::cast_possible_truncation,
        reason = "`Tape::validate` indexes only inputs shorter than 4 GiB"
    )]
    fn value_end(&mut self, depth: usize, end: usize) {
        if depth > INDEXED_DEPTH || self.overflow {
            return;
        }
        let next = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
        let Some(&open) = self.open.get(depth) else {
            return;
        };
        if let Some(slot) = self.slots.get_mut(open as usize) {
            slot.value.1 = end as u32;
            slot.next = next;
        }
    }
}

/// A JSON value with, when it is an indexed object or array, the index of its members.
/// Dereferences to its [`JsonRef`] for everything but member lookup.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    json: JsonRef<'a>,
    /// The index (empty when not indexed).
    slots: &'a [Slot],
    /// Offset of `json` in the indexed bytes (slot offsets are relative to those).
    base: u32,
    /// The slots of its contents: `first..end`.
    first: u32,
    end: u32,
    /// How it is indexed.
    kind: Kind,
    /// Depth it was opened at (arrays: their elements' members are at `depth + 1`).
    depth: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not indexed: navigated by walking.
    None,
    /// An object whose members are the slots from `first`, following `next`, before `end`.
    Object,
    /// An array whose contents' slots are `first..end`.
    Array,
}

impl<'a> Deref for Node<'a> {
    type Target = JsonRef<'a>;

    fn deref(&self) -> &JsonRef<'a> {
        &self.json
    }
}

impl<'a> Node<'a> {
    /// A value navigated by walking (no index).
    pub fn plain(json: JsonRef<'a>) -> Self {
        Self {
            json,
            slots: &[],
            base: 0,
            first: 0,
            end: 0,
            kind: Kind::None,
            depth: 0,
        }
    }

    /// The value as a [`JsonRef`].
    pub fn json(&self) -> JsonRef<'a> {
        self.json
    }

    /// `json` (at offset `base` of the indexed bytes), a container opened at `depth` whose
    /// contents are the slots `first..end`.
    fn container(
        json: JsonRef<'a>,
        slots: &'a [Slot],
        base: u32,
        (first, end): (u32, u32),
        depth: usize,
    ) -> Self {
        let kind = match json.bytes().first() {
            Some(b'{') if depth <= INDEXED_DEPTH => Kind::Object,
            // Its elements' members are indexed only if the elements' depth is.
            Some(b'[') if depth < INDEXED_DEPTH => Kind::Array,
            _ => Kind::None,
        };
        Self {
            json,
            slots,
            base,
            first,
            end,
            kind,
            // At most `INDEXED_DEPTH` + 1 when indexed.
            depth: u8::try_from(depth).unwrap_or(u8::MAX),
        }
    }

    /// Bytes `span` of the indexed input, which lie inside this value.
    fn inner(&self, span: (u32, u32)) -> &'a [u8] {
        let from = span.0.wrapping_sub(self.base) as usize;
        let to = span.1.wrapping_sub(self.base) as usize;
        self.json.bytes().get(from..to).unwrap_or_default()
    }

    /// The value of member `at` (one of this object's slots), with the index of its contents.
    fn member_value(&self, at: u32) -> Option<Self> {
        let slot = self.slots.get(at as usize)?;
        Some(Self::container(
            JsonRef::new(self.inner(slot.value)),
            self.slots,
            slot.value.0,
            (at + 1, slot.next),
            slot.depth as usize + 1,
        ))
    }

    /// The values of several members in one pass (the last of repeated keys winning), as
    /// [`JsonRef::fields`].
    pub fn fields<const N: usize>(&self, keys: [&str; N]) -> [Option<Node<'a>>; N] {
        if self.kind != Kind::Object {
            let walked = self.json.fields(keys);
            let mut out = [None; N];
            for (out, v) in out.iter_mut().zip(walked) {
                *out = v.map(Node::plain);
            }
            return out;
        }
        // The slot of each key's last occurrence, found first; the nodes are built after.
        let mut found = [u32::MAX; N];
        let mut at = self.first;
        while at < self.end {
            let Some(slot) = self.slots.get(at as usize) else {
                break;
            };
            // The key's text between its quotes, compared as bytes: a key written without
            // escapes equals a name exactly when their bytes do (a raw backslash cannot
            // appear in it). Only a key that matched no name this way and holds an escape
            // is decoded, and a name with a backslash always compares decoded.
            let key = self.inner(slot.key);
            let text = key.get(1..key.len().saturating_sub(1)).unwrap_or_default();
            let mut matched = false;
            for (f, name) in found.iter_mut().zip(keys) {
                if text == name.as_bytes() && !text.contains(&b'\\') {
                    *f = at;
                    matched = true;
                }
            }
            if !matched && text.contains(&b'\\') {
                let decoded = JsonRef::new(key).as_str();
                for (f, name) in found.iter_mut().zip(keys) {
                    if decoded.as_deref() == Some(name) {
                        *f = at;
                    }
                }
            }
            // Always forward, whatever the slot says.
            at = slot.next.max(at + 1);
        }
        // A loop, not `map`: `map` over the array compiled to an out-of-line call that
        // copied it several times (a third of the lookup's time in `perf`).
        let mut out = [None; N];
        for (out, &at) in out.iter_mut().zip(&found) {
            if at != u32::MAX {
                *out = self.member_value(at);
            }
        }
        out
    }

    /// The value of member `key` (the last one if the key repeats).
    pub fn get(&self, key: &str) -> Option<Node<'a>> {
        let [v] = self.fields([key]);
        v
    }

    /// The elements of an array in order (none for any other kind); an element object of an
    /// indexed array keeps its index.
    pub fn elements(&self) -> impl Iterator<Item = Node<'a>> + 'a {
        let this = *self;
        let mut cursor = self.first;
        self.json.elements().map(move |element| {
            if this.kind != Kind::Array || element.bytes().first() != Some(&b'{') {
                return Node::plain(element);
            }
            // The element's members: the slots at this level whose keys lie inside it
            // (deeper ones are inside those members' subtrees, skipped by `next`).
            let offset = (element.bytes().as_ptr() as usize)
                .wrapping_sub(this.json.bytes().as_ptr() as usize);
            let start = u32::try_from(offset)
                .unwrap_or(u32::MAX)
                .saturating_add(this.base);
            let stop = u32::try_from(element.bytes().len())
                .unwrap_or(u32::MAX)
                .saturating_add(start);
            let key_at = |at: u32| this.slots.get(at as usize).map_or(u32::MAX, |s| s.key.0);
            let step = |at: u32| {
                this.slots
                    .get(at as usize)
                    .map_or(this.end, |s| s.next.max(at + 1))
            };
            while cursor < this.end && key_at(cursor) < start {
                cursor = step(cursor);
            }
            let first = cursor;
            while cursor < this.end && key_at(cursor) < stop {
                cursor = step(cursor);
            }
            Node::container(
                element,
                this.slots,
                start,
                (first, cursor),
                usize::from(this.depth) + 1,
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn tape(s: &str) -> Tape {
        let mut t = Tape::new();
        t.validate(s.as_bytes(), &Limits::default()).unwrap();
        t
    }

    #[test]
    fn members_are_read_from_the_index() {
        let s = r#"{"id":"u1","role":"user","source":{"kind":"user"},"content":[{"type":"text","text":"hi"},{"type":"x"}],"id":"u2"}"#;
        let t = tape(s);
        let root = t.root(s.as_bytes());
        assert!(root.kind == Kind::Object);
        let [id, source, content] = root.fields(["id", "source", "content"]);
        // The last of a repeated key, as `JSON.parse` reads it.
        assert_eq!(id.unwrap().bytes(), br#""u2""#);
        let kind = source.unwrap().get("kind").unwrap();
        assert_eq!(kind.bytes(), br#""user""#);
        let blocks: Vec<_> = content.unwrap().elements().collect();
        assert_eq!(blocks.len(), 2);
        assert!(blocks[0].kind == Kind::Object);
        assert_eq!(blocks[0].get("text").unwrap().bytes(), br#""hi""#);
        assert_eq!(blocks[1].get("type").unwrap().bytes(), br#""x""#);
        assert!(blocks[1].get("text").is_none());
    }

    #[test]
    fn escaped_keys_and_names_with_backslashes_compare_as_text() {
        let s = r#"{"\u0069d":1,"a\\b":2,"x\"":3,"id2":4}"#;
        let t = tape(s);
        let root = t.root(s.as_bytes());
        let [id, ab, xq, id2] = root.fields(["id", "a\\b", "x\"", "id2"]);
        assert_eq!(id.unwrap().bytes(), b"1");
        assert_eq!(ab.unwrap().bytes(), b"2");
        assert_eq!(xq.unwrap().bytes(), b"3");
        assert_eq!(id2.unwrap().bytes(), b"4");
        // The key `x\"` written as bytes is the text `x"`: no match for the text `x\"`.
        assert!(root.get("x\\\"").is_none());
    }

    #[test]
    fn a_value_with_too_many_members_is_walked_not_indexed() {
        let members: Vec<String> = (0..MAX_INDEXED_MEMBERS + 10)
            .map(|i| format!("\"k{i}\":{i}"))
            .collect();
        let s = format!("{{{}}}", members.join(","));
        let mut t = Tape::new();
        t.validate(s.as_bytes(), &Limits::default()).unwrap();
        let root = t.root(s.as_bytes());
        assert_eq!(root.kind, Kind::None);
        assert!(t.slots.len() <= MAX_INDEXED_MEMBERS);
        let last = format!("k{}", MAX_INDEXED_MEMBERS + 9);
        assert_eq!(
            root.get(&last).unwrap().bytes(),
            (MAX_INDEXED_MEMBERS + 9).to_string().as_bytes()
        );
        // The next value is indexed again.
        let small = br#"{"a":1}"#.to_vec();
        t.validate(&small, &Limits::default()).unwrap();
        assert_eq!(t.root(&small).kind, Kind::Object);
    }

    #[test]
    fn past_the_indexed_depth_members_are_walked() {
        let s = r#"{"a":{"b":{"c":{"d":{"e":1},"f":[{"g":2}]}}}}"#;
        let t = tape(s);
        let d = t
            .root(s.as_bytes())
            .get("a")
            .unwrap()
            .get("b")
            .unwrap()
            .get("c")
            .unwrap();
        assert!(d.kind == Kind::Object);
        let dd = d.get("d").unwrap();
        assert!(dd.kind == Kind::None);
        assert_eq!(dd.get("e").unwrap().bytes(), b"1");
        let g: Vec<_> = d.get("f").unwrap().elements().collect();
        assert_eq!(g[0].get("g").unwrap().bytes(), b"2");
    }

    #[test]
    fn other_bytes_or_a_failed_validation_are_walked() {
        let s = br#"{"a":1}"#;
        let mut t = Tape::new();
        t.validate(s, &Limits::default()).unwrap();
        assert!(t.root(s).kind == Kind::Object);
        // Equal length, other bytes: not the slice indexed, so walked.
        let other = br#"{"b":2}"#;
        assert!(t.root(other).kind == Kind::None);
        assert_eq!(t.root(other).get("b").unwrap().bytes(), b"2");
        // A failed validation leaves nothing indexed.
        assert!(t.validate(br#"{"a":"#, &Limits::default()).is_err());
        assert!(t.root(s).kind == Kind::None);
    }

    /// The index agrees with walking on arbitrary JSON.
    fn agree(a: Node<'_>, b: JsonRef<'_>, depth: usize) {
        assert_eq!(a.bytes(), b.bytes());
        if depth > 6 {
            return;
        }
        for (k, v) in b.members() {
            let key = k.as_str().unwrap();
            let got = a.get(&key).unwrap();
            agree(got, b.get(&key).unwrap(), depth + 1);
            let _ = v;
        }
        let ea: Vec<_> = a.elements().collect();
        let eb: Vec<_> = b.elements().collect();
        assert_eq!(ea.len(), eb.len());
        for (x, y) in ea.into_iter().zip(eb) {
            agree(x, y, depth + 1);
        }
    }

    proptest! {
        #[test]
        fn the_index_reads_what_walking_reads(v in crate::json::strategy::json_value()) {
            let mut t = Tape::new();
            if t.validate(v.as_bytes(), &Limits::default()).is_ok() {
                agree(t.root(v.as_bytes()), JsonRef::new(v.as_bytes()), 0);
            }
        }
    }
}
