//! Compaction (`docs/DESIGN.md` §3.7): the segments holding records no session reads any
//! more — of deleted sessions, and void space — written again with only the records kept, at
//! their LSNs (positions become sparse, as in Kafka's cleaner), then a full checkpoint that
//! names only live sessions, and the older checkpoints removed. What a session's history is
//! made of, and so what may go, is `history.rs`; writing one segment again is `rewrite.rs`.
//!
//! Beside live writers and readers: the log is read up to a position taken under the writer
//! lock (a record written later is kept), the active segment is sealed first when it holds
//! something that goes, and the segments are replaced newest first, each one by a rename, so
//! every state between two of them is a log that replays (`history.rs` says why).

mod file;
mod history;
mod merge;
mod pipeline;
mod read;
mod rewrite;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::Result;
use crate::codec::frame::RecordLink;
use crate::store::inner::Inner;
use crate::store::log::segments::Segment;
use crate::store::options::CompactionPolicy;
use crate::store::report::{CompactReport, SegmentCompaction};

/// What a compaction leaves out ([`Inner::choose`]).
struct Work {
    drops: history::Drops,
    /// Segments written again only for their expired tombstones.
    refresh: Vec<usize>,
}

/// How a pass writes: to the snapshot's end, with these tombstones, up to `staged_max`
/// bytes staged ahead (0: none).
#[derive(Clone, Copy)]
struct Written {
    end_lsn: u64,
    tombstones: Tombstones,
    staged_max: u64,
}

/// What a dry run measures: the snapshot and what the run would leave out of it.
#[derive(Clone, Copy)]
struct Plan<'a> {
    segments: &'a [Arc<Segment>],
    end_lsn: u64,
    drops: &'a history::Drops,
    refresh: &'a [usize],
    tombstones: Tombstones,
    /// The run seals the active segment first.
    rolls: bool,
}

/// Whether a compaction writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Run {
    /// Measures what the run would do and reports it; writes nothing (read-only stores too).
    Plan,
    /// Writes the segments again.
    Apply,
}

/// Which segments a compaction writes again.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scope {
    /// Every segment holding a record no session reads ([`Store::compact`](crate::store::Store::compact)).
    All,
    /// Only the segments the policy wants (the writer's background compaction).
    Policy(CompactionPolicy),
}

/// Which tombstones a compaction keeps: those written after `cutoff`
/// (`CompactionPolicy::tombstone_ttl`), and whatever its age the one of the record `named` by
/// the checkpoint it wrote first — a writer that restarted from that checkpoint names it in
/// every checkpoint until it appends, and an open confirms it by its tombstone.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tombstones {
    pub(super) cutoff: i64,
    pub(super) named: Option<RecordLink>,
}

impl Tombstones {
    /// The tombstones of a segment written again: all while none expired, else only the named.
    pub(super) fn kept(
        self,
        seg: &Segment,
        all: &[crate::codec::compacted::Tombstone],
    ) -> Vec<crate::codec::compacted::Tombstone> {
        if seg.expired_tombstone_bytes(self.cutoff) == 0 {
            return all.to_vec();
        }
        all.iter()
            .filter(|t| self.named.is_some_and(|n| n.lsn == t.lsn && n.crc == t.crc))
            .copied()
            .collect()
    }
}

/// What a compaction did, and the dead bytes it left, by segment (first LSN): the ones its
/// scope passed over.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub(super) report: CompactReport,
    pub(super) dead_left: BTreeMap<u64, u64>,
}

/// One compaction (or dry run, or space report) of an open store: a procedure over its
/// owners — the writer's tail for the snapshot and the roll, the checkpointer for the full
/// checkpoint first, the segment list it replaces files in.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Compaction<'s> {
    pub(crate) store: &'s Inner,
}

