//! `cargo run --release -p sessdb-benches --bin report -- [--quick] [--json] [--only ROW]
//! [--big]`: the rows of `docs/PERFORMANCE.md`, each subject beside its baseline in the same
//! run (alternating), median and min–max of the repetitions, the ratio, and the workload the
//! row ran on. Every append, open, tail and export row runs on DSH's chunk-heavy mix from
//! `sessdb-workload`; the rows that do not are named for their workload.

#![allow(
    clippy::expect_used,
    clippy::cast_precision_loss,
    clippy::print_stdout,
    reason = "a benchmark report aborts on any failure and prints"
)]

mod append;
mod compact;
mod export;
mod extra;
mod measure;
mod mix;
mod open;
mod postgres;
mod residue;

use std::fs::File;
use std::io::Write;
use std::time::Instant;

use sessdb::Store;

use measure::{Rows, Stat, dur, rss, rss_anon, stat, temp};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `report --open-rss DIR`: a fresh process opens DIR and prints the resident bytes the
    // open added and the events it holds (the parent measures memory per event this way).
    if let Some(i) = args.iter().position(|a| a == "--open-rss") {
        let before = rss();
        let t = std::time::Instant::now();
        let store =
            Store::open_read_only(&args[i + 1], sessdb::StoreOptions::default()).expect("open");
        let opened = t.elapsed().as_secs_f64();
        let after = rss();
        // Then what `sessdb ls -n 20 --sort updated -r` asks of it.
        let t = std::time::Instant::now();
        let newest = sessdb::store::ListOptions::new(sessdb::store::ListOrder::Updated)
            .with_direction(sessdb::store::Direction::Descending)
            .with_limit(20);
        let listed = store.list_by(newest).expect("list").len();
        let ls = t.elapsed().as_secs_f64();
        println!(
            "{} {} {opened} {ls} {listed}",
            after.saturating_sub(before),
            store.stats().events
        );
        return;
    }
    // `report --read-rss DIR N`: a fresh process opens DIR, reads the events of the first N
    // sessions by creation (each decoded into the catalog), and prints the resident bytes
    // of its own memory (not mapped file pages) the open added and those the reads added,
    // then the same counting mapped file pages.
    if let Some(i) = args.iter().position(|a| a == "--read-rss") {
        let n: usize = args[i + 2].parse().expect("N");
        let (before, before_all) = (rss_anon(), rss());
        let store =
            Store::open_read_only(&args[i + 1], sessdb::StoreOptions::default()).expect("open");
        let (opened, opened_all) = (rss_anon(), rss());
        let ids: Vec<String> = store
            .list_by(
                sessdb::store::ListOptions::new(sessdb::store::ListOrder::Created).with_limit(n),
            )
            .expect("list")
            .into_iter()
            .map(|s| s.header.id)
            .collect();
        let (listed, listed_all) = (rss_anon(), rss());
        for id in &ids {
            std::hint::black_box(store.events(id, ..).expect("read").len());
        }
        let (read, read_all) = (rss_anon(), rss());
        println!(
            "{} {} {} {} {}",
            opened.saturating_sub(before),
            read.saturating_sub(listed),
            ids.len(),
            opened_all.saturating_sub(before_all),
            read_all.saturating_sub(listed_all),
        );
        return;
    }
    // `report --first-read DIR ID`: a fresh process opens DIR and prints the seconds of the
    // first read of session ID's events, then of the part that found and decoded its entry
    // (its row read first), then of the events' read after it.
    if let Some(i) = args.iter().position(|a| a == "--first-read") {
        let store =
            Store::open_read_only(&args[i + 1], sessdb::StoreOptions::default()).expect("open");
        let id = &args[i + 2];
        let t = std::time::Instant::now();
        let found = store.info(id).is_some();
        let decoded = t.elapsed().as_secs_f64();
        let n = store.events(id, ..).expect("read").len();
        let total = t.elapsed().as_secs_f64();
        println!("{total} {decoded} {} {n} {found}", total - decoded);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let json = args.iter().any(|a| a == "--json");
    let big = args.iter().any(|a| a == "--big");
    let reps = if quick { 3 } else { 5 };
    // `--only ROW` (append, batch, durable, threads, open, tail, checkpoint, export, sqlite, surface, compact, postgres, million,
    // ship-idle): one group of rows (`export` runs both exports).
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let run = |row: &str| only.as_deref().is_none_or(|o| o == row);
    let mut rows = Rows::new();

    // `--profile-reopen N`: a `Sync` store (`--buffered`: a `Buffered` one) closed and opened
    // N times, the first five appends after each open timed, back to back and 5 ms apart:
    // medians and the slowest.
    if let Some(i) = args.iter().position(|a| a == "--profile-reopen") {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(20);
        let durability = if args.iter().any(|a| a == "--buffered") {
            sessdb::Durability::Buffered
        } else {
            sessdb::Durability::Sync
        };
        for paced in [false, true] {
            let runs = append::first_appends_after_open(n, durability, paced);
            let column = |k: usize| {
                let mut v: Vec<u64> = runs.iter().map(|r| r[k]).collect();
                v.sort_unstable();
                (v[v.len() / 2] as f64 / 1e3, v[v.len() - 1] as f64 / 1e3)
            };
            let cells: Vec<String> = (0..6)
                .map(|k| {
                    let (median, max) = column(k);
                    format!("{median:.0} ({max:.0})")
                })
                .collect();
            println!(
                "{}: open {} µs; appends 1-5 {} µs (median (slowest) of {n})",
                if paced { "5 ms apart" } else { "back to back" },
                cells[0],
                cells[1..].join(", ")
            );
        }
        return;
    }
    // `--profile-growth N`: the open-growth row's two stores (kept under `target/`), opened
    // alternately N times each; prints each one's median (`--big`: the larger alone;
    // `--writable`: opened writable, copies of them).
    if let Some(i) = args.iter().position(|a| a == "--profile-growth") {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(200);
        open::profile_growth(quick, big, args.iter().any(|a| a == "--writable"), n);
        return;
    }
    let needs_mix = run("append")
        || run("batch")
        || run("compact")
        || run("residue")
        || args.iter().any(|a| {
            a == "--profile-append"
                || a == "--profile-batch"
                || a == "--profile-compact"
                || a == "--profile-latency"
        });
    let mix = needs_mix.then(|| mix::record(&mix::append_spec(quick)));
    // `--profile-append N`: the first row's subject alone, N times (for `perf record`).
    if let (Some(i), Some(mix)) = (args.iter().position(|a| a == "--profile-append"), &mix) {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(10);
        println!("{}", mix.name());
        for _ in 0..n {
            let ops = mix.ops.clone();
            println!("{:.0} events/s", append::sessdb_append(ops, mix.events));
        }
        return;
    }
    // `--profile-latency N`: each append's time, the due checkpoints taken inline and on the
    // checkpointer's thread alternately, N rounds: quantiles, the slowest, and the time spent
    // in appends over a millisecond.
    if let (Some(i), Some(mix)) = (args.iter().position(|a| a == "--profile-latency"), &mix) {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(3);
        println!("{}", mix.name());
        for _ in 0..n {
            for writes in [
                sessdb::CheckpointWrites::Inline,
                sessdb::CheckpointWrites::Background,
            ] {
                let mut took = append::append_latencies(mix.ops.clone(), writes);
                let total: u64 = took.iter().sum();
                let stalls: u64 = took.iter().filter(|&&t| t > 1_000_000).sum();
                let over_10us: u64 = took.iter().filter(|&&t| t > 10_000).sum();
                took.sort_unstable();
                let q = |f: f64| took[((took.len() - 1) as f64 * f) as usize] as f64 / 1e3;
                println!(
                    "{writes:?}: {:.0} events/s; p50 {:.2} µs, p99 {:.2} µs, p99.9 {:.1} µs, \
                     p99.99 {:.0} µs, max {:.0} µs; appends over 1 ms {} taking {:.1} ms; over 10 µs: \
                     {:.1} % of the time",
                    took.len() as f64 / (total as f64 / 1e9),
                    q(0.5),
                    q(0.99),
                    q(0.999),
                    q(0.9999),
                    q(1.0),
                    took.iter().filter(|&&t| t > 1_000_000).count(),
                    stalls as f64 / 1e6,
                    over_10us as f64 * 100.0 / total as f64,
                );
            }
        }
        return;
    }
    // `--profile-compact N`: the compaction row's subject alone, N times (for `perf`).
    if let (Some(i), Some(mix)) = (args.iter().position(|a| a == "--profile-compact"), &mix) {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(3);
        println!("{}", mix.name());
        for _ in 0..n {
            println!("{:.1} ms", compact::compact_once(mix) * 1e3);
        }
        return;
    }
    // `--profile-batch N`: the `Sync` batches row's subject alone, N times.
    if let (Some(i), Some(mix)) = (args.iter().position(|a| a == "--profile-batch"), &mix) {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(10);
        println!("{}", mix.name());
        for _ in 0..n {
            let steps = mix::batches(mix.ops.clone(), 1000);
            println!(
                "{:.0} events/s",
                append::sessdb_sync_batches(steps, mix.events)
            );
        }
        return;
    }
    // `--profile-export N`: the JSONL export of the main store alone, N times (for `perf`).
    if let Some(i) = args.iter().position(|a| a == "--profile-export") {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(10);
        let main = open::build(&open::main_spec(quick));
        println!("{}", main.name);
        for _ in 0..n {
            println!("{:.1} ms", export::jsonl_export_once(&main) * 1e3);
        }
        return;
    }
    // `--profile-open N`: read-only opens of the many-sessions store alone, N times (`perf`);
    // with `--big`, of the open-growth row's 4x store.
    if let Some(i) = args.iter().position(|a| a == "--profile-open") {
        let n: usize = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(10);
        open::profile_many(quick, big, n);
        return;
    }
    if let Some(mix) = &mix {
        append::rows(mix, reps, &run, &mut rows);
        if run("compact") {
            compact::rows(mix, reps, &mut rows);
        }
        if run("residue") {
            residue::rows(quick, mix, &mut rows);
        }
    }
    extra::rows(quick, reps, &run, &mut rows);
    if run("open") || run("export") || run("sqlite") {
        let main = open::build(&open::main_spec(quick));
        if run("open") {
            open::open_rows(&main, quick, reps, &mut rows);
        }
        if run("export") {
            export::export_row(&main, reps, &mut rows);
        }
        if run("export") || run("sqlite") {
            export::sqlite_export_row(&main, reps, &mut rows);
        }
    }
    if run("open") || run("tail") {
        open::shape_rows(quick, big, reps, &run, &mut rows);
    }
    // Not in a plain run: it builds (once, kept under `target/`) a store of a million
    // sessions and one of a single session of the same events, ~4 GB each.
    if run("checkpoint") {
        open::checkpoint_rows(quick, reps, &mut rows);
    }
    if only.as_deref() == Some("million") {
        open::million_rows(quick, reps, &mut rows);
    }
    // Not in a plain run either: it ships a store of 100,000 sessions first (~2 minutes).
    if only.as_deref() == Some("ship-idle") {
        postgres::idle_rows(quick, reps, &mut rows);
    }

    if run("postgres") {
        postgres::rows(quick, reps, &mut rows);
    }

    let sync_lat = physical_sync();
    if json {
        print_json(&rows);
    } else {
        print_text(&rows, reps, sync_lat);
    }
}

