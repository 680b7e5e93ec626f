//! The durable store (DESIGN §3): many sessions in one checksummed, append-only segment log,
//! a resident index per session, a delta checkpoint, and repair on open. This module only
//! sequences I/O; every byte's layout is `codec`'s and every rule is `model`'s.
//!
//! The map of its files, one concern each, is `docs/DESIGN.md` §3 (kept equal to the tree
//! by `tests/tests/layout.rs`).

mod api;
mod backup;
mod catalog;
mod checkpoint;
mod compact;
mod info;
mod inner;
mod log;
mod maintenance;
mod open;
mod options;
mod report;
mod salvage;
mod session;
mod subscribe;
mod verify;
mod writer;

pub use api::{EventIter, Store, TryAppend};
pub use backup::backup;
pub use compact::{SegmentSpace, Space};
pub use info::{
    CheckpointInfo, Direction, DiskUsage, Incarnation, ListOptions, ListOrder, ListedRow,
    MemoryUsage, SessionInfo, StoreStats,
};
pub use log::record_at::LogMark;
pub use maintenance::MaintenanceStatus;
pub use maintenance::retention::RetentionReport;
pub use options::{
    CheckpointWrites, CompactionPolicy, Durability, OpenProgress, RetentionPolicy, StoreOptions,
};
pub use report::{
    BackupReport, CompactReport, Damage, DamageRepair, OpenReport, SalvageReport,
    SegmentCompaction, SessionLoss, VerifyReport,
};
pub use salvage::salvage_plan;
pub use session::SessionHandle;
pub use subscribe::Subscription;
pub use verify::{verify, verify_with_progress};
