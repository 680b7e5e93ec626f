//! `SharedVec`: an append-only vector whose prefixes a fork shares without copying. It holds
//! an in-memory session's events and the durable store's per-event locations.
//!
//! A fork must not copy its parent's events (DESIGN §2). The log is a list of frozen,
//! reference-counted chunks plus a private tail: forking freezes the parent's tail into a
//! chunk (a move, not a copy) and hands the child clones of the chunk pointers.

use std::sync::Arc;

#[cfg(test)]
use crate::event::Event;

/// The events of one in-memory session.
pub(crate) type EventList = SharedVec<crate::event::Event>;

/// An append-only vector whose prefixes can be shared without copying: frozen
/// reference-counted chunks plus a private tail. Also holds the durable store's per-event
/// locations, so a fork shares its parent's index the same way.
#[derive(Debug, Clone)]
pub(crate) struct SharedVec<T> {
    /// Frozen chunks and how many of each chunk's items belong to this vector.
    chunks: Vec<(Arc<Vec<T>>, usize)>,
    /// Number of items in `chunks`.
    chunked: u64,
    tail: Vec<T>,
}

impl<T> Default for SharedVec<T> {
    fn default() -> Self {
        Self {
            chunks: Vec::new(),
            chunked: 0,
            tail: Vec::new(),
        }
    }
}

impl<T> SharedVec<T> {
    pub(crate) fn len(&self) -> u64 {
        self.chunked + self.tail.len() as u64
    }

    pub(crate) fn get(&self, seq: u64) -> Option<&T> {
        if seq >= self.chunked {
            return self.tail.get(usize::try_from(seq - self.chunked).ok()?);
        }
        let mut rest = usize::try_from(seq).ok()?;
        for (chunk, used) in &self.chunks {
            if rest < *used {
                return chunk.get(rest);
            }
            rest -= used;
        }
        None
    }

    pub(crate) fn last(&self) -> Option<&T> {
        self.len().checked_sub(1).and_then(|s| self.get(s))
    }

    pub(crate) fn push(&mut self, event: T) {
        self.tail.push(event);
    }

    /// Appends `items` in one piece: taken over as the tail when the tail is empty (a
    /// checkpoint's decoded locations, moved, not copied).
    pub(crate) fn append_vec(&mut self, mut items: Vec<T>) {
        if self.tail.is_empty() {
            self.tail = items;
        } else {
            self.tail.append(&mut items);
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks
            .iter()
            .flat_map(|(c, used)| c.iter().take(*used))
            .chain(self.tail.iter())
    }

    /// A log that shares this log's first `len` events without copying them.
    pub(crate) fn share_prefix(&mut self, len: u64) -> SharedVec<T> {
        if !self.tail.is_empty() {
            let mut tail = std::mem::take(&mut self.tail);
            tail.shrink_to_fit(); // frozen for good: no room to grow is needed
            self.chunked += tail.len() as u64;
            let used = tail.len();
            self.chunks.push((Arc::new(tail), used));
        }
        let mut out = SharedVec::default();
        let mut rest = len;
        for (chunk, used) in &self.chunks {
            if rest == 0 {
                break;
            }
            let take = (*used).min(crate::width::index(rest));
            out.chunks.push((Arc::clone(chunk), take));
            out.chunked += take as u64;
            rest -= take as u64;
        }
        out
    }

    /// Heap bytes: each frozen chunk by address (so a caller can count shared chunks once) and
    /// the private tail.
    pub(crate) fn heap_bytes(&self, mut chunk: impl FnMut(usize, usize)) -> usize {
        for (c, _) in &self.chunks {
            chunk(
                Arc::as_ptr(c) as usize,
                c.capacity() * std::mem::size_of::<T>(),
            );
        }
        self.tail.capacity() * std::mem::size_of::<T>()
    }

    /// Drops spare capacity of the private tail.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.tail.shrink_to_fit();
    }

    /// Copies of the items at `range` (clamped to the length), with an exact length.
    pub(crate) fn range(&self, range: std::ops::Range<u64>) -> impl ExactSizeIterator<Item = T>
    where
        T: Copy,
    {
        let end = range.end.min(self.len());
        let left = crate::width::index(end.saturating_sub(range.start));
        Exact {
            inner: self.iter().skip(crate::width::index(range.start)).copied(),
            left,
        }
    }

    /// Copies shared chunks into a private tail, so that this vector no longer depends on
    /// anyone's chunks (used when a fork's parent is deleted).
    pub(crate) fn materialize(&mut self)
    where
        T: Clone,
    {
        if self.chunks.is_empty() {
            return;
        }
        let all: Vec<T> = self.iter().cloned().collect();
        *self = Self {
            chunks: Vec::new(),
            chunked: 0,
            tail: all,
        };
    }

    /// Whether the first `len` events of both logs are the very same objects (test aid for
    /// "no copy").
    #[cfg(test)]
    pub(crate) fn shares_prefix_with(&self, other: &SharedVec<T>, len: usize) -> bool {
        self.iter().count() >= len
            && other.iter().count() >= len
            && other
                .iter()
                .zip(self.iter())
                .take(len)
                .all(|(a, b)| std::ptr::eq(a, b))
    }
}

/// An iterator that knows how many items it yields.
struct Exact<I> {
    inner: I,
    left: usize,
}

impl<I: Iterator> Iterator for Exact<I> {
    type Item = I::Item;

    fn next(&mut self) -> Option<I::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.inner.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<I: Iterator> ExactSizeIterator for Exact<I> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64) -> Event {
        Event::new("x", seq, 0, &b"{}"[..])
    }

    #[test]
    fn shared_prefix_reads_the_same_events_without_copying() {
        let mut log = EventList::default();
        for s in 0..5 {
            log.push(ev(s));
        }
        let mut child = log.share_prefix(3);
        assert_eq!(child.len(), 3);
        assert!(log.shares_prefix_with(&child, 3));
        log.push(ev(5));
        child.push(ev(3));
        assert_eq!(log.len(), 6);
        assert_eq!(log.get(5).map(Event::seq), Some(5));
        assert_eq!(
            child.iter().map(Event::seq).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let grandchild = child.share_prefix(4);
        assert_eq!(
            grandchild.iter().map(Event::seq).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        assert!(child.shares_prefix_with(&grandchild, 3));
        assert!(child.shares_prefix_with(&grandchild, 4));
        assert!(
            !log.shares_prefix_with(&child, 4),
            "seq 3 is the child's own"
        );
        assert_eq!(grandchild.get(4), None);
        assert_eq!(grandchild.last().map(Event::seq), Some(3));
    }
}
