//! A session's per-event locations (`docs/DESIGN.md` §3.5): the ones in memory, and the ones
//! still in the checkpoint files the open loaded the session from — each checkpoint run
//! checked against its own CRC and decoded the first time a location in it is used, so an
//! open costs what the checkpoint's table costs, not what the history holds.
//!
//! Three parts in seq order: `mem` (a [`SharedVec`], so a fork shares its parent's prefix),
//! `lazy` (checkpoint runs, shared by reference with forks), `tail` (appended after an open
//! that left `lazy` in place: an append never decodes the history it follows).

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::codec::checkpoint::LocRun;
#[cfg(test)]
use crate::codec::checkpoint::{BodyWriter, SessionRef};
use crate::codec::{CorruptionKind, EventLoc};
use crate::model::SharedVec;
use crate::storage::FileView;
use crate::{Error, Result};

/// One session's run of locations in a checkpoint file.
#[derive(Debug, Clone)]
pub(crate) struct MappedRun {
    /// The checkpoint file's bytes (a map on real files).
    pub(crate) view: FileView,
    /// Where the body starts in `view`.
    pub(crate) body_at: usize,
    /// Where the run is in the body.
    pub(crate) run: LocRun,
    /// The checkpoint's path, for errors.
    pub(crate) path: Arc<str>,
}

impl MappedRun {
    fn body(&self) -> &[u8] {
        self.view.get(self.body_at..).unwrap_or_default()
    }

    fn damage(&self) -> RunDamage {
        RunDamage {
            path: Arc::clone(&self.path),
            offset: (self.body_at + self.run.start) as u64,
        }
    }

    /// The run's raw bytes, checked.
    fn checked(&self) -> std::result::Result<&[u8], RunDamage> {
        self.run.checked(self.body()).map_err(|_| self.damage())
    }
}

/// Where a run failed its check.
#[derive(Debug, Clone)]
struct RunDamage {
    path: Arc<str>,
    offset: u64,
}

impl RunDamage {
    fn error(&self) -> Error {
        Error::corruption(&self.path, self.offset, CorruptionKind::CheckpointLocations)
    }
}

/// Runs not yet decoded, and their decoding once done.
#[derive(Debug)]
struct Lazy {
    runs: Vec<MappedRun>,
    count: u64,
    decoded: OnceLock<std::result::Result<Vec<EventLoc>, RunDamage>>,
}

impl Lazy {
    fn decoded(&self) -> Result<&[EventLoc]> {
        self.decoded
            .get_or_init(|| {
                let mut all = Vec::with_capacity(crate::width::index(self.count));
                for r in &self.runs {
                    all.extend(r.run.decode(r.body()).map_err(|_| r.damage())?);
                }
                Ok(all)
            })
            .as_deref()
            .map_err(RunDamage::error)
    }
}

/// The first `used` locations of a shared [`Lazy`].
#[derive(Debug, Clone)]
struct LazyPart {
    shared: Arc<Lazy>,
    used: u64,
}

/// A session's locations: `mem`, then `lazy`, then `tail`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Locations {
    mem: SharedVec<EventLoc>,
    lazy: Option<LazyPart>,
    /// Empty unless `lazy` is there (appends go to `mem` otherwise).
    tail: Vec<EventLoc>,
}

impl From<SharedVec<EventLoc>> for Locations {
    fn from(mem: SharedVec<EventLoc>) -> Self {
        Self {
            mem,
            lazy: None,
            tail: Vec::new(),
        }
    }
}

impl Locations {
    fn lazy_len(&self) -> u64 {
        self.lazy.as_ref().map_or(0, |l| l.used)
    }

    /// How many locations (nothing decoded).
    pub(crate) fn len(&self) -> u64 {
        self.mem.len() + self.lazy_len() + self.tail.len() as u64
    }

    /// The location of `seq`, decoding its checkpoint run on first use.
    ///
    /// # Errors
    /// `Corruption` when the run fails its CRC.
    pub(crate) fn get(&self, seq: u64) -> Result<Option<EventLoc>> {
        let mem = self.mem.len();
        if seq < mem {
            return Ok(self.mem.get(seq).copied());
        }
        let lazy = self.lazy_len();
        if seq - mem < lazy {
            let Some(part) = &self.lazy else {
                return Ok(None);
            };
            let i = crate::width::index(seq - mem);
            return Ok(part.shared.decoded()?.get(i).copied());
        }
        let i = crate::width::index(seq - mem - lazy);
        Ok(self.tail.get(i).copied())
    }

