//! `sessdb fork STORE SESSION [--at SEQ] [--id NEW_ID]`

use sessdb::{ForkSpec, StoreOptions};

use crate::cmd::{PathArg, open_store_writer};
use crate::error::{CliResult, code};
use crate::out::{print_json, println, shown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// The session to fork.
    session: String,
    /// The last inherited seq (inclusive; default: the session's last event); it may not lie
    /// inside an open turn.
    #[arg(long, value_name = "SEQ")]
    at: Option<u64>,
    /// The child's id (default: a new random UUID, as DSH mints them).
    #[arg(long = "id", value_name = "NEW_ID")]
    id: Option<String>,
    /// JSON output: `{"child": ID, "parent": ID, "inherited": N, "events": N}`.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: &Args) -> CliResult {
    // A one-off write: the background compaction is a long-running writer's.
    let store = open_store_writer(&a.store, StoreOptions::default().with_compaction(None))?;
    let result = store.fork(&a.session, {
        let mut spec = ForkSpec::default();
        spec.boundary = a.at;
        spec.child_id.clone_from(&a.id);
        spec
    });
    let child = result?;
    let info = store.info(&child);
    store.close()?;
    if a.json {
        let (inherited, events) = info.map_or((0, 0), |i| {
            (i.header.seed_length.unwrap_or_default(), i.events)
        });
        print_json(&serde_json::json!({
            "child": child,
            "parent": a.session,
            "inherited": inherited,
            "events": events,
        }));
    } else {
        println(&shown(&child));
    }
    Ok(code::OK)
}
