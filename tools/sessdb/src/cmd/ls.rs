//! `sessdb ls STORE [--sort created|updated|events|id] [-r] [-n N] [--json]`

use sessdb::store::{Direction, ListOptions, ListOrder};

use crate::cmd::{PathArg, leave, open_existing};
use crate::error::{CliResult, code};
use crate::out::{iso_time, pad, print_json, println, shown, width};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// One JSON array of objects.
    #[arg(long)]
    pub json: bool,
    /// Row order (ascending: the newest, last or largest at the bottom).
    #[arg(long, value_enum, default_value_t = Sort::Created)]
    sort: Sort,
    /// Descending: the newest, last or largest first.
    #[arg(short = 'r', long)]
    reverse: bool,
    /// At most N sessions, the first N of the order (`-n 20 --sort updated -r`: the 20 most
    /// recently updated).
    #[arg(short = 'n', long, value_name = "N")]
    limit: Option<usize>,
}

/// `ls --sort`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Sort {
    /// By creation time, newest last.
    Created,
    /// By the time of the last event, most recent last.
    #[value(alias = "last")]
    Updated,
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
    let order = match a.sort {
        Sort::Created => ListOrder::Created,
        Sort::Updated => ListOrder::Updated,
        Sort::Events => ListOrder::Events,
        Sort::Id => ListOrder::Id,
    };
    let mut options = ListOptions::new(order);
    if a.reverse {
        options = options.with_direction(Direction::Descending);
    }
    if let Some(n) = a.limit {
        options = options.with_limit(n);
    }
    let sessions = store.list_by(options)?;
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
        drop(rows);
        leave((store, sessions));
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
    // Columns by display width (a wide character takes two cells), not by characters.
    let w_id = ids.iter().map(|i| width(i)).max().unwrap_or(0).max(2);
    let w_parent = parents.iter().map(|p| width(p)).max().unwrap_or(0).max(6);
    println(&format!(
        "{} {:>8} {:>8}  {} {:<24} LAST EVENT",
        pad("ID", w_id),
        "EVENTS",
        "SURFACE",
        pad("PARENT", w_parent),
        "CREATED"
    ));
    for ((s, id), parent) in sessions.iter().zip(&ids).zip(&parents) {
        println(&format!(
            "{} {:>8} {:>8}  {} {:<24} {}",
            pad(id, w_id),
            s.events,
            s.surface_len,
            pad(parent, w_parent),
            iso_time(s.header.created_at),
            s.last_time.map_or_else(|| "-".to_owned(), iso_time)
        ));
    }
    leave((store, sessions));
    Ok(code::OK)
}
