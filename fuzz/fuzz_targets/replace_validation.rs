//! Replace validation against an oracle. A structure-aware operation language (appends of
//! user, assistant and tool messages; replaces whose endpoints come from the current surface
//! by index or are arbitrary seqs; sources that cite the shadowed seqs with drops, duplicates,
//! later seqs and extras; tool-result replacements that change the block's content or
//! something else; log events in between; checkpoints and reopens) runs through three
//! deciders at once: the in-memory `Session`, a `Store` on `MemStorage` (`append` and a
//! one-event `append_batch`, alternately), and
//! the naive reference model (`sessdb-reference`, written independently of the engine). They
//! must agree on accept or refuse, on the rule a refusal names, on the surface after every
//! step, and on the derived messages; a reopened store must give the same state.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessdb_fuzz::ops::{Action, Harness};

fuzz_target!(|actions: Vec<Action>| {
    let mut harness = Harness::new();
    for action in actions.iter().take(200) {
        harness.step(action);
    }
    harness.finish();
});