impl Compaction<'_> {
    /// Compacts the log; in a dry run, only reads it and reports what would go.
    pub(super) fn compact(&self, run: Run, scope: Scope) -> Result<Outcome> {
        // A dry run writes nothing: it runs read-only too, beside the store's writer.
        match run {
            Run::Apply => self.store.writer.check_writable()?,
            Run::Plan if self.store.writer.is_closed() => return Err(crate::Error::Closed),
            Run::Plan => {}
        }
        let _one = self.store.maintenance.compaction_turn();
        let mut out = Outcome {
            report: CompactReport {
                dry_run: run == Run::Plan,
                ..CompactReport::default()
            },
            dead_left: BTreeMap::new(),
        };
        let cutoff = self.tombstone_cutoff(scope);
        let (segments, end_lsn) = self.snapshot()?;
        let Some(work) = self.choose(&segments, end_lsn, scope, cutoff, &mut out)? else {
            return Ok(out);
        };
        let report = &mut out.report;
        report.sessions_erased = work.drops.sessions_erased;
        // The active segment sealed when it holds something that goes, then a full
        // checkpoint, and every older one removed, before any record goes: it holds no
        // session this compaction erases (their deletions are before it), so an open never
        // falls back to a chain that would bring one back, whichever renames a crash keeps.
        let last = segments.len().saturating_sub(1);
        let rolls = work
            .drops
            .records
            .iter()
            .chain(&work.drops.deletions_after)
            .any(|r| r.seg == last);
        if run == Run::Plan {
            let plan = Plan {
                segments: &segments,
                end_lsn,
                drops: &work.drops,
                refresh: &work.refresh,
                tombstones: self.tombstones(cutoff),
                rolls,
            };
            self.measure_plan(&plan, report)?;
            report.rolled = rolls;
            return Ok(out);
        }
        if rolls {
            self.roll()?;
            report.rolled = true;
        }
        self.apply(segments, end_lsn, &work, scope, cutoff, report)?;
        Ok(out)
    }

    /// What goes, from one read of the log: the records of deleted sessions no live one
    /// reads (in the segments `scope` wants), and the segments written again only for their
    /// expired tombstones; `None` when nothing goes. Fills in what is reported either way.
    fn choose(
        &self,
        segments: &[Arc<Segment>],
        end_lsn: u64,
        scope: Scope,
        cutoff: i64,
        out: &mut Outcome,
    ) -> Result<Option<Work>> {
        let history = read::read(segments, end_lsn)?;
        let every = history.plan(|_| true);
        let dead = dead_by_segment(segments, &every, cutoff);
        let chosen = match scope {
            Scope::All => vec![true; segments.len()],
            Scope::Policy(p) => {
                let records = (0..segments.len())
                    .map(|si| Segment::record_bytes_in(segments, si, end_lsn))
                    .collect::<Result<Vec<u64>>>()?;
                history.closure(segments.len(), |si| p.wants(dead[si], records[si]))
            }
        };
        let wanted = |si: usize| chosen.get(si).copied().unwrap_or(false);
        let drops = match scope {
            Scope::All => every,
            Scope::Policy(_) => history.plan(wanted),
        };
        // Reported whether or not anything goes: a deletion a fork keeps reclaims nothing.
        out.report.sessions_kept = drops.sessions_kept;
        for (si, seg) in segments.iter().enumerate() {
            if dead[si] > 0 && !wanted(si) {
                out.dead_left.insert(seg.first_lsn, dead[si]);
            }
        }
        // Segments written again only for their expired tombstones.
        let refresh: Vec<usize> = (0..segments.len())
            .filter(|&si| {
                wanted(si)
                    && segments[si].expired_tombstone_bytes(cutoff) > 0
                    && !drops.records.iter().any(|r| r.seg == si)
            })
            .collect();
        if drops.records.is_empty() && refresh.is_empty() {
            return Ok(None);
        }
        Ok(Some(Work { drops, refresh }))
    }

    /// Writes what `work` leaves out: the full checkpoint, the first pass (the records), the
    /// second (the deletions of the sessions the first erased), then the merges.
    fn apply(
        &self,
        segments: Vec<Arc<Segment>>,
        end_lsn: u64,
        work: &Work,
        scope: Scope,
        cutoff: i64,
        report: &mut CompactReport,
    ) -> Result<()> {
        // The record that checkpoint names: its tombstone, if it has one, outlives its expiry.
        // Read before the checkpoint is taken: one the writer appends meanwhile is past the
        // snapshot's end, and this compaction leaves out nothing there.
        let tombstones = self.tombstones(cutoff);
        // The second step finds its segments by first LSN (the first step writes new files).
        let first_lsns: Vec<u64> = segments.iter().map(|s| s.first_lsn).collect();
        // On a disk with less room than the files staged ahead may take, the checkpoint is
        // written first, alone (beside them, it could take the room the file the putter
        // waits for needs), no file is staged ahead (one at a time), and each replaced file
        // is let go at once, so its blocks are there for the next. With room, the old files
        // are let go when the compaction is done: unmapping them beside it slowed it
        // (PERFORMANCE.md, "Compaction on a nearly full disk").
        let staged_max = self.policy(scope).staged_bytes_max;
        let short = self
            .store
            .storage
            .available_bytes("segments")
            .ok()
            .flatten()
            .is_some_and(|free| free < staged_max.saturating_mul(2));
        let releaser = pipeline::Releaser::new(if short {
            pipeline::Release::AtOnce
        } else {
            pipeline::Release::AtEnd
        });
        let staged_max = if short { 0 } else { staged_max };
        if short {
            self.checkpoint_alone()?;
        }
        let first = pipeline::Pass {
            segments,
            records: &work.drops.records,
            refresh: &work.refresh,
            releaser: &releaser,
        };
        let written = Written {
            end_lsn,
            tombstones,
            staged_max,
        };
        self.first_pass(first, written, !short, report)?;
        // The second step leaves out the deletions of the sessions the first erased: a
        // deletion goes only once nothing of its session is left (`history.rs`), so that a
        // replay of the log from its start, at any state between two renames, never finds a
        // session's records without its deletion. They are known from the one read of the
        // log: by segment first LSN, since the segments the first step wrote are new files.
        if !work.drops.deletions_after.is_empty() {
            let now = self.store.segments.full()?;
            let records: Vec<history::Rec> = work
                .drops
                .deletions_after
                .iter()
                .filter_map(|r| {
                    let first = *first_lsns.get(r.seg)?;
                    let mut r = *r;
                    r.seg = now.iter().position(|s| s.first_lsn == first)?;
                    Some(r)
                })
                .collect();
            report.deletions_dropped = records.len();
            let pass = pipeline::Pass {
                segments: now,
                records: &records,
                refresh: &[],
                releaser: &releaser,
            };
            self.rewrite_all(pass, written, report, &mut || Ok(()))?;
        }
        self.merge_small(tombstones, report, &releaser)?;
        report.segments = merged(std::mem::take(&mut report.segments));
        Ok(())
    }

    /// The first pass, with the full checkpoint written `beside` its first files (joined and
    /// durable before the first rename: nothing a reader or an open sees changes until a
    /// rename) unless it was written before.
    fn first_pass(
        &self,
        pass: pipeline::Pass<'_>,
        w: Written,
        beside: bool,
        report: &mut CompactReport,
    ) -> Result<()> {
        std::thread::scope(|s| {
            let mut checkpoint = beside.then(|| s.spawn(|| self.checkpoint_alone()));
            let mut before_first_rename = || match checkpoint.take() {
                Some(h) => match h.join() {
                    Ok(done) => done.map(|_| ()),
                    Err(panic) => std::panic::resume_unwind(panic),
                },
                None => Ok(()),
            };
            let written = self.rewrite_all(pass, w, report, &mut before_first_rename);
            // Joined whatever happened: its error comes second to the rewrite's.
            let checkpointed = before_first_rename();
            written.and(checkpointed)
        })
    }

    /// Live and dead record bytes, per segment: one read of the log, nothing written (a
    /// read-only store too).
    pub(super) fn space(&self) -> Result<Space> {
        let (segments, end_lsn) = self.snapshot()?;
        let history = read::read(&segments, end_lsn)?;
        let every = history.plan(|_| true);
        let dead = dead_by_segment(&segments, &every, self.tombstone_cutoff(Scope::All));
        let segments = segments
            .iter()
            .enumerate()
            .map(|(si, seg)| {
                let records = Segment::record_bytes_in(&segments, si, end_lsn)?;
                // A compacted segment's file holds its tables after the records.
                let table_bytes = if seg.is_compacted() {
                    seg.stored_bytes()?.saturating_sub(records)
                } else {
                    0
                };
                Ok(SegmentSpace {
                    segment: seg.path.clone(),
                    record_bytes: records,
                    dead_bytes: dead[si],
                    table_bytes,
                    tombstones: seg.tombstone_count(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Space { segments })
    }

    /// Writes each group of neighbouring small compacted segments as one file (`merge.rs`),
    /// so the file count falls with the bytes. The list takes the merged file before the
    /// others' files go.
    fn merge_small(
        &self,
        tombstones: Tombstones,
        report: &mut CompactReport,
        releaser: &pipeline::Releaser,
    ) -> Result<()> {
        let segments = self.store.segments.full()?;
        let groups: Vec<Vec<Arc<Segment>>> =
            merge::groups(&segments, self.store.options.segment_bytes_max)
                .into_iter()
                .map(|g| g.iter().filter_map(|&i| segments.get(i).cloned()).collect())
                .collect();
        releaser.release(segments);
        // Merged files staged ahead (their writeback started) while the disk has room for
        // the next beside them, then each put in place: one at a time at worst.
        let mut staged: Vec<(Vec<Arc<Segment>>, file::Staged<'_>)> = Vec::new();
        for members in groups {
            if self.store.writer.is_closed() {
                return Err(crate::Error::Closed);
            }
            let estimate = pipeline::disk_bytes(
                members
                    .iter()
                    .map(|m| m.stored_bytes().ok())
                    .try_fold(0u64, |sum, b| Some(sum.saturating_add(b?))),
            );
            let ahead: u64 = staged.iter().map(|(_, m)| m.file_len()).sum();
            let fits = self
                .store
                .storage
                .available_bytes("segments")
                .ok()
                .flatten()
                .is_none_or(|free| estimate <= free);
            if !staged.is_empty() && (!fits || ahead > self.policy(Scope::All).staged_bytes_max) {
                self.put_merged(std::mem::take(&mut staged), report, releaser)?;
            }
            if !fits {
                releaser.settle();
            }
            let now = self.store.options.clock.now_ms();
            let merged = merge::merge(&*self.store.storage, &members, now, tombstones)?;
            staged.push((members, merged));
        }
        self.put_merged(staged, report, releaser)
    }

    /// Puts merged files in place, in order, each group's old files removed and let go.
    fn put_merged(
        &self,
        staged: Vec<(Vec<Arc<Segment>>, file::Staged<'_>)>,
        report: &mut CompactReport,
        releaser: &pipeline::Releaser,
    ) -> Result<()> {
        for (members, staged) in staged {
            if self.store.writer.is_closed() {
                return Err(crate::Error::Closed);
            }
            let merged = staged.commit(&*self.store.storage)?;
            {
                let mut list = self.store.segments.write();
                list.retain(|s| !members.iter().skip(1).any(|m| m.first_lsn == s.first_lsn));
                if let Some(slot) = list.iter_mut().find(|s| s.first_lsn == merged.first_lsn) {
                    *slot = merged;
                }
            }
            merge::remove_merged(&*self.store.storage, &members)?;
            report.segments_merged += members.len() - 1;
            releaser.release(members);
        }
        Ok(())
    }

    /// A dry run's report: every segment the run writes, measured as the run writes it —
    /// both passes' records left out, the tables and the void that ends a segment — and
    /// the files it then merges. Nothing is written.
    fn measure_plan(&self, plan: &Plan<'_>, report: &mut CompactReport) -> Result<()> {
        let Plan {
            segments,
            end_lsn,
            drops,
            refresh,
            tombstones,
            rolls,
        } = *plan;
        let last = segments.len().saturating_sub(1);
        let mut by_segment: BTreeMap<usize, Vec<history::Rec>> = BTreeMap::new();
        for r in drops.records.iter().chain(&drops.deletions_after) {
            by_segment.entry(r.seg).or_default().push(*r);
        }
        for &si in refresh {
            by_segment.entry(si).or_default();
        }
        report.deletions_dropped = drops.deletions_after.len();
        let mut buf = Vec::new();
        let mut after: BTreeMap<usize, u64> = BTreeMap::new();
        for (si, mut recs) in by_segment {
            let Some(seg) = segments.get(si) else {
                continue;
            };
            recs.sort_unstable_by_key(|r| r.lsn);
            let job = rewrite::Job {
                seg,
                drops: &recs,
                checked_to: end_lsn,
                now_ms: self.store.options.clock.now_ms(),
                tombstones,
                sealed_at: (si == last && rolls && !seg.is_compacted()).then_some(end_lsn),
            };
            let measured = rewrite::measure(&job, &mut buf)?;
            after.insert(si, measured.bytes_after);
            report.segments.push(measured);
        }
        report.segments.sort_by(|a, b| a.segment.cmp(&b.segment));
        // The files the run merges afterwards: the list as the run leaves it.
        let sizes: Vec<merge::Size> = segments
            .iter()
            .enumerate()
            .map(|(si, seg)| match after.get(&si) {
                Some(&bytes) => merge::Size {
                    compacted: true,
                    bytes,
                },
                None => merge::Size {
                    compacted: seg.is_compacted(),
                    bytes: seg.stored_bytes().unwrap_or(u64::MAX),
                },
            })
            .collect();
        report.segments_merged = merge::groups_of(&sizes, self.store.options.segment_bytes_max)
            .iter()
            .map(|g| g.len() - 1)
            .sum();
        Ok(())
    }

    /// What the tombstones of this compaction keep: those written after `cutoff`, and the
    /// one of the log's last record (the record the next checkpoint names; a dry run, read
    /// only, names the one its run would).
    fn tombstones(&self, cutoff: i64) -> Tombstones {
        let named = self.store.writer.end().last_record;
        Tombstones { cutoff, named }
    }

    /// The policy a compaction follows: its own, else the store's, else the default.
    fn policy(&self, scope: Scope) -> CompactionPolicy {
        match scope {
            Scope::Policy(p) => p,
            Scope::All => self.store.options.compaction.unwrap_or_default(),
        }
    }

    /// Tombstones a compaction wrote before this time have outlived
    /// `CompactionPolicy::tombstone_ttl` (the policy's, else the default's).
    fn tombstone_cutoff(&self, scope: Scope) -> i64 {
        let ttl = self.policy(scope).tombstone_ttl;
        self.store
            .options
            .clock
            .now_ms()
            .saturating_sub(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
    }

    /// The segments and the log end: a writer's under its tail lock (nothing is appended
    /// between the two), a reader's where its last scan stopped.
    fn snapshot(&self) -> Result<(Vec<Arc<Segment>>, u64)> {
        let writer = &self.store.writer;
        let tail = writer.tail();
        let end = match tail.as_ref() {
            Some(t) => {
                writer.check_poison()?;
                t.next_lsn
            }
            None => writer.scanned().lsn,
        };
        Ok((self.store.segments.full()?, end))
    }

    /// Seals the active segment (when it holds records) so that compaction may write it.
    fn roll(&self) -> Result<()> {
        let mut guard = self.store.writer.tail();
        self.store.writer.check_poison()?;
        let Some(tail) = guard.as_mut() else {
            return Ok(());
        };
        if let Err(e) = tail.roll_now() {
            return self.store.writer.poison(e);
        }
        self.store.writer.publish(tail);
        Ok(())
    }

    /// A full checkpoint, then every older checkpoint file removed: they may hold what was
    /// left out (a deleted session's header and state, before its deletion).
    fn checkpoint_alone(&self) -> Result<Option<RecordLink>> {
        let Some(meta) = self
            .store
            .checkpoint_unchecked(crate::store::checkpoint::files::CheckpointKind::Full)?
        else {
            return Ok(None);
        };
        crate::store::checkpoint::files::remove(
            &*self.store.storage,
            crate::store::checkpoint::files::Older::Than(meta.generation),
        )?;
        Ok(meta.last_record)
    }
}

/// One entry per segment, oldest first: a segment both passes wrote is reported once (its
/// bytes before the first, after the second).
fn merged(parts: Vec<SegmentCompaction>) -> Vec<SegmentCompaction> {
    // In the order the passes wrote them: a later entry of a segment is its second pass.
    let mut out: Vec<SegmentCompaction> = Vec::new();
    for p in parts {
        match out.iter_mut().find(|s| s.segment == p.segment) {
            Some(s) => {
                s.bytes_after = p.bytes_after;
                s.records_dropped += p.records_dropped;
            }
            None => out.push(p),
        }
    }
    out.sort_by(|a, b| a.segment.cmp(&b.segment));
    out
}

/// The live and dead record bytes of a log ([`Store::space`](crate::store::Store::space)).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Space {
    /// Every segment, oldest first.
    pub segments: Vec<SegmentSpace>,
}

impl Space {
    /// Record bytes over all segments.
    pub fn record_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.record_bytes).sum()
    }

    /// Dead record bytes over all segments: what a compaction would give back.
    pub fn dead_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.dead_bytes).sum()
    }

    /// Live record bytes: the records some session reads.
    pub fn live_bytes(&self) -> u64 {
        self.record_bytes() - self.dead_bytes()
    }

    /// Bytes of compacted segments' run and tombstone tables (and footers) over all segments:
    /// file bytes beside the records, mostly tombstones under churn (12 bytes per record left
    /// out, kept `CompactionPolicy::tombstone_ttl`).
    pub fn table_bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.table_bytes).sum()
    }

    /// Tombstones over all segments: records left out by compactions that confirm them by
    /// tombstone (written before epochs, or named by a checkpoint: `docs/DESIGN.md` §3.7).
    pub fn tombstones(&self) -> u64 {
        self.segments.iter().map(|s| s.tombstones).sum()
    }
}

/// One segment of a [`Space`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SegmentSpace {
    /// The segment file, relative to the store.
    pub segment: String,
    /// Its record bytes (of a compacted segment: the records it kept).
    pub record_bytes: u64,
    /// Of those, the bytes no session reads: records of deleted sessions no live fork reads,
    /// void space, and the deletions of sessions of which nothing else would be left.
    pub dead_bytes: u64,
    /// A compacted segment's run and tombstone tables and footer (0 for one appends wrote).
    pub table_bytes: u64,
    /// The tombstones in its table.
    pub tombstones: u64,
}

/// The dead bytes of each segment of a snapshot: what a plan leaves out, the deletions its
/// second step would, and tombstone tables written before `cutoff`.
fn dead_by_segment(segments: &[Arc<Segment>], drops: &history::Drops, cutoff: i64) -> Vec<u64> {
    let mut dead: Vec<u64> = segments
        .iter()
        .map(|s| s.expired_tombstone_bytes(cutoff))
        .collect();
    for r in drops.records.iter().chain(&drops.deletions_after) {
        if let Some(d) = dead.get_mut(r.seg) {
            *d += r.len;
        }
    }
    dead
}