/// The physical limit measured in the same run: a 200-byte write + `fdatasync`.
fn physical_sync() -> Stat {
    let d = temp();
    let mut f = File::create(d.path().join("x")).expect("file");
    let mut v = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        f.write_all(&[7u8; 200]).expect("write");
        f.sync_data().expect("sync");
        v.push(t.elapsed().as_secs_f64());
    }
    stat(v)
}

fn print_json(rows: &Rows) {
    let num = |v: Option<f64>| v.map_or("null".to_owned(), |v| v.to_string());
    let out: Vec<String> = rows
        .iter()
        .map(|(r, load)| {
            format!(
                "{{\"what\":{:?},\"unit\":{:?},\"subject\":{},\"subject_min\":{},\"subject_max\":{},\"baseline\":{:?},\"baseline_median\":{},\"ratio\":{},\"goal\":{:?},\"workload\":{:?},\"others_cpu\":{},\"steal\":{},\"load1\":{}}}",
                r.what,
                r.unit,
                r.subject.median,
                r.subject.min,
                r.subject.max,
                r.baseline_name,
                r.baseline.median,
                r.subject.median / r.baseline.median,
                r.goal,
                r.workload,
                num(load.others),
                num(load.steal),
                num(load.avg1)
            )
        })
        .collect();
    println!("[{}]", out.join(","));
}

