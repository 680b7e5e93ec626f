//! The workloads the rows run on: DSH's chunk-heavy mix from `sessdb-workload` (streamed
//! `assistant/chunk` runs, assistant messages citing them, tool calls and results, turn and
//! step markers, a compaction, a prune, a fork), recorded once so generation stays out of
//! every measurement.

use std::collections::HashMap;

use sessdb::{Draft, ForkSpec, SessionHeader, Store};
use sessdb_workload::{Sink, WorkloadSpec, generate};

/// One recorded workload operation.
#[derive(Clone)]
pub enum Op {
    Create(SessionHeader),
    Append(String, Draft),
    Fork(String, ForkSpec),
}

/// Records a generated workload.
#[derive(Default)]
struct Recorder {
    ops: Vec<Op>,
    next: HashMap<String, u64>,
}

impl Sink for Recorder {
    fn create(&mut self, header: SessionHeader) -> sessdb::Result<()> {
        self.next.insert(header.id.clone(), 1);
        self.ops.push(Op::Create(header));
        Ok(())
    }
    fn append(&mut self, session: &str, draft: Draft) -> sessdb::Result<u64> {
        let n = self.next.entry(session.to_owned()).or_insert(0);
        let seq = *n;
        *n += 1;
        self.ops.push(Op::Append(session.to_owned(), draft));
        Ok(seq)
    }
    fn fork(&mut self, source: &str, spec: ForkSpec) -> sessdb::Result<String> {
        let child = spec
            .child_id
            .clone()
            .unwrap_or_else(|| format!("{source}-fork"));
        let len = self.next.get(source).copied().unwrap_or(0);
        self.next.insert(child.clone(), len + 1);
        self.ops.push(Op::Fork(
            source.to_owned(),
            spec.with_child_id(child.clone()),
        ));
        Ok(child)
    }
}

/// A recorded workload and what it holds.
pub struct Mix {
    pub ops: Vec<Op>,
    /// Appended events (the end-seed markers of creation and fork not counted).
    pub events: u64,
    /// `assistant/chunk` events among them.
    pub chunks: u64,
    pub sessions: usize,
}

impl Mix {
    /// How the report names this workload beside a row.
    pub fn name(&self) -> String {
        format!(
            "DSH mix: {} sessions, {} events, {:.0}% chunks",
            self.sessions,
            self.events,
            100.0 * self.chunks as f64 / self.events.max(1) as f64
        )
    }
}

/// The DSH mix of `spec`, recorded.
pub fn record(spec: &WorkloadSpec) -> Mix {
    let mut rec = Recorder::default();
    let summary = generate(spec, &mut rec).expect("workload");
    let chunks = rec
        .ops
        .iter()
        .filter(|op| matches!(op, Op::Append(_, d) if d.event_type() == "assistant/chunk"))
        .count() as u64;
    Mix {
        ops: rec.ops,
        events: summary.events,
        chunks,
        sessions: summary.sessions.len(),
    }
}

/// The mix of the append rows: 100 sessions of 1..=240 turns, up to 60 text deltas per
/// assistant message (about 1M events); `quick`: 20 sessions of up to 40 turns.
pub fn append_spec(quick: bool) -> WorkloadSpec {
    WorkloadSpec {
        sessions: if quick { 20 } else { 100 },
        max_turns: if quick { 40 } else { 240 },
        max_chunks: 60,
        ..WorkloadSpec::default()
    }
}

/// A workload step for batched appends: consecutive appends to one session in batches.
pub enum Step {
    Create(SessionHeader),
    Batch(String, Vec<Draft>),
    Fork(String, ForkSpec),
}

/// The ops as batches of up to `size` consecutive appends to one session (the generator
/// writes a session's turns one after another, so most batches are full).
pub fn batches(ops: Vec<Op>, size: usize) -> Vec<Step> {
    let mut out: Vec<Step> = Vec::new();
    for op in ops {
        match op {
            Op::Create(h) => out.push(Step::Create(h)),
            Op::Fork(s, f) => out.push(Step::Fork(s, f)),
            Op::Append(s, d) => match out.last_mut() {
                Some(Step::Batch(id, drafts)) if *id == s && drafts.len() < size => drafts.push(d),
                _ => out.push(Step::Batch(s, vec![d])),
            },
        }
    }
    out
}

/// Appends the ops to `store` one event at a time.
pub fn apply(store: &Store, ops: Vec<Op>) {
    for op in ops {
        match op {
            Op::Create(h) => {
                store.create_session(h, Vec::new()).expect("create");
            }
            Op::Append(s, d) => {
                store.append(&s, d).expect("append");
            }
            Op::Fork(s, spec) => {
                store.fork(&s, spec).expect("fork");
            }
        }
    }
}
