//! The durable store (DESIGN §3): many sessions in one checksummed, append-only segment log,
//! a resident index per session, a delta checkpoint, and repair on open. This module only
//! sequences I/O; every byte's layout is `codec`'s and every rule is `model`'s.
//!
//! The map of its files, one concern each, is `docs/DESIGN.md` §3 (kept equal to the tree
//! by `tests/tests/layout.rs`).

mod api;
mod background;
mod catalog;
mod chain;
mod changes;
mod checkpoint;
mod checkpoint_state;
mod checkpointing;
mod commit;
mod compact;
mod info;
mod inner;
mod locations;
mod log;
mod maintenance;
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
mod retention;
mod salvage;
mod scan;
mod segments;
mod session;
mod subscribe;
mod tail;
mod verify;
mod write;

pub use api::{EventIter, Store};
pub use compact::{SegmentSpace, Space};
pub use info::{CheckpointInfo, DiskUsage, Incarnation, MemoryUsage, SessionInfo, StoreStats};
pub use maintenance::MaintenanceStatus;
pub use marks::LogMark;
pub use options::{CompactionPolicy, Durability, OpenProgress, RetentionPolicy, StoreOptions};
pub use report::{
    CompactReport, Damage, DamageRepair, OpenReport, SalvageReport, SegmentCompaction, SessionLoss,
    VerifyReport,
};
pub use retention::RetentionReport;
pub use salvage::salvage_plan;
pub use session::SessionHandle;
pub use subscribe::Subscription;
pub use verify::{verify, verify_with_progress};
