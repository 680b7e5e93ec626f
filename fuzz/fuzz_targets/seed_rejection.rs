//! Seed rejection against an oracle. An arbitrary header (one perturbation at a time) and a
//! seed (the replace language plus end-seed markers anywhere, seqs out of place, broken
//! message and marker shapes) go through `Session::create`, `Store::create_session`, the
//! JSONL import and `Store::fork`; each path must decide as the reference model does. A
//! refused seed stores nothing (the store's bytes are unchanged); an accepted one ends with
//! exactly one `session/end-seed` (none added when the seed ends with one).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb_fuzz::seed::{SeedCase, check};

fuzz_target!(|case: SeedCase| {
    check(&case);
});
