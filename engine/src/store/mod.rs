//! The durable store (DESIGN §3): many sessions in one checksummed, append-only segment log,
//! a resident index per session, a delta checkpoint, and repair on open. This module only
//! sequences I/O; every byte's layout is `codec`'s and every rule is `model`'s.
//!
//! | file | concern |
//! |---|---|
//! | `api.rs` | the [`Store`] API |
//! | `inner.rs` | the shared state of an open store |
//! | `catalog.rs` | per-session resident state: header, state, locations |
//! | `segments.rs` | the segment list, reads by location, the append tail and roll |
//! | `discover.rs` | finding and checking the segment files on open |
//! | `open.rs` | open: lock, segments, checkpoint choice, then the scan |
//! | `scan.rs` | the recovery scan: replay and repair (open, salvage, `refresh`) |
//! | `recovery.rs` | **the recovery decision table** |
//! | `salvage.rs` | salvage: plan (resync past damage, cut only damaged sessions), apply by replacement files |
//! | `write.rs` | the write path and group commit |
//! | `read.rs` | reads by location |
//! | `checkpoint.rs` | checkpoint files and the catalog |
//! | `checkpointing.rs` | taking checkpoints: policy, merge, retention |
//! | `verify.rs` | full replay compared with the checkpoint |
//! | `subscribe.rs` | following a session |

mod api;
mod catalog;
mod changes;
mod checkpoint;
mod checkpointing;
mod discover;
mod info;
mod inner;
mod open;
mod options;
mod prefault;
mod read;
mod recovery;
mod report;
mod salvage;
mod scan;
mod segments;
mod subscribe;
mod verify;
mod write;

pub use crate::codec::EventLoc;
pub use crate::codec::checkpoint::{
    CHECKPOINT_HEADER_LEN, CHECKPOINT_MAGIC, CheckpointMeta, checkpoint_path,
};
pub use api::{EventIter, Store};
pub use info::{MemoryUsage, SessionInfo, StoreStats};
pub use options::{Durability, OpenProgress, StoreOptions};
pub use report::OpenReport;
pub use salvage::{Damage, DamageRepair, SalvageReport, SessionLoss, salvage_plan};
pub use subscribe::Subscription;
pub use verify::{VerifyReport, verify, verify_with_progress};
