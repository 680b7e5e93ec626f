//! `sessdb ls STORE [--sort created|last|events|id] [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::{iso_time, print_json, println, shown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// One JSON array of objects.
    #[arg(long)]
    pub json: bool,
    /// Row order (ascending: the newest, last or largest at the bottom).
    #[arg(long, value_enum, default_value_t = Sort::Created)]
    sort: Sort,
}

/// `ls --sort`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Sort {
    /// By creation time, newest last.
    Created,
    /// By the time of the last event, most recent last.
    Last,
    /// By number of events, largest last.
    Events,
    /// By id.
    Id,
}

/// One session in `ls --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Row<'a> {
    id: &'a str,
    events: u64,
    surface_length: usize,
    parent: Option<&'a str>,
    created_at: i64,
    last_event_time: Option<i64>,
    turn_open: bool,
}

pub fn run(a: &Args) -> CliResult {
    let store = open_existing(&a.store)?;
    let mut sessions = store.list();
    match a.sort {
        Sort::Created => sessions.sort_by(|x, y| {
            (x.header.created_at, &x.header.id).cmp(&(y.header.created_at, &y.header.id))
        }),
        Sort::Last => {
            sessions.sort_by(|x, y| (x.last_time, &x.header.id).cmp(&(y.last_time, &y.header.id)))
        }
        Sort::Events => {
            sessions.sort_by(|x, y| (x.events, &x.header.id).cmp(&(y.events, &y.header.id)));
        }
        Sort::Id => {}
    }
    if a.json {
        let rows: Vec<Row<'_>> = sessions
            .iter()
            .map(|s| Row {
                id: &s.header.id,
                events: s.events,
                surface_length: s.surface_len,
                parent: s.header.parent_session.as_deref(),
                created_at: s.header.created_at,
                last_event_time: s.last_time,
                turn_open: s.turn_open,
            })
            .collect();
        print_json(&rows);
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