    /// Every location in order (the lazy part decoded).
    ///
    /// # Errors
    /// As [`Locations::get`].
    pub(crate) fn iter(&self) -> Result<impl Iterator<Item = EventLoc> + '_> {
        let lazy: &[EventLoc] = match &self.lazy {
            Some(part) => {
                let all = part.shared.decoded()?;
                all.get(..crate::width::index(part.used)).unwrap_or(all)
            }
            None => &[],
        };
        Ok(self
            .mem
            .iter()
            .copied()
            .chain(lazy.iter().copied())
            .chain(self.tail.iter().copied()))
    }

    /// Appends one location (never decodes the lazy part).
    pub(crate) fn push(&mut self, loc: EventLoc) {
        // Locations ascend: a session's events lie in the log in seq order (reads batch them
        // by position, and a checkpoint run stores them as deltas).
        debug_assert!(
            self.tail
                .last()
                .or(if self.lazy.is_none() {
                    self.mem.last()
                } else {
                    None
                })
                .is_none_or(|l| (l.lsn, l.offset) < (loc.lsn, loc.offset)),
            "a location behind the last one"
        );
        if self.lazy.is_some() {
            self.tail.push(loc);
        } else {
            self.mem.push(loc);
        }
    }

    /// Appends a checkpoint run (a delta's locations after the ones the chain holds).
    ///
    /// # Errors
    /// When the run must be decoded here (locations were appended after a lazy part, or the
    /// lazy part is shared) and fails its CRC.
    pub(crate) fn append_run(&mut self, run: MappedRun) -> Result<()> {
        let count = run.run.count;
        if !self.tail.is_empty() {
            let decoded = run
                .run
                .decode(run.body())
                .map_err(|_| run.damage().error())?;
            self.tail.extend(decoded);
            return Ok(());
        }
        match &mut self.lazy {
            None => {
                self.lazy = Some(LazyPart {
                    shared: Arc::new(Lazy {
                        runs: vec![run],
                        count,
                        decoded: OnceLock::new(),
                    }),
                    used: count,
                });
                Ok(())
            }
            Some(part) => match Arc::get_mut(&mut part.shared) {
                Some(lazy) if lazy.decoded.get().is_none() && part.used == lazy.count => {
                    lazy.runs.push(run);
                    lazy.count += count;
                    part.used += count;
                    Ok(())
                }
                _ => {
                    let decoded = run
                        .run
                        .decode(run.body())
                        .map_err(|_| run.damage().error())?;
                    self.tail.extend(decoded);
                    Ok(())
                }
            },
        }
    }

    /// Locations that share this session's first `len` without copying them (a fork's).
    ///
    /// # Errors
    /// As [`Locations::get`], when the prefix reaches past the lazy part (which is then
    /// decoded and moved into memory).
    pub(crate) fn share_prefix(&mut self, len: u64) -> Result<Locations> {
        let mem = self.mem.len();
        if len <= mem {
            return Ok(self.mem.share_prefix(len).into());
        }
        if len <= mem + self.lazy_len() {
            let mut out: Locations = self.mem.share_prefix(mem).into();
            out.lazy = self.lazy.clone().map(|mut part| {
                part.used = len - mem;
                part
            });
            return Ok(out);
        }
        self.load_into_memory()?;
        Ok(self.mem.share_prefix(len).into())
    }

    /// Moves the lazy part and the tail into memory.
    fn load_into_memory(&mut self) -> Result<()> {
        if let Some(part) = &self.lazy {
            let all = part.shared.decoded()?;
            let used = crate::width::index(part.used);
            self.mem.append_vec(all.get(..used).unwrap_or(all).to_vec());
            self.lazy = None;
            let tail = std::mem::take(&mut self.tail);
            self.mem.append_vec(tail);
        }
        Ok(())
    }

    /// Copies shared memory chunks into a private vector (when a fork's parent is deleted);
    /// a lazy part stays shared: it is immutable.
    pub(crate) fn materialize(&mut self) {
        self.mem.materialize();
    }

    /// Drops spare capacity.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.mem.shrink_to_fit();
        self.tail.shrink_to_fit();
    }

    /// Heap bytes, as [`SharedVec::heap_bytes`]; a decoded lazy part counts as one shared
    /// chunk, an undecoded one as nothing (its bytes are the checkpoint file's).
    pub(crate) fn heap_bytes(&self, mut chunk: impl FnMut(usize, usize)) -> usize {
        if let Some(part) = &self.lazy
            && let Some(Ok(v)) = part.shared.decoded.get()
        {
            chunk(
                Arc::as_ptr(&part.shared) as usize,
                v.capacity() * std::mem::size_of::<EventLoc>(),
            );
        }
        self.mem.heap_bytes(chunk) + self.tail.capacity() * std::mem::size_of::<EventLoc>()
    }

    /// Bytes of locations still only in the checkpoint file (mapped, not decoded): the lazy
    /// part's runs, `(address, bytes)` to `chunk` so a part forks share counts once.
    pub(crate) fn mapped_bytes(&self, mut chunk: impl FnMut(usize, usize)) {
        if let Some(part) = &self.lazy
            && part.shared.decoded.get().is_none()
        {
            let count = crate::width::index(part.shared.count);
            chunk(
                Arc::as_ptr(&part.shared) as usize,
                count.saturating_mul(EventLoc::ENCODED_LEN),
            );
        }
    }

    /// Writes the session into a layout-2 checkpoint body with its locations `from..` (tests
    /// build layout-2 files with it; the store writes layout 3 through
    /// [`Locations::pieces_from`]).
    ///
    /// # Errors
    /// As [`Locations::pieces_from`]; the inner error is the body writer's.
    #[cfg(test)]
    pub(crate) fn write_into(
        &self,
        w: &mut BodyWriter,
        s: &SessionRef<'_>,
        from: u64,
    ) -> Result<std::result::Result<(), &'static str>> {
        let (count, pieces) = self.pieces_from(from)?;
        let pieces: Vec<&[u8]> = pieces.iter().map(|p| &**p).collect();
        Ok(w.session_raw(s, count, &pieces))
    }

    /// Locations `from..` as their encoded bytes, and how many: the lazy part's runs borrowed
    /// as raw bytes (each checked first), never decoded.
    ///
    /// # Errors
    /// `Corruption` for a lazy run that fails its CRC.
    pub(crate) fn pieces_from(&self, from: u64) -> Result<(u64, Vec<Cow<'_, [u8]>>)> {
        let mut pieces: Vec<Cow<'_, [u8]>> = Vec::new();
        let encoded = |locs: &mut dyn Iterator<Item = EventLoc>| {
            let mut out = Vec::new();
            for loc in locs {
                loc.encode(&mut out);
            }
            out
        };
        let mem = self.mem.len();
        if from < mem {
            pieces.push(Cow::Owned(encoded(&mut self.mem.range(from..mem))));
        }
        let mut skip = from.saturating_sub(mem);
        if let Some(part) = &self.lazy {
            let mut left = part.used;
            for r in &part.shared.runs {
                if left == 0 {
                    break;
                }
                let bytes = r.checked().map_err(|d| d.error())?;
                let n = r.run.count.min(left);
                left -= n;
                if skip >= n {
                    skip -= n;
                    continue;
                }
                let at = crate::width::index(skip) * EventLoc::ENCODED_LEN;
                let end = crate::width::index(n) * EventLoc::ENCODED_LEN;
                pieces.push(Cow::Borrowed(bytes.get(at..end).unwrap_or_default()));
                skip = 0;
            }
        }
        let from_tail = crate::width::index(skip);
        if from_tail < self.tail.len() {
            pieces.push(Cow::Owned(encoded(
                &mut self
                    .tail
                    .get(from_tail..)
                    .unwrap_or_default()
                    .iter()
                    .copied(),
            )));
        }
        Ok((self.len().saturating_sub(from), pieces))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::checkpoint::{BodyWriter, decode_body};
    use crate::model::SessionState;

    fn loc(i: u64) -> EventLoc {
        EventLoc {
            lsn: i * 10,
            offset: u32::try_from(i).unwrap(),
            len: 7,
        }
    }

    /// Session "s" with `state`, its locations from 0.
    fn session_ref(state: &SessionState) -> SessionRef<'_> {
        SessionRef {
            id: "s",
            header_json: b"{}",
            created_lsn: 0,
            parent: None,
            loc_base: 0,
            state,
        }
    }

    /// A checkpoint body holding one session with locations `0..n`, as mapped runs.
    fn mapped(n: u64) -> (FileView, Vec<LocRun>) {
        let state = SessionState::new();
        let r = session_ref(&state);
        let mut w = BodyWriter::new();
        let first: Vec<EventLoc> = (0..n).map(loc).collect();
        let second: Vec<EventLoc> = (n..2 * n).map(loc).collect();
        w.session(&r, first.into_iter()).unwrap();
        w.session(&r, second.into_iter()).unwrap();
        let body = w.finish(std::iter::empty()).unwrap();
        let runs = decode_body(&body)
            .unwrap()
            .sessions
            .iter()
            .map(|s| s.locs)
            .collect();
        (FileView::owned(body), runs)
    }

    fn run(view: &FileView, run: LocRun) -> MappedRun {
        MappedRun {
            view: view.clone(),
            body_at: 0,
            run,
            path: Arc::from("checkpoints/x.ckpt"),
        }
    }

    #[test]
    fn lazy_runs_read_as_the_locations_they_hold_through_pushes_and_forks() {
        let (view, runs) = mapped(5);
        let mut l = Locations::default();
        l.append_run(run(&view, runs[0])).unwrap();
        l.append_run(run(&view, runs[1])).unwrap();
        assert_eq!(l.len(), 10);
        l.push(loc(10));
        assert_eq!(l.len(), 11);
        let all: Vec<EventLoc> = l.iter().unwrap().collect();
        assert_eq!(all, (0..11).map(loc).collect::<Vec<_>>());
        for seq in 0..12 {
            assert_eq!(l.get(seq).unwrap(), (seq < 11).then(|| loc(seq)), "{seq}");
        }
        // A fork inside the lazy part shares it; one past it loads the parent into memory.
        let child = l.share_prefix(7).unwrap();
        assert_eq!(
            child.iter().unwrap().collect::<Vec<_>>(),
            (0..7).map(loc).collect::<Vec<_>>()
        );
        let longer = l.share_prefix(11).unwrap();
        assert_eq!(longer.len(), 11);
        assert!(l.lazy.is_none());
        assert_eq!(l.iter().unwrap().collect::<Vec<_>>(), all);
    }

    #[test]
    fn a_checkpoint_written_from_lazy_locations_copies_their_bytes() {
        let (view, runs) = mapped(4);
        let mut l = Locations::from(SharedVec::default());
        l.append_run(run(&view, runs[0])).unwrap();
        l.push(loc(4));
        let state = SessionState::new();
        let r = session_ref(&state);
        for from in 0..=5 {
            let mut w = BodyWriter::new();
            l.write_into(&mut w, &r, from).unwrap().unwrap();
            let body = w.finish(std::iter::empty()).unwrap();
            let snap = &decode_body(&body).unwrap().sessions[0];
            assert_eq!(
                snap.locs.decode(&body).unwrap(),
                (from..5).map(loc).collect::<Vec<_>>()
            );
        }
        assert!(
            l.lazy.as_ref().unwrap().shared.decoded.get().is_none(),
            "never decoded"
        );
    }

    #[test]
    fn a_damaged_run_is_corruption_naming_the_checkpoint_and_offset() {
        let (view, runs) = mapped(3);
        let mut bytes = view.to_vec();
        let at = runs[0].start + 5;
        bytes[at] ^= 1;
        let view = FileView::owned(bytes);
        let mut l = Locations::default();
        l.append_run(run(&view, runs[0])).unwrap();
        assert_eq!(l.len(), 3, "the length needs no decoding");
        match l.get(1) {
            Err(Error::Corruption {
                segment,
                offset,
                kind,
            }) => {
                assert_eq!(segment, "checkpoints/x.ckpt");
                assert_eq!(offset, runs[0].start as u64);
                assert_eq!(kind, CorruptionKind::CheckpointLocations);
            }
            other => panic!("{other:?}"),
        }
        assert!(l.iter().is_err());
    }
}
