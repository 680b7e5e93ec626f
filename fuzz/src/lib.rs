//! Shared parts of the structure-aware fuzz targets: the operation language and the harness
//! that runs the engine and the reference model side by side.
#![forbid(unsafe_code)]

pub mod data;
pub mod ops;
pub mod seed;
