//! The shared state of an open store: the storage, the segment list, the write tail, the
//! catalog, and the bookkeeping of syncs and checkpoints. `write`, `checkpointing`, `refresh`
//! and `read` add its behaviour; the [`Store`](crate::store::Store) API wraps it.

use crate::codec::frame::RecordLink;
use std::sync::atomic::{AtomicBool, AtomicU64};

use parking_lot::{Mutex, RwLock};

use crate::storage::{LockGuard, Storage};
use crate::store::catalog::entries::Catalog;
use crate::store::log::segments::SegmentList;
use crate::store::options::StoreOptions;
use crate::store::report::OpenReport;
use crate::store::writer::tail::Tail;
use std::sync::Arc;

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) options: StoreOptions,
    pub(crate) read_only: bool,
    pub(crate) lock: Mutex<Option<LockGuard>>,
    pub(crate) segments: SegmentList,
    /// The write path: held while a record is planned, written and applied.
    pub(crate) tail: Mutex<Option<Tail>>,
    /// Read-only stores: where the last scan stopped, and the last record seen.
    pub(crate) read_end: Mutex<(u64, Option<RecordLink>)>,
    pub(crate) catalog: RwLock<Catalog>,
    /// Group commit: the durable log end, the active file, the round in progress.
    pub(crate) commit: crate::store::writer::commit::GroupCommit,
    /// Set by the first failed write or sync; checked under `tail` by every write.
    pub(crate) poison: crate::store::writer::poison::Poison,
    /// The log end at which a checkpoint is due: the last checkpoint's end (or the log end at
    /// open) plus the interval. A plain load per write, where counting the bytes was a locked
    /// add per record (3.6 % of a buffered append).
    pub(crate) checkpoint_due_lsn: AtomicU64,
    pub(crate) chain_state: Mutex<crate::store::checkpoint::state::CheckpointState>,
    pub(crate) changes: crate::store::writer::changes::Changes,
    pub(crate) closed: AtomicBool,
    /// One compaction at a time.
    pub(crate) compacting: Mutex<()>,
    /// The writer's background work (retention, compaction by policy).
    pub(crate) maintenance: crate::store::maintenance::Maintenance,
    pub(crate) report: OpenReport,
}
