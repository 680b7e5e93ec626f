//! The writer: the append tail, frame sealing, group commit, the helper thread, poisoning and
//! the change signal.

pub(crate) mod changes;
pub(crate) mod commit;
pub(crate) mod poison;
pub(crate) mod prefault;
pub(crate) mod tail;
