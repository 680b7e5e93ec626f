//! Shared helpers of sessdb's cross-crate tests: loading the DSH fixtures.

#![forbid(unsafe_code)]
