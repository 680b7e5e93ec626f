//! Checkpoint chains as recovery uses them: the headers read before the segments are listed
//! (so every checkpoint seen was written after the log it covers was durable), the durable
//! mark they set, the confirmation of a checkpoint against the log, the newest chain open
//! applies, and the sessions the newest readable chain remembers (salvage names what was lost
//! by them). Open and salvage share this.

use crate::codec::frame::RecordLink;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::BTreeMap;

use crate::Result;
use crate::codec::checkpoint::{CheckpointMeta, checkpoint_path};
use crate::storage::Storage;
use crate::store::catalog::entries::Entries;
use crate::store::checkpoint::files::{self, Opened};
use crate::store::checkpoint::files::{BodyCheck, LoadedBody};
use crate::store::log::segments::SegmentList;

/// The checkpoint files listed, by generation, each header read and checked when first asked
/// for: an open reads the newest chain's (the chain it applies, usually), not the previous
/// chain's kept beside it (`docs/DESIGN.md` §3.5).
pub(in crate::store) struct CheckpointHeaders<'s> {
    storage: &'s dyn Storage,
    /// Every generation listed; `None` once read when its header does not check out.
    by_generation: BTreeMap<u64, OnceCell<Option<Opened>>>,
    /// A file listed was gone when opened: retention removed it (a reader beside a writer).
    any_gone: Cell<bool>,
    /// Files whose header does not check out, with the reason (of the headers read so far).
    discarded: RefCell<Vec<String>>,
}

/// What the log says of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Confirmation {
    /// The record it names is there with its checksum, ending where it says.
    Holds,
    /// Another valid record is where it points: it belongs to another log (a stale copy).
    Stale,
    /// The record it names is damaged, cut, missing or zeros: the checkpoint cannot be used,
    /// but it still vouches for the log before its position.
    Unconfirmed(&'static str),
}

/// A chain to apply: the bodies oldest first, the newest member's meta, the full base's
/// generation.
pub(in crate::store) struct Chosen {
    pub(in crate::store) bodies: Vec<LoadedBody>,
    pub(in crate::store) meta: CheckpointMeta,
    pub(in crate::store) base: u64,
}

impl<'s> CheckpointHeaders<'s> {
    /// Lists the checkpoint files (headers and bodies are read on use). Listed before the
    /// segments: a file renamed into place is never changed and a generation is never
    /// written twice, so whatever header is read later was written after the log it covers
    /// was durable, and the segments listed next cover it.
    pub(in crate::store) fn load(storage: &'s dyn Storage) -> Result<CheckpointHeaders<'s>> {
        Ok(CheckpointHeaders {
            storage,
            by_generation: files::list(storage)?
                .into_iter()
                .map(|g| (g, OnceCell::new()))
                .collect(),
            any_gone: Cell::new(false),
            discarded: RefCell::new(Vec::new()),
        })
    }

    /// Checkpoint `g`'s header, read and checked the first time it is asked for; `None` when
    /// it is not listed or does not check out (then named in `discarded`, unless gone).
    fn opened(&self, g: u64) -> Option<&Opened> {
        self.by_generation
            .get(&g)?
            .get_or_init(|| match files::open_header(self.storage, g) {
                Ok(opened) => Some(opened),
                Err(unusable) => {
                    if unusable.gone {
                        self.any_gone.set(true);
                    } else {
                        self.discarded.borrow_mut().push(unusable.why);
                    }
                    None
                }
            })
            .as_ref()
    }

    /// Every header read (`verify` names each that does not check out).
    pub(in crate::store) fn read_all(&self) {
        for &g in self.by_generation.keys() {
            self.opened(g);
        }
    }

    /// The newest generation whose header checks out (headers read newest first until one
    /// does).
    pub(in crate::store) fn newest_readable(&self) -> Option<u64> {
        self.by_generation
            .keys()
            .rev()
            .copied()
            .find(|&g| self.opened(g).is_some())
    }

    /// The files whose header did not check out, of those read so far, with the reason.
    pub(in crate::store) fn discarded(&self) -> Vec<String> {
        self.discarded.borrow().clone()
    }

    /// The newest generation listed, whether or not its header checks out: the next
    /// checkpoint is numbered after it, so no generation is ever written twice.
    pub(in crate::store) fn newest(&self) -> Option<u64> {
        self.by_generation.keys().next_back().copied()
    }

    /// The checkpoints as confirmed against the log in `segments`: what the durable mark and
    /// the choice of a chain read. Each is confirmed when first asked, at most once — an
    /// open usually asks of the newest alone (each confirmation reads a record of the log,
    /// and a store keeps up to two chains of checkpoint files).
    pub(in crate::store) fn confirm<'h>(&'h self, segments: &'h SegmentList) -> Confirmed<'h, 's> {
        Confirmed {
            headers: self,
            segments,
            by_generation: self
                .by_generation
                .keys()
                .map(|&g| (g, std::cell::OnceCell::new()))
                .collect(),
        }
    }

    /// The generations of `g`'s chain, newest first, when it reaches a full checkpoint.
    fn chain(&self, g: u64) -> Option<Vec<u64>> {
        let mut chain = vec![g];
        let mut base = self.opened(g)?.header.meta.base;
        while base != 0 {
            let member = self.opened(base)?;
            chain.push(base);
            base = member.header.meta.base;
        }
        Some(chain)
    }

