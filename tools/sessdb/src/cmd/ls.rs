//! `sessdb ls STORE [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::{iso_time, json_opt, json_opt_str, json_str, println};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// One JSON array of objects.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &Args) -> CliResult {
    let store = open_existing(&a.store)?;
    let sessions = store.list();
    if a.json {
        let rows: Vec<String> = sessions
            .iter()
            .map(|s| {
                format!(
                    "{{\"id\":{},\"events\":{},\"surfaceLength\":{},\"parent\":{},\"createdAt\":{},\"lastEventTime\":{},\"turnOpen\":{}}}",
                    json_str(&s.header.id),
                    s.events,
                    s.surface_len,
                    json_opt_str(s.header.parent_session.as_deref()),
                    s.header.created_at,
                    json_opt(s.last_time),
                    s.turn_open
                )
            })
            .collect();
        println(&format!("[{}]", rows.join(",")));
        return Ok(code::OK);
    }
    println(&format!(
        "{:<32} {:>8} {:>8}  {:<24} {:<24} {:<24}",
        "ID", "EVENTS", "SURFACE", "PARENT", "CREATED", "LAST EVENT"
    ));
    for s in sessions {
        println(&format!(
            "{:<32} {:>8} {:>8}  {:<24} {:<24} {:<24}",
            s.header.id,
            s.events,
            s.surface_len,
            s.header.parent_session.as_deref().unwrap_or("-"),
            iso_time(s.header.created_at),
            s.last_time.map_or_else(|| "-".to_owned(), iso_time)
        ));
    }
    Ok(code::OK)
}
