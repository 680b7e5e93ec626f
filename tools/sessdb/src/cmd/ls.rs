//! `sessdb ls STORE [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::{iso_time, json_opt, json_opt_str, json_str, println, shown};

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
    // Columns sized to the data; ids shown escaped.
    let ids: Vec<String> = sessions
        .iter()
        .map(|s| shown(&s.header.id).into_owned())
        .collect();
    let parents: Vec<String> = sessions
        .iter()
        .map(|s| shown(s.header.parent_session.as_deref().unwrap_or("-")).into_owned())
        .collect();
    let w_id = ids
        .iter()
        .map(|i| i.chars().count())
        .max()
        .unwrap_or(0)
        .max(2);
    let w_parent = parents
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(0)
        .max(6);
    println(&format!(
        "{:<w_id$} {:>8} {:>8}  {:<w_parent$} {:<24} LAST EVENT",
        "ID", "EVENTS", "SURFACE", "PARENT", "CREATED"
    ));
    for ((s, id), parent) in sessions.iter().zip(&ids).zip(&parents) {
        println(&format!(
            "{id:<w_id$} {:>8} {:>8}  {parent:<w_parent$} {:<24} {}",
            s.events,
            s.surface_len,
            iso_time(s.header.created_at),
            s.last_time.map_or_else(|| "-".to_owned(), iso_time)
        ));
    }
    Ok(code::OK)
}
