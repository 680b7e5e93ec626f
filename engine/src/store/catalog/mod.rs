//! The catalog: every live session's resident state and the plan/commit of a batch.

pub(crate) mod entries;
pub(crate) mod locations;
pub(crate) mod read;
