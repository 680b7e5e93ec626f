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
    /// succeeded (and its input fit 32-bit offsets).
    indexed: Option<(usize, usize)>,
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
        if u32::try_from(bytes.len()).is_err() {
            // Offsets would not fit: validated without an index (navigation walks).
            return crate::json::validate(bytes, limits);
        }
        validate_with(bytes, limits, &mut *self)?;
        self.indexed = Some((bytes.as_ptr() as usize, bytes.len()));
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
        Node::container(json, bytes, &self.slots, 0, end, 1)
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
        if depth > INDEXED_DEPTH {
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
        if depth > INDEXED_DEPTH {
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
    index: Index<'a>,
}

#[derive(Debug, Clone, Copy)]
enum Index<'a> {
    /// Not indexed: navigated by walking.
    None,
    /// An object whose members are the slots from `first`, following `next`, before `end`.
    Object {
        root: &'a [u8],
        slots: &'a [Slot],
        first: u32,
        end: u32,
    },
    /// An array opened at `depth`, the slots of its contents `first..end`.
    Array {
        root: &'a [u8],
        slots: &'a [Slot],
        first: u32,
        end: u32,
        depth: usize,
    },
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
            index: Index::None,
        }
    }

    /// The value as a [`JsonRef`].
    pub fn json(&self) -> JsonRef<'a> {
        self.json
    }

    /// `json`, a container opened at `depth` whose contents are the slots `first..end`.
    fn container(
        json: JsonRef<'a>,
        root: &'a [u8],
        slots: &'a [Slot],
        first: u32,
        end: u32,
        depth: usize,
    ) -> Self {
        let index = match json.bytes().first() {
            Some(b'{') if depth <= INDEXED_DEPTH => Index::Object {
                root,
                slots,
                first,
                end,
            },
            // Its elements' members are indexed only if the elements' depth is.
            Some(b'[') if depth < INDEXED_DEPTH => Index::Array {
                root,
                slots,
                first,
                end,
                depth,
            },
            _ => Index::None,
        };
        Self { json, index }
    }

    /// The value of `slot`, with the index of its contents.
    fn member_value(root: &'a [u8], slots: &'a [Slot], at: u32) -> Option<Self> {
        let slot = slots.get(at as usize)?;
        let value = root.get(slot.value.0 as usize..slot.value.1 as usize)?;
        Some(Self::container(
            JsonRef::new(value),
            root,
            slots,
            at + 1,
            slot.next,
            slot.depth as usize + 1,
        ))
    }

    /// The values of several members in one pass (the last of repeated keys winning), as
    /// [`JsonRef::fields`].
    pub fn fields<const N: usize>(&self, keys: [&str; N]) -> [Option<Node<'a>>; N] {
        let Index::Object {
            root,
            slots,
            first,
            end,
        } = self.index
        else {
            return self.json.fields(keys).map(|v| v.map(Node::plain));
        };
        let mut out = [None; N];
        let mut at = first;
        while at < end {
            let Some(slot) = slots.get(at as usize) else {
                break;
            };
            // The key's text between its quotes, compared as bytes; an escaped key (rare) is
            // decoded once.
            let inner = root
                .get(slot.key.0 as usize + 1..(slot.key.1 as usize).saturating_sub(1))
                .unwrap_or_default();
            if inner.contains(&b'\\') {
                let raw = root
                    .get(slot.key.0 as usize..slot.key.1 as usize)
                    .unwrap_or_default();
                let decoded = JsonRef::new(raw).as_str();
                for (out, name) in out.iter_mut().zip(keys) {
                    if decoded.as_deref() == Some(name) {
                        *out = Node::member_value(root, slots, at);
                    }
                }
            } else {
                for (out, name) in out.iter_mut().zip(keys) {
                    if inner == name.as_bytes() {
                        *out = Node::member_value(root, slots, at);
                    }
                }
            }
            // Always forward, whatever the slot says.
            at = slot.next.max(at + 1);
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
        let index = self.index;
        let mut cursor = match index {
            Index::Array { first, .. } => first,
            _ => 0,
        };
        self.json.elements().map(move |element| {
            let Index::Array {
                root,
                slots,
                end,
                depth,
                ..
            } = index
            else {
                return Node::plain(element);
            };
            if element.bytes().first() != Some(&b'{') {
                return Node::plain(element);
            }
            // The element's members: the slots at this level whose keys lie inside it
            // (deeper ones are inside those members' subtrees, skipped by `next`).
            let start = (element.bytes().as_ptr() as usize).wrapping_sub(root.as_ptr() as usize);
            let stop = start + element.bytes().len();
            let key_at = |at: u32| {
                slots
                    .get(at as usize)
                    .map_or(usize::MAX, |s| s.key.0 as usize)
            };
            let step = |at: u32| slots.get(at as usize).map_or(end, |s| s.next.max(at + 1));
            while cursor < end && key_at(cursor) < start {
                cursor = step(cursor);
            }
            let first = cursor;
            while cursor < end && key_at(cursor) < stop {
                cursor = step(cursor);
            }
            Node::container(element, root, slots, first, cursor, depth + 1)
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
        assert!(matches!(root.index, Index::Object { .. }));
        let [id, source, content] = root.fields(["id", "source", "content"]);
        // The last of a repeated key, as `JSON.parse` reads it.
        assert_eq!(id.unwrap().bytes(), br#""u2""#);
        let kind = source.unwrap().get("kind").unwrap();
        assert_eq!(kind.bytes(), br#""user""#);
        let blocks: Vec<_> = content.unwrap().elements().collect();
        assert_eq!(blocks.len(), 2);
        assert!(matches!(blocks[0].index, Index::Object { .. }));
        assert_eq!(blocks[0].get("text").unwrap().bytes(), br#""hi""#);
        assert_eq!(blocks[1].get("type").unwrap().bytes(), br#""x""#);
        assert!(blocks[1].get("text").is_none());
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
        assert!(matches!(d.index, Index::Object { .. }));
        let dd = d.get("d").unwrap();
        assert!(matches!(dd.index, Index::None));
        assert_eq!(dd.get("e").unwrap().bytes(), b"1");
        let g: Vec<_> = d.get("f").unwrap().elements().collect();
        assert_eq!(g[0].get("g").unwrap().bytes(), b"2");
    }

    #[test]
    fn other_bytes_or_a_failed_validation_are_walked() {
        let s = br#"{"a":1}"#;
        let mut t = Tape::new();
        t.validate(s, &Limits::default()).unwrap();
        assert!(matches!(t.root(s).index, Index::Object { .. }));
        // Equal length, other bytes: not the slice indexed, so walked.
        let other = br#"{"b":2}"#;
        assert!(matches!(t.root(other).index, Index::None));
        assert_eq!(t.root(other).get("b").unwrap().bytes(), b"2");
        // A failed validation leaves nothing indexed.
        assert!(t.validate(br#"{"a":"#, &Limits::default()).is_err());
        assert!(matches!(t.root(s).index, Index::None));
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