    /// The bodies of a chain (`chain` newest first), oldest first: the newest checked
    /// whole, the earlier ones only as far as the newest one's index needs them.
    fn bodies(&self, chain: &[u64]) -> std::result::Result<Vec<LoadedBody>, String> {
        chain
            .iter()
            .enumerate()
            .rev()
            .map(|(i, g)| {
                let check = if i == 0 {
                    BodyCheck::Whole
                } else {
                    BodyCheck::Regions
                };
                self.opened(*g)
                    .ok_or_else(|| format!("{}: gone", checkpoint_path(*g)))?
                    .body(check)
                    .map_err(|unusable| unusable.why)
            })
            .collect()
    }

    /// The sessions the newest chain whose bodies apply remembers (salvage compares them with
    /// what the log still holds).
    pub(in crate::store) fn remembered(&self) -> Option<Entries> {
        self.by_generation.keys().rev().find_map(|&g| {
            let bodies = self.bodies(&self.chain(g)?).ok()?;
            let mut catalog = Entries::default();
            crate::store::checkpoint::load::apply_chain(bodies, &mut catalog).ok()?;
            // Salvage compares every session with the log.
            catalog.load_all().ok()?;
            Some(catalog)
        })
    }
}

/// Each checkpoint header confirmed against one segment list ([`CheckpointHeaders::confirm`]),
/// when first asked.
pub(in crate::store) struct Confirmed<'h, 's> {
    headers: &'h CheckpointHeaders<'s>,
    segments: &'h SegmentList,
    by_generation: BTreeMap<u64, std::cell::OnceCell<Confirmation>>,
}

impl Confirmed<'_, '_> {
    /// What the log says of checkpoint `g` (confirmed now if not yet).
    fn of(&self, g: u64) -> Option<Confirmation> {
        let opened = self.headers.opened(g)?;
        let cell = self.by_generation.get(&g)?;
        Some(*cell.get_or_init(|| confirm(self.segments, &opened.header.meta)))
    }

    /// The furthest position any checkpoint header vouches for: every one does, whether or
    /// not its state can be used, unless the log holds another valid record where it points.
    /// Generations are numbered in the order they were written, each at the log's end, and
    /// salvage (the one operation that cuts a log short) removes every checkpoint: so the
    /// newest header that checks out and is not stale reaches furthest, and the headers
    /// behind it need not be read.
    pub(in crate::store) fn durable_mark(&self) -> u64 {
        self.headers
            .by_generation
            .keys()
            .rev()
            .find_map(|&g| {
                let covered = self.headers.opened(g)?.header.meta.covered_lsn;
                (self.of(g) != Some(Confirmation::Stale)).then_some(covered)
            })
            .unwrap_or(0)
    }

    /// The newest chain that the log confirms and whose bodies check out; every checkpoint
    /// passed over on the way is named in `discarded`.
    pub(in crate::store) fn choose(&self, discarded: &mut Vec<String>) -> Option<Chosen> {
        let headers = self.headers;
        for &g in headers.by_generation.keys().rev() {
            let Some(opened) = headers.opened(g) else {
                continue;
            };
            let meta = opened.header.meta;
            match self
                .of(g)
                .unwrap_or(Confirmation::Unconfirmed("not confirmed"))
            {
                Confirmation::Holds => {}
                Confirmation::Stale => {
                    discarded.push(format!(
                        "{}: the log has another record where it points (stale checkpoint)",
                        checkpoint_path(g)
                    ));
                    continue;
                }
                Confirmation::Unconfirmed(why) => {
                    discarded.push(format!("{}: {why}", checkpoint_path(g)));
                    continue;
                }
            }
            let Some(chain) = headers.chain(g) else {
                // A base that retention removed after the listing is not damage.
                if !headers.any_gone.get() {
                    discarded.push(format!("{}: its chain lacks a base", checkpoint_path(g)));
                }
                continue;
            };
            match headers.bodies(&chain) {
                Ok(bodies) => {
                    return Some(Chosen {
                        bodies,
                        meta,
                        base: chain.last().copied().unwrap_or(g),
                    });
                }
                Err(why) => discarded.push(why),
            }
        }
        None
    }
}

/// Whether the log holds the record a checkpoint names, with its checksum, ending where the
/// checkpoint says.
pub(in crate::store) fn confirm(segments: &SegmentList, meta: &CheckpointMeta) -> Confirmation {
    use Confirmation::Unconfirmed;
    let Some(RecordLink { lsn, crc }) = meta.last_record else {
        return if meta.covered_lsn == 0 {
            Confirmation::Holds
        } else {
            Unconfirmed("no record named but a position past 0")
        };
    };
    match crate::store::log::record_at::frame_at(segments, lsn) {
        Ok((c, frame_len)) if c == crc && lsn + frame_len as u64 == meta.covered_lsn => {
            Confirmation::Holds
        }
        // A compaction that began with this checkpoint left its record out: the segment's
        // tombstone names it by position and checksum, and the segment reaches the position.
        _ if left_out_before(segments, lsn, crc, meta.covered_lsn) => Confirmation::Holds,
        Ok(_) => Confirmation::Stale,
        Err(why) => Unconfirmed(why),
    }
}

/// Whether compaction left out the record at `lsn` with checksum `crc`, in a segment that
/// runs on to `covered_lsn` at least.
fn left_out_before(segments: &SegmentList, lsn: u64, crc: u32, covered_lsn: u64) -> bool {
    crate::store::log::record_at::left_out(segments, lsn, crc)
        && covered_lsn > lsn
        && segments
            .find(lsn)
            .is_some_and(|s| s.end_lsn().is_ok_and(|end| end >= covered_lsn))
}
