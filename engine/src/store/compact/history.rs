//! What compaction keeps: each session's records, as the one read of the log (`read.rs`)
//! finds them, as one history per creation (an *incarnation*), and from them the records a
//! compaction may leave out.
//!
//! The rules (`docs/DESIGN.md` §3.7): a live session keeps every record. A deleted one keeps
//! what a live fork still reads through it — its first record and the records of the events
//! the fork inherits — and, because a fork's record is replayed against its parent, so does
//! every ancestor of a record kept. What goes is always a *suffix* of an incarnation's
//! records: every state between two renames of a compaction, and after a crash at any point,
//! replays (a session's later records gone, its earlier ones there). A deletion stays as long
//! as any record of its session might: it goes in a later pass, once the log holds nothing of
//! that incarnation.

use crate::codec::record::RecordSummary;

/// The incarnation each session id is in while the log is read. A session's records come in
/// runs (a batch, a turn's chunks), so the last id looked up is kept beside the map: most
/// records are matched by one comparison instead of a hash and a probe.
#[derive(Default)]
pub(super) struct Current {
    map: std::collections::HashMap<Box<[u8]>, usize, foldhash::fast::RandomState>,
    /// The last id found and its incarnation.
    last: Option<(Box<[u8]>, usize)>,
}

impl Current {
    fn get(&mut self, session: &[u8]) -> Option<usize> {
        if let Some((id, i)) = &self.last
            && **id == *session
        {
            return Some(*i);
        }
        let i = *self.map.get(session)?;
        self.last = Some((session.into(), i));
        Some(i)
    }

    fn insert(&mut self, session: &[u8], i: usize) {
        self.map.insert(session.into(), i);
        self.last = None;
    }

    fn remove(&mut self, session: &[u8]) -> Option<usize> {
        self.last = None;
        self.map.remove(session)
    }
}

/// One record: where it is and how long its frame is.
#[derive(Debug, Clone, Copy)]
pub(super) struct Rec {
    pub(super) lsn: u64,
    pub(super) len: u64,
    /// Index of its segment in the snapshot.
    pub(super) seg: usize,
    /// Its frame's checksum (a tombstone names the record by it).
    pub(super) crc: u32,
    /// The first seq its events section holds.
    pub(super) first_seq: u64,
}

/// One creation of a session id and its records, in log order.
#[derive(Debug)]
struct Incarnation {
    records: Vec<Rec>,
    /// A fork's parent (an earlier incarnation) and how many events it inherits.
    parent: Option<(usize, u64)>,
    deleted: bool,
}

/// The log as compaction reads it.
#[derive(Debug)]
pub(super) struct History {
    incarnations: Vec<Incarnation>,
    /// Deletions, each with the incarnation it ended (`None`: the log held none of it).
    deletions: Vec<(Rec, Option<usize>)>,
    /// Void records (space a salvage took over) — but not one that ends its segment: a
    /// compaction writes that one (a checkpoint may name it), and would only write it again.
    voids: Vec<Rec>,
    /// Records compaction cannot attribute (kept whatever happens).
    pinned: usize,
}

/// What a plan leaves out.
#[derive(Debug, Default)]
pub(super) struct Drops {
    /// The records left out, sorted by LSN.
    pub(super) records: Vec<Rec>,
    /// Deleted sessions of which nothing is left after it.
    pub(super) sessions_erased: usize,
    /// Deleted sessions of which records stay: what a live fork reads through them (and
    /// records in segments the plan does not write).
    pub(super) sessions_kept: usize,
    /// The deletions a second step can leave out (their sessions erased by this plan).
    pub(super) deletions_after: Vec<Rec>,
}

impl History {
    /// An empty history, to which [`read`](crate::store::compact::read) adds the log's records in order.
    pub(super) fn new() -> Self {
        Self {
            incarnations: Vec::new(),
            deletions: Vec::new(),
            voids: Vec::new(),
            pinned: 0,
        }
    }

    /// Adds one record, the next in log order; `rec` is it with the first seq given.
    pub(super) fn add(
        &mut self,
        current: &mut Current,
        summary: RecordSummary<'_>,
        rec: impl Fn(u64) -> Rec,
    ) {
        match summary {
            RecordSummary::Start {
                session,
                parent,
                seqs,
            } => {
                let parent = parent.and_then(|(p, n)| current.get(p).map(|i| (i, n)));
                current.insert(session, self.incarnations.len());
                self.incarnations.push(Incarnation {
                    records: vec![rec(seqs.start)],
                    parent,
                    deleted: false,
                });
            }
            RecordSummary::Append { session, seqs } => match current.get(session) {
                Some(i) => self.incarnations[i].records.push(rec(seqs.start)),
                None => self.pinned += 1,
            },
            RecordSummary::Delete { session } => {
                let ended = current.remove(session);
                if let Some(i) = ended {
                    self.incarnations[i].deleted = true;
                }
                self.deletions.push((rec(0), ended));
            }
            RecordSummary::Void => self.voids.push(rec(0)),
            // Kept always: what a remembered position is confirmed by (`docs/DESIGN.md` §3.7).
            RecordSummary::Epoch => {}
        }
    }

