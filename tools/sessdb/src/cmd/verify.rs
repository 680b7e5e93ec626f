//! `sessdb verify STORE [--json]`

use std::sync::Arc;

use sessdb::storage::FsStorage;
use sessdb::store::verify;

use crate::cmd::{PathArg, is_store};
use crate::error::{CliError, CliResult, code};
use crate::out::{json_opt, json_str, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// One JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> CliResult {
    if !is_store(&a.store) {
        return Err(CliError::new(
            code::OTHER,
            format!("no sessdb store at {}", a.store.display()),
        ));
    }
    let r = verify(Arc::new(FsStorage::new(&a.store)))?;
    if a.json {
        let problems: Vec<String> = r.problems.iter().map(|p| json_str(p)).collect();
        println(&format!(
            "{{\"ok\":{},\"segments\":{},\"records\":{},\"logBytes\":{},\"sessions\":{},\"events\":{},\"checkpoint\":{},\"incompleteTailBytes\":{},\"problems\":[{}]}}",
            r.ok(),
            r.segments,
            r.records,
            r.log_bytes,
            r.sessions,
            r.events,
            json_opt(r.checkpoint),
            r.incomplete_tail_bytes,
            problems.join(",")
        ));
    } else {
        println(&format!(
            "checked {} segment(s), {} record(s), {} log byte(s): {} session(s), {} event(s)",
            r.segments, r.records, r.log_bytes, r.sessions, r.events
        ));
        match r.checkpoint {
            Some(g) => println(&format!("checkpoint {g} compared with a full replay")),
            None => println("no checkpoint to compare"),
        }
        if r.incomplete_tail_bytes > 0 {
            println(&format!(
                "{} byte(s) after the last complete record (a torn tail or an append under way)",
                r.incomplete_tail_bytes
            ));
        }
        if r.ok() {
            println("ok: no corruption, no mismatch");
        }
        for p in &r.problems {
            println(&format!("problem: {p}"));
        }
    }
    Ok(if r.ok() { code::OK } else { code::VERIFY_FOUND })
}
