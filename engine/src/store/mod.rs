//! The durable store (DESIGN §3): many sessions in one checksummed, append-only segment log,
//! a resident index per session, a delta checkpoint, and repair on open. This module only
//! sequences I/O; every byte's layout is `codec`'s and every rule is `model`'s.
//!
//! | file | concern |
//! |---|---|
//! | `api.rs` | the [`Store`] API |
//! | `inner.rs` | the shared state of an open store |
//! | `catalog.rs` | per-session resident state: header, state, locations |
//! | `locations.rs` | a session's locations: in memory, or checkpoint runs checked and decoded on first use |
//! | `segments.rs` | the segment list, reads by location, the append tail and roll |
//! | `log/discover.rs` | the segment files and the segment-header rules |
//! | `log/cursor.rs` | **the log cursor**: the only frame loop, deciding through the table |
//! | `recovery.rs` | **the recovery decision table** |
//! | `replay.rs` | applying one record to the catalog (open, `refresh`, salvage) |
//! | `chain.rs` | checkpoint chains: headers, the durable mark, confirmation, the chain used |
//! | `open.rs` | open: lock, checkpoints, segments, chain, scan; writes only once decided |
//! | `scan.rs` | the recovery scan: the cursor over the log from a position, replaying |
//! | `refresh.rs` | a read-only view catching up with a live writer (or a salvage) |
//! | `salvage.rs` | salvage: plan (resync past damage, cut only damaged sessions), apply by replacement files |
//! | `write.rs` | the write path: plan, encode, write, commit to the catalog |
//! | `commit.rs` | group commit: one `fdatasync` per round for every appender it covers |
//! | `poison.rs` | the poisoned state after a failed write or sync |
//! | `read.rs` | reads by location |
//! | `checkpoint.rs` | checkpoint files and the catalog |
//! | `checkpointing.rs` | taking checkpoints: policy, merge, retention |
//! | `verify.rs` | full replay compared with the checkpoint |
//! | `subscribe.rs` | following a session |
//! | `report.rs` | every report type (open, salvage, verify): plain data |

mod api;
mod catalog;
mod chain;
mod changes;
mod checkpoint;
mod checkpoint_state;
mod checkpointing;
mod commit;
mod info;
mod inner;
mod locations;
mod log;
mod marker;
mod marks;
mod open;
mod options;
mod poison;
mod prefault;
mod read;
mod recovery;
mod refresh;
mod replay;
mod report;
mod salvage;
mod scan;
mod segments;
mod session;
mod subscribe;
mod verify;
mod write;

// The on-disk layout's, for sessdb's own tools and tests: outside the semver promise.
#[doc(hidden)]
pub use crate::codec::EventLoc;
#[doc(hidden)]
pub use crate::codec::checkpoint::{
    CHECKPOINT_HEADER_LEN, CHECKPOINT_MAGIC, CheckpointMeta, checkpoint_path,
};
pub use api::{EventIter, Store};
pub use info::{MemoryUsage, SessionInfo, StoreStats};
pub use marks::LogMark;
pub use options::{Durability, OpenProgress, StoreOptions};
pub use report::{Damage, DamageRepair, OpenReport, SalvageReport, SessionLoss, VerifyReport};
pub use salvage::salvage_plan;
pub use session::SessionHandle;
pub use subscribe::Subscription;
pub use verify::{verify, verify_with_progress};
