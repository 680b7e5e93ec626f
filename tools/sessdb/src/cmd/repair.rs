//! `sessdb repair STORE [--salvage] [--dry-run]`

use sessdb::StoreOptions;
use sessdb::storage::FsStorage;
use sessdb::store::{DamageRepair, SalvageReport, salvage_plan};

use crate::cmd::{PathArg, is_store, open_store_writer};
use crate::error::{CliError, CliResult, code, no_store};
use crate::out::{print_json, println, scan_bar, shown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// Skip damaged records: cut only the sessions that had events in them, each at its last
    /// intact event; keep every other session whole. Prints what each session lost.
    #[arg(long)]
    salvage: bool,
    /// Print what the repair would do and change nothing (with --salvage: the salvage plan).
    #[arg(long)]
    dry_run: bool,
    /// One JSON object: `{"dryRun", "tornTailBytes", "segmentsRemoved", "salvage": {...}|null,
    /// "openTurns": [...]}` (README).
    #[arg(long)]
    pub json: bool,
}

/// What a repair did (or, in a dry run, would do): printed as lines or as `--json`.
#[derive(Default)]
struct Outcome {
    dry_run: bool,
    torn_tail_bytes: u64,
    segments_removed: Vec<String>,
    salvage: Option<SalvageReport>,
    /// Each session whose open turn is closed: the closers and the end-seed marker's seq
    /// (`None` in a dry run: not known before the run).
    open_turns: Vec<(String, Option<usize>, Option<Option<u64>>)>,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    let outcome = if a.dry_run && !a.salvage {
        plan(a, quiet)?
    } else if a.dry_run {
        salvage_dry_run(a)?
    } else {
        repair(a, quiet)?
    };
    if a.json {
        print_json(&json(&outcome));
    } else {
        print_lines(&outcome);
    }
    Ok(code::OK)
}

/// `repair --salvage --dry-run`: the salvage plan, and the open turns the real run closes.
fn salvage_dry_run(a: &Args) -> CliResult<Outcome> {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let storage = FsStorage::new(&a.store);
    let report = salvage_plan(&storage, &StoreOptions::default())?;
    // What the real run then writes, too: a dry run hides none of its writes.
    let open_turns = report
        .open_turns
        .iter()
        .map(|id| (id.clone(), None, None))
        .collect();
    Ok(Outcome {
        dry_run: true,
        salvage: Some(report),
        open_turns,
        ..Outcome::default()
    })
}

fn repair(a: &Args, quiet: bool) -> CliResult<Outcome> {
    // Repair reads the whole log, not only what follows the checkpoint: damage anywhere is
    // found here, as `verify` finds it.
    let (bar, progress) = scan_bar(quiet, "reading the log");
    let options = StoreOptions::default()
        .with_compaction(None)
        .with_salvage(a.salvage)
        .with_ignore_checkpoints(true)
        .with_progress(progress);
    let store = open_store_writer(&a.store, options);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let store = store.map_err(|e| if a.salvage { e } else { salvage_hint(e) })?;
    let report = store.open_report().clone();
    let mut open_turns = Vec::new();
    for info in store.list()?.into_iter().filter(|i| i.turn_open) {
        let r = store.resume(&info.header.id)?;
        open_turns.push((info.header.id, Some(r.closers.len()), Some(r.end_seed)));
    }
    store.checkpoint()?;
    store.close()?;
    Ok(Outcome {
        dry_run: false,
        torn_tail_bytes: report.bytes_truncated,
        segments_removed: report.segments_removed,
        salvage: report.salvaged,
        open_turns,
    })
}

/// A refusal for corruption, with the way to see what salvage would keep.
fn salvage_hint(e: CliError) -> CliError {
    if e.message.contains("corruption") {
        CliError {
            hint: Some(
                "rerun as `sessdb repair STORE --salvage --dry-run` to see what salvage would keep"
                    .into(),
            ),
            ..e
        }
    } else {
        e
    }
}

/// `repair --dry-run`: what a plain repair would do, read from a read-only open of the whole
/// log (as the repair reads it), nothing written.
fn plan(a: &Args, quiet: bool) -> CliResult<Outcome> {
    if !is_store(&a.store) {
        return Err(no_store(&a.store));
    }
    let (bar, progress) = scan_bar(quiet, "reading the log");
    let options = StoreOptions::default()
        .with_ignore_checkpoints(true)
        .with_progress(progress);
    let store =
        sessdb::Store::open_read_only_with(std::sync::Arc::new(FsStorage::new(&a.store)), options);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let store = store.map_err(|e| salvage_hint(CliError::from(e)))?;
    let report = store.open_report().clone();
    Ok(Outcome {
        dry_run: true,
        torn_tail_bytes: report.torn_tail_ignored,
        open_turns: store
            .list()?
            .into_iter()
            .filter(|i| i.turn_open)
            .map(|i| (i.header.id, None, None))
            .collect(),
        ..Outcome::default()
    })
}

