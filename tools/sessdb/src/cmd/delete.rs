//! `sessdb delete STORE ID...` and `sessdb delete STORE --older-than DURATION [--dry-run]`

use std::time::Duration;

use sessdb::StoreOptions;

use crate::cmd::{PathArg, open_existing, open_store_writer};
use crate::error::{CliError, CliResult, code};
use crate::out::{iso_time, note, print_json, println, shown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// The sessions to delete (all are looked up first: an unknown id deletes nothing; forks
    /// keep what they inherited).
    #[arg(required_unless_present = "older_than", conflicts_with = "older_than")]
    sessions: Vec<String>,
    /// Delete every session whose last event (its creation, when it has none) is older than
    /// this: a number and a unit, `30d`, `12h`, `90m`, `45s`, `0s`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    older_than: Option<Duration>,
    /// Print the sessions that would be deleted; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// One JSON object: `{"dryRun", "deleted": [{"id", "lastEventTime": ms|null}]}`.
    #[arg(long)]
    pub json: bool,
}

/// `delete --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Deleted {
    dry_run: bool,
    deleted: Vec<DeletedSession>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct DeletedSession {
    id: String,
    last_event_time: Option<i64>,
}

/// `30d`, `12h`, `90m`, `45s`: a whole number and one unit.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().map_err(|_| {
        format!("{s:?} is not a duration: a whole number and a unit (30d, 12h, 90m, 45s)")
    })?;
    let secs = match unit {
        "d" => n.checked_mul(86_400),
        "h" => n.checked_mul(3_600),
        "m" => n.checked_mul(60),
        "s" => Some(n),
        _ => {
            return Err(format!(
                "{s:?}: the unit is one of d, h, m, s (30d, 12h, 90m, 45s)"
            ));
        }
    };
    secs.map(Duration::from_secs)
        .ok_or_else(|| format!("{s:?} is too long a duration"))
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    // Compacting is `sessdb compact`'s: a deletion here writes one record and nothing else.
    // A dry run changes nothing: it reads the store read-only, beside its writer.
    let store = if a.dry_run {
        open_existing(&a.store)?
    } else {
        open_store_writer(&a.store, StoreOptions::default().with_compaction(None))?
    };
    let result = delete(&store, a);
    let close = store.close();
    let listed = result?;
    close?;
    if a.json {
        print_json(&Deleted {
            dry_run: a.dry_run,
            deleted: listed
                .into_iter()
                .map(|(id, last_event_time)| DeletedSession {
                    id,
                    last_event_time,
                })
                .collect(),
        });
        return Ok(code::OK);
    }
    let verb = if a.dry_run { "would delete" } else { "deleted" };
    for (id, last) in &listed {
        match last {
            Some(t) => println(&format!("{id}\t{}", iso_time(*t))),
            None => println(id),
        }
    }
    match listed.as_slice() {
        [(id, _)] => note(quiet, &format!("{verb} {}", shown(id))),
        _ => note(quiet, &format!("{verb} {} session(s)", listed.len())),
    }
    Ok(code::OK)
}

/// The sessions deleted (or that would be), each with its last event's time when chosen by
/// age.
fn delete(store: &sessdb::Store, a: &Args) -> Result<Vec<(String, Option<i64>)>, CliError> {
    if let Some(age) = a.older_than {
        let report = store.delete_older_than(age, a.dry_run)?;
        return Ok(report
            .deleted
            .into_iter()
            .map(|(id, t)| (id, Some(t)))
            .collect());
    }
    let ids: Vec<&str> = a.sessions.iter().map(String::as_str).collect();
    if a.dry_run {
        // The same look-up as the deletion's: an unknown id is the same error.
        let known = store.list()?;
        if let Some(id) = ids
            .iter()
            .find(|id| !known.iter().any(|i| i.header.id == **id))
        {
            return Err(sessdb::Error::SessionNotFound {
                id: (*id).to_owned(),
            }
            .into());
        }
    } else {
        store.delete_sessions(&ids)?;
    }
    Ok(a.sessions.iter().map(|id| (id.clone(), None)).collect())
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_are_a_number_and_a_unit() {
        assert_eq!(parse_duration("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3_600)));
        assert_eq!(parse_duration("90m"), Ok(Duration::from_secs(90 * 60)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "d",
            "12",
            "1.5h",
            "-1d",
            "3w",
            "12hh",
            "99999999999999999999d",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