    /// How many records of each incarnation stay when the segments `rewritable` says yes
    /// to are written again. An incarnation is needed — `None` not at all, `Some(n)` its
    /// first record and its events before seq `n`, `u64::MAX` all of it — when it lives, or
    /// when a fork of it keeps its first record (live, or deleted but in a segment left as
    /// it is: its record still replays against the parent). Children come after their
    /// parents, so one pass from the newest settles each child before its parent.
    fn kept(&self, rewritable: &impl Fn(usize) -> bool) -> Vec<usize> {
        let mut need: Vec<Option<u64>> = self
            .incarnations
            .iter()
            .map(|i| (!i.deleted).then_some(u64::MAX))
            .collect();
        let mut keep = vec![0; self.incarnations.len()];
        for i in (0..self.incarnations.len()).rev() {
            let inc = &self.incarnations[i];
            keep[i] = Self::kept_len(inc, need[i], rewritable);
            if keep[i] > 0
                && let Some((p, n)) = inc.parent
            {
                need[p] = need[p].max(Some(n));
            }
        }
        keep
    }

    /// How many of `inc`'s records stay: all up to the last one needed or not rewritable.
    fn kept_len(
        inc: &Incarnation,
        need: Option<u64>,
        rewritable: &impl Fn(usize) -> bool,
    ) -> usize {
        let kept = |(k, r): (usize, &Rec)| {
            !rewritable(r.seg) || need.is_some_and(|n| k == 0 || r.first_seq < n)
        };
        inc.records
            .iter()
            .enumerate()
            .rposition(kept)
            .map_or(0, |k| k + 1)
    }

    /// The segments to write again so that every segment `wanted` says yes to gives back
    /// what it can: what goes of an incarnation is a suffix, so a segment holding part of a
    /// suffix that could go brings in every other segment holding part of it (else the part
    /// in a segment left as it is would keep the whole suffix).
    pub(super) fn closure(
        &self,
        segment_count: usize,
        wanted: impl Fn(usize) -> bool,
    ) -> Vec<bool> {
        let mut set: Vec<bool> = (0..segment_count).map(wanted).collect();
        let kept = self.kept(&|_| true);
        let suffixes: Vec<Vec<usize>> = self
            .incarnations
            .iter()
            .zip(kept)
            .map(|(inc, keep)| {
                let mut segs: Vec<usize> = inc.records.iter().skip(keep).map(|r| r.seg).collect();
                segs.dedup();
                segs
            })
            .filter(|s| s.len() > 1)
            .collect();
        loop {
            let mut changed = false;
            for segs in &suffixes {
                let hit = |x: &usize| set.get(*x).copied().unwrap_or(false);
                if segs.iter().any(hit) && !segs.iter().all(hit) {
                    for &x in segs {
                        if let Some(v) = set.get_mut(x) {
                            *v = true;
                        }
                    }
                    changed = true;
                }
            }
            if !changed {
                return set;
            }
        }
    }

    /// The records a compaction of the segments `rewritable` says yes to may leave out.
    pub(super) fn plan(&self, rewritable: impl Fn(usize) -> bool) -> Drops {
        let kept = self.kept(&rewritable);
        let mut out = Drops::default();
        let mut erased = vec![false; self.incarnations.len()];
        for (i, (inc, keep)) in self.incarnations.iter().zip(kept).enumerate() {
            out.records.extend(inc.records.iter().skip(keep));
            if keep == 0 {
                out.sessions_erased += 1;
                erased[i] = true;
            } else if inc.deleted {
                out.sessions_kept += 1;
            }
        }
        out.deletions_after.extend(
            self.deletions
                .iter()
                .filter(|(r, ended)| ended.is_some_and(|i| erased[i]) && rewritable(r.seg))
                .map(|(r, _)| *r),
        );
        out.records.extend(
            self.deletions
                .iter()
                .filter(|(r, ended)| ended.is_none() && rewritable(r.seg))
                .map(|(r, _)| *r),
        );
        out.records
            .extend(self.voids.iter().filter(|r| rewritable(r.seg)).copied());
        out.records.sort_unstable_by_key(|r| r.lsn);
        out
    }
}