/// The outcome as lines, as a person reads them.
fn print_lines(o: &Outcome) {
    let would = if o.dry_run { "would cut" } else { "cut" };
    if o.torn_tail_bytes > 0 {
        println(&format!(
            "{would} a torn tail of {} byte(s)",
            o.torn_tail_bytes
        ));
    }
    match &o.salvage {
        Some(s) if o.dry_run && s.is_empty() => println("nothing to salvage"),
        Some(s) => print_salvage(s, o.dry_run),
        None => {}
    }
    for seg in &o.segments_removed {
        println(&format!("removed {seg}"));
    }
    for (id, closers, end_seed) in &o.open_turns {
        match (closers, end_seed) {
            (Some(n), Some(seed)) => println(&format!(
                "closed the open turn of {}: {n} closer(s), end-seed marker {}",
                shown(id),
                seed.map_or_else(|| "already there".to_owned(), |s| format!("at seq {s}"))
            )),
            _ => println(&format!(
                "would close the open turn of {} (repair closers, then an end-seed marker)",
                shown(id)
            )),
        }
    }
    let salvaged = o.salvage.as_ref().is_some_and(|s| !s.is_empty());
    if o.torn_tail_bytes == 0 && !salvaged && o.open_turns.is_empty() && o.salvage.is_none() {
        println("nothing to repair");
    }
}

/// `repair --json`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct RepairJson {
    dry_run: bool,
    torn_tail_bytes: u64,
    segments_removed: Vec<String>,
    salvage: Option<SalvageJson>,
    open_turns: Vec<OpenTurnJson>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SalvageJson {
    damage: Vec<DamageJson>,
    sessions: Vec<LossJson>,
    records_dropped: u64,
    checkpoints_removed: u64,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct DamageJson {
    segment: String,
    offset: u64,
    bytes: u64,
    kind: String,
    repair: &'static str,
    session: Option<String>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct LossJson {
    session: String,
    kept: u64,
    lost_through: Option<u64>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct OpenTurnJson {
    session: String,
    closers: Option<usize>,
    end_seed: Option<u64>,
}

fn json(o: &Outcome) -> RepairJson {
    RepairJson {
        dry_run: o.dry_run,
        torn_tail_bytes: o.torn_tail_bytes,
        segments_removed: o.segments_removed.clone(),
        salvage: o.salvage.as_ref().map(|s| SalvageJson {
            damage: s
                .damage
                .iter()
                .map(|d| DamageJson {
                    segment: d.segment.clone(),
                    offset: d.offset,
                    bytes: d.bytes,
                    kind: d.kind.to_string(),
                    repair: repair_name(d.repair),
                    session: d.session.clone(),
                })
                .collect(),
            sessions: s
                .sessions
                .iter()
                .map(|l| LossJson {
                    session: l.session.clone(),
                    kept: l.kept,
                    lost_through: l.lost_through,
                })
                .collect(),
            records_dropped: s.records_dropped,
            checkpoints_removed: s.checkpoints_removed,
        }),
        open_turns: o
            .open_turns
            .iter()
            .map(|(session, closers, end_seed)| OpenTurnJson {
                session: session.clone(),
                closers: *closers,
                end_seed: end_seed.flatten(),
            })
            .collect(),
    }
}

fn repair_name(r: DamageRepair) -> &'static str {
    match r {
        DamageRepair::Voided => "voided",
        DamageRepair::Cut => "cut",
        DamageRepair::SegmentRemoved => "segmentRemoved",
        DamageRepair::HeaderRewritten => "headerRewritten",
        DamageRepair::CheckpointsRemoved => "checkpointsRemoved",
        _ => "leftAlone",
    }
}

/// The salvage report, one line per damaged place and per session that loses events.
fn print_salvage(r: &SalvageReport, dry_run: bool) {
    let (void, cut, remove, header, drop) = if dry_run {
        (
            "would void",
            "would cut",
            "would remove",
            "would rewrite",
            "would remove",
        )
    } else {
        ("voided", "cut", "removed", "rewrote", "removed")
    };
    for d in &r.damage {
        let what = match d.repair {
            DamageRepair::Voided => format!("{void} {} byte(s)", d.bytes),
            DamageRepair::Cut => format!("{cut} a torn tail of {} byte(s)", d.bytes),
            DamageRepair::SegmentRemoved => format!("{remove} the segment"),
            DamageRepair::HeaderRewritten => format!("{header} the segment header"),
            DamageRepair::CheckpointsRemoved => {
                format!("{drop} the checkpoints; the sessions they remember longer are named below")
            }
            _ => "left alone".to_owned(),
        };
        let whose = match (&d.repair, d.session.as_deref()) {
            (_, Some(s)) => format!(", session {}", shown(s)),
            // Missing records name no session of their own: the losses below do.
            (DamageRepair::CheckpointsRemoved, None) => String::new(),
            (_, None) => ", session unreadable".to_owned(),
        };
        println(&format!(
            "damage: {} at byte {} ({}{whose}): {what}",
            d.segment, d.offset, d.kind
        ));
    }
    for s in &r.sessions {
        let through = s
            .lost_through
            .map_or_else(String::new, |l| format!(" through {l}"));
        let kept = if s.kept == 0 {
            "lost whole".to_owned()
        } else {
            format!("keeps seqs 0..={}", s.kept - 1)
        };
        println(&format!(
            "session {}: {kept}; loses seqs from {}{through}",
            shown(&s.session),
            s.kept
        ));
    }
    if r.records_dropped > 0 {
        println(&format!(
            "{} intact record(s) of cut sessions dropped",
            r.records_dropped
        ));
    }
    println(&format!(
        "salvage{}: {} damaged place(s), {} session(s) lose events; every other session is kept whole",
        if dry_run { " plan" } else { "d" },
        r.damage.len(),
        r.sessions.len()
    ));
}