fn print_text(rows: &Rows, reps: usize, sync_lat: Stat) {
    println!(
        "sessdb report ({reps} repetitions, subject and baseline alternating; median [min-max]; \
         under each row its workload and the machine while it ran: the CPU used outside this \
         process (the kernel threads writing out its files included), the CPU stolen by the \
         hypervisor, the 1-minute load)"
    );
    for (r, load) in rows.iter() {
        let f = |s: Stat| match r.unit {
            "s" => format!("{} [{}-{}]", dur(s.median), dur(s.min), dur(s.max)),
            "s/ev" => format!(
                "{:.1}ns [{:.1}-{:.1}]",
                s.median * 1e9,
                s.min * 1e9,
                s.max * 1e9
            ),
            "B" => format!("{:.1} [{:.1}-{:.1}]", s.median, s.min, s.max),
            _ => format!("{:.0} [{:.0}-{:.0}]", s.median, s.min, s.max),
        };
        println!(
            "{:<50} {:>34}  vs {:<54} {:>34}  ratio {:>6.3}  goal {}\n    on {}; {}",
            r.what,
            f(r.subject),
            r.baseline_name,
            f(r.baseline),
            r.subject.median / r.baseline.median,
            r.goal,
            r.workload,
            load.text()
        );
    }
    println!(
        "physical: 200-byte write+fdatasync p50 {} [{}-{}]",
        dur(sync_lat.median),
        dur(sync_lat.min),
        dur(sync_lat.max)
    );
}
