//! One deterministic generator of realistic DSH v0 workloads, shared by `sessdb demo`, the
//! tests, the benchmarks and stress runs.
//!
//! A workload is several sessions of turns and steps: streamed `assistant/chunk` runs (text
//! and tool-call deltas), assembled `assistant/message`s citing their chunks, `tool/call`
//! and `tool/result` pairs, plugin log events; plus, when there are enough sessions and turns,
//! a compaction (a `user/message` replacing a surface range), a `tool/result` prune, a fork
//! at a turn end, and a session left with an interrupted turn (a started tool call and one
//! that never started). The same [`WorkloadSpec`] always produces the same events.
//!
//! ```
//! use sessdb::{Config, SessionSet};
//! use sessdb_workload::{WorkloadSpec, generate};
//!
//! let mut set = SessionSet::new(Config::default());
//! let summary = generate(&WorkloadSpec::default(), &mut set).unwrap();
//! assert_eq!(set.len(), summary.sessions.len());
//! ```

#![forbid(unsafe_code)]

pub mod payload;
mod rng;

pub use rng::Rng;

use sessdb::{
    Draft, ForkSpec, LogType, Result, SessionHeader, SessionSet, Store, SurfaceIntent, SurfaceType,
};

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// The random seed.
    pub seed: u64,
    /// How many root sessions (a fork adds one more).
    pub sessions: usize,
    /// The fewest turns per session.
    pub min_turns: u64,
    /// The most turns per session (each session has `min_turns..=max_turns`).
    pub max_turns: u64,
    /// The most text deltas per assistant message.
    pub max_chunks: u64,
    /// Time of the first event, Unix epoch milliseconds.
    pub start_time_ms: i64,
}

impl Default for WorkloadSpec {
    fn default() -> Self {
        Self {
            seed: 42,
            sessions: 4,
            min_turns: 1,
            max_turns: 6,
            max_chunks: 24,
            start_time_ms: 1_767_225_600_000,
        }
    }
}

/// Where a workload goes: the in-memory [`SessionSet`], the durable store, or a peer baseline
/// in a benchmark.
pub trait Sink {
    /// Creates an empty session (its `session/end-seed` marker takes seq 0).
    ///
    /// # Errors
    /// The sink's.
    fn create(&mut self, header: SessionHeader) -> Result<()>;
    /// Appends one event; returns its seq.
    ///
    /// # Errors
    /// The sink's.
    fn append(&mut self, session: &str, draft: Draft) -> Result<u64>;
    /// Forks a session; returns the child id.
    ///
    /// # Errors
    /// The sink's.
    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String>;
}

impl Sink for SessionSet {
    fn create(&mut self, header: SessionHeader) -> Result<()> {
        SessionSet::create(self, header, []).map(|_| ())
    }

    fn append(&mut self, session: &str, draft: Draft) -> Result<u64> {
        let s = self
            .get_mut(session)
            .ok_or_else(|| sessdb::Error::SessionNotFound {
                id: session.to_owned(),
            })?;
        s.append(draft)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String> {
        SessionSet::fork(self, source, spec).map(|c| c.id().to_owned())
    }
}

impl Sink for Store {
    fn create(&mut self, header: SessionHeader) -> Result<()> {
        self.create_session(header, Vec::new()).map(|_| ())
    }

    fn append(&mut self, session: &str, draft: Draft) -> Result<u64> {
        Store::append(self, session, draft)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String> {
        Store::fork(self, source, spec)
    }
}

/// What a generated workload contains.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadSummary {
    /// Session ids in creation order (forks included).
    pub sessions: Vec<String>,
    /// Events appended through the sink (end-seed markers of creation and fork not counted).
    pub events: u64,
    /// Surface replacements by compaction.
    pub compactions: u64,
    /// `tool/result` prunes.
    pub prunes: u64,
    /// Forks as `(parent, child)`.
    pub forks: Vec<(String, String)>,
    /// Sessions left with an open, interrupted turn.
    pub interrupted: Vec<String>,
}

const WORDS: [&str; 24] = [
    "the", "file", "test", "build", "passes", "now", "read", "config", "and", "then", "update",
    "segment", "index", "fix", "error", "output", "check", "run", "cargo", "module", "with",
    "session", "store", "again",
];

/// Per-session bookkeeping of the generator: what it appended, mirrored just enough to cite
/// seqs correctly.
struct Writer<'a, S: Sink> {
    sink: &'a mut S,
    id: String,
    time: i64,
    surface: Vec<u64>,
    tool_results: Vec<(u64, u64, u64, String)>,
    turn: u64,
    appended: u64,
}

impl<S: Sink> Writer<'_, S> {
    fn put(&mut self, draft: Draft) -> Result<u64> {
        self.time += 7;
        self.appended += 1;
        self.sink.append(&self.id, draft.at(self.time))
    }

    fn log(&mut self, ty: &LogType, data: String) -> Result<u64> {
        self.put(Draft::log(ty, data.into_bytes()))
    }

    fn plugin(&mut self, ty: &str, data: String) -> Result<u64> {
        let ty = LogType::new(ty.to_owned())?;
        self.log(&ty, data)
    }

    fn surface(&mut self, ty: SurfaceType, data: String, intent: SurfaceIntent) -> Result<u64> {
        let op = intent.op();
        let seq = self.put(Draft::surface(ty, data.into_bytes(), intent))?;
        match op {
            sessdb::SurfaceOp::Append => self.surface.push(seq),
            sessdb::SurfaceOp::Replace { start, end } => {
                let a = self.surface.iter().position(|&s| s == start);
                let b = self.surface.iter().position(|&s| s == end);
                if let (Some(a), Some(b)) = (a, b) {
                    self.surface.splice(a..=b, [seq]);
                }
            }
        }
        Ok(seq)
    }

    fn sentence(rng: &mut Rng, words: u64) -> String {
        (0..words)
            .filter_map(|_| rng.pick(&WORDS).copied())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Streams a text block and `calls` tool-call blocks; returns the chunk seqs and the text.
    fn stream(
        &mut self,
        rng: &mut Rng,
        max_chunks: u64,
        step: u64,
        calls: &[(String, String)],
    ) -> Result<(Vec<u64>, String)> {
        let turn = self.turn;
        let chunk = LogType::ASSISTANT_CHUNK;
        let mut seqs = Vec::new();
        seqs.push(self.log(
            &chunk,
            payload::chunk(
                turn,
                step,
                r#"{"type":"block-start","index":0,"blockType":"text"}"#,
            ),
        )?);
        let mut text = String::new();
        for i in 0..rng.range(1, max_chunks.max(1)) {
            let piece = format!(
                "{}{}",
                if i == 0 { "" } else { " " },
                Self::sentence(rng, 1)
            );
            text.push_str(&piece);
            seqs.push(self.log(&chunk, payload::text_delta(turn, step, 0, &piece))?);
        }
        let end = format!(
            r#"{{"type":"block-end","index":0,"block":{{"type":"text","text":{}}}}}"#,
            json_str(&text)
        );
        seqs.push(self.log(&chunk, payload::chunk(turn, step, &end))?);
        for (i, (call_id, args)) in calls.iter().enumerate() {
            let index = i + 1;
            let start =
                format!(r#"{{"type":"block-start","index":{index},"blockType":"tool-call"}}"#);
            seqs.push(self.log(&chunk, payload::chunk(turn, step, &start))?);
            let mid = args.len() / 2;
            for part in [&args[..mid], &args[mid..]] {
                let delta = format!(
                    r#"{{"type":"tool-call-delta","index":{index},"id":{},"name":"bash","argumentsDelta":{}}}"#,
                    json_str(call_id),
                    json_str(part)
                );
                seqs.push(self.log(&chunk, payload::chunk(turn, step, &delta))?);
            }
        }
        let usage = format!(
            r#"{{"type":"usage","usage":{{"inputTokens":{},"outputTokens":{}}}}}"#,
            900 + rng.range(0, 4000),
            seqs.len()
        );
        seqs.push(self.log(&chunk, payload::chunk(turn, step, &usage))?);
        let reason = if calls.is_empty() {
            "stop"
        } else {
            "tool-calls"
        };
        seqs.push(self.log(
            &chunk,
            payload::chunk(
                turn,
                step,
                &format!(r#"{{"type":"finish","reason":{{"kind":"{reason}"}}}}"#),
            ),
        )?);
        Ok((seqs, text))
    }
}

fn json_str(s: &str) -> String {
    let mut out = Vec::new();
    sessdb::json::write_str(&mut out, s);
    String::from_utf8_lossy(&out).into_owned()
}

/// Generates the workload of `spec` into `sink`.
///
/// # Errors
/// The first error of the sink (the generator itself only produces valid events).
pub fn generate<S: Sink>(spec: &WorkloadSpec, sink: &mut S) -> Result<WorkloadSummary> {
    let mut rng = Rng::new(spec.seed);
    let mut summary = WorkloadSummary::default();
    let mut time = spec.start_time_ms;
    for index in 0..spec.sessions {
        let id = format!("session-{:08x}-{index:04}", rng.next_u64() as u32);
        let mut header = SessionHeader::new(id.clone(), time);
        header.cwd = Some(format!("/home/dev/project-{}", index % 3));
        sink.create(header)?;
        summary.sessions.push(id.clone());
        let mut w = Writer {
            sink: &mut *sink,
            id,
            time,
            surface: Vec::new(),
            tool_results: Vec::new(),
            turn: 0,
            appended: 0,
        };
        let mut turns = rng.range(spec.min_turns.max(1), spec.max_turns.max(1));
        if index < 2 {
            // The sessions that host the compaction and the prune get the turns they need.
            turns = turns.max(spec.max_turns.min(3));
        }
        let interrupted = spec.sessions >= 2 && index + 1 == spec.sessions;
        for t in 1..=turns {
            let last = t == turns;
            w.turn = t;
            w.log(&LogType::TURN_START, payload::turn_start(t))?;
            if index == 0 && t == 3 && w.surface.len() >= 3 {
                compact(&mut w, &mut rng)?;
                summary.compactions += 1;
            }
            if index == 1 && t == 2 && !w.tool_results.is_empty() {
                prune(&mut w)?;
                summary.prunes += 1;
            }
            let prompt = format!("Please {}.", Writer::<S>::sentence(&mut rng, 6));
            w.surface(
                SurfaceType::UserMessage,
                payload::user_message(&format!("u-{t}"), "user", &prompt),
                SurfaceIntent::append(),
            )?;
            if t == 1 {
                w.plugin(
                    "session/title",
                    format!(
                        r#"{{"title":{},"messageSeqs":[{}],"source":{{"kind":"fallback"}}}}"#,
                        json_str(&prompt),
                        w.surface[0]
                    ),
                )?;
            }
            let mut steps = rng.range(1, 3);
            if index == 1 && t == 1 {
                steps = 2; // a tool result for the prune of turn 2
            }
            for step in 1..=steps {
                let crash = interrupted && last && step == steps;
                if write_step(&mut w, &mut rng, spec.max_chunks, step, steps, crash)? {
                    summary.interrupted.push(w.id.clone());
                    break;
                }
            }
            if !(interrupted && last) {
                w.log(&LogType::TURN_END, payload::turn_end(t))?;
            }
        }
        time = w.time + 1000;
        summary.events += w.appended;
    }
    if let Some(parent) = summary.sessions.first().cloned() {
        fork_and_continue(sink, &mut summary, parent, time)?;
    }
    Ok(summary)
}

/// One step of turn `w.turn`: the model's streamed answer and its tool calls with their
/// results. `crash`: the session's last step, cut after its first call was logged (returns
/// `true`: the session ends there, interrupted).
fn write_step<S: Sink>(
    w: &mut Writer<'_, S>,
    rng: &mut Rng,
    max_chunks: u64,
    step: u64,
    steps: u64,
    crash: bool,
) -> Result<bool> {
    let t = w.turn;
    w.log(&LogType::STEP_START, payload::step(t, step))?;
    if step == 1 {
        w.log(&LogType::REQUEST_HEADER, payload::request_header())?;
        w.log(&LogType::REQUEST_CONTEXT, payload::request_context())?;
    }
    let final_step = step == steps;
    let calls: Vec<(String, String)> = if final_step && !crash {
        Vec::new()
    } else {
        (0..rng.range(1, 2))
            .map(|k| {
                (
                    format!("call-{t}-{step}-{k}"),
                    format!(
                        r#"{{"command":"{} {}"}}"#,
                        "cargo",
                        Writer::<S>::sentence(rng, 2)
                    ),
                )
            })
            .collect()
    };
    let (chunk_seqs, text) = w.stream(rng, max_chunks, step, &calls)?;
    let blocks: Vec<payload::ToolCallBlock<'_>> = calls
        .iter()
        .map(|(c, a)| (c.as_str(), "bash", a.as_str()))
        .collect();
    let msg = payload::assistant_message(t, step, &format!("a-{t}-{step}"), Some(&text), &blocks);
    w.surface(
        SurfaceType::AssistantMessage,
        msg,
        SurfaceIntent::append().with_sources(chunk_seqs),
    )?;
    if crash {
        // The crash: the first call started and was logged, the rest never did.
        if let Some((call_id, args)) = calls.first() {
            w.log(
                &LogType::TOOL_CALL,
                payload::tool_call(t, step, call_id, "bash", args),
            )?;
        }
        return Ok(true);
    }
    for (call_id, args) in &calls {
        let call_seq = w.log(
            &LogType::TOOL_CALL,
            payload::tool_call(t, step, call_id, "bash", args),
        )?;
        let words = rng.range(4, 40);
        let output = Writer::<S>::sentence(rng, words);
        let result_id = format!("r-{call_id}");
        let data = payload::tool_result(t, step, &result_id, call_id, &output);
        let seq = w.surface(
            SurfaceType::ToolResult,
            data,
            SurfaceIntent::append().with_sources(vec![call_seq]),
        )?;
        w.tool_results.push((seq, t, step, call_id.clone()));
    }
    w.log(&LogType::STEP_END, payload::step(t, step))?;
    Ok(false)
}

/// The first session forked, and one more turn on the fork.
fn fork_and_continue<S: Sink>(
    sink: &mut S,
    summary: &mut WorkloadSummary,
    parent: String,
    time: i64,
) -> Result<()> {
    let spec = ForkSpec::default().with_child_id(format!("{parent}-fork"));
    let child = sink.fork(&parent, spec)?;
    let mut w = Writer {
        sink: &mut *sink,
        id: child.clone(),
        time,
        surface: Vec::new(),
        tool_results: Vec::new(),
        turn: 100,
        appended: 0,
    };
    w.log(&LogType::TURN_START, payload::turn_start(100))?;
    w.surface(
        SurfaceType::UserMessage,
        payload::user_message("u-fork", "user", "Try the other approach."),
        SurfaceIntent::append(),
    )?;
    w.log(&LogType::TURN_END, payload::turn_end(100))?;
    summary.events += w.appended;
    summary.sessions.push(child.clone());
    summary.forks.push((parent, child));
    Ok(())
}

/// A compaction: the first surface nodes up to the second-to-last become one summary message.
fn compact<S: Sink>(w: &mut Writer<'_, S>, rng: &mut Rng) -> Result<()> {
    let shadowed: Vec<u64> = w.surface[..w.surface.len() - 1].to_vec();
    let (first, last) = (shadowed[0], shadowed[shadowed.len() - 1]);
    let id = format!("compaction-{}", rng.next_u64() as u32);
    let start = w.plugin(
        "compaction/start",
        format!(r#"{{"compactionId":"{id}","turn":{}}}"#, w.turn),
    )?;
    let summary = w.plugin(
        "compaction/summary",
        payload::compaction("summary", first, last, &shadowed),
    )?;
    let mut sources = vec![start, summary];
    sources.extend(&shadowed);
    let text = format!(
        "Summary of the conversation so far: {}.",
        Writer::<S>::sentence(rng, 12)
    );
    w.surface(
        SurfaceType::UserMessage,
        payload::user_message(&format!("{id}-summary"), "compaction", &text),
        SurfaceIntent::replace(first..=last).with_sources(sources),
    )?;
    w.plugin(
        "compaction/end",
        format!(r#"{{"compactionId":"{id}","turn":{}}}"#, w.turn),
    )?;
    Ok(())
}

/// A prune: the oldest tool result's output is replaced by a stub.
fn prune<S: Sink>(w: &mut Writer<'_, S>) -> Result<()> {
    let (seq, turn, step, call_id) = w.tool_results.remove(0);
    let prune = w.plugin(
        "compaction/prune",
        payload::compaction("summary", seq, seq, &[seq]),
    )?;
    let data = payload::tool_result(
        turn,
        step,
        &format!("r-{call_id}"),
        &call_id,
        "[output pruned]",
    );
    w.surface(
        SurfaceType::ToolResult,
        data,
        SurfaceIntent::replace(seq..=seq).with_sources(vec![seq, prune]),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessdb::{Clock, Config};

    #[test]
    fn default_workload_is_valid_deterministic_and_has_every_feature() {
        let run = || {
            let mut set = SessionSet::new(Config {
                clock: Clock::fixed(5),
                ..Config::default()
            });
            let summary = generate(&WorkloadSpec::default(), &mut set).unwrap();
            let lines: Vec<Vec<u8>> = set
                .iter()
                .flat_map(|s| s.events().map(|e| e.to_jsonl()))
                .collect();
            (summary, lines, set)
        };
        let (a, lines_a, set) = run();
        let (b, lines_b, _) = run();
        assert_eq!(a, b);
        assert_eq!(lines_a, lines_b);
        assert_eq!(a.sessions.len(), 5);
        assert_eq!(a.compactions, 1);
        assert_eq!(a.prunes, 1);
        assert_eq!(a.forks.len(), 1);
        assert_eq!(a.interrupted.len(), 1);
        assert!(set.get(&a.interrupted[0]).unwrap().turn_is_open());
        let (parent, child) = &a.forks[0];
        let child = set.get(child).unwrap();
        assert_eq!(
            child.header().parent_session.as_deref(),
            Some(parent.as_str())
        );
        assert!(a.events > 300, "{}", a.events);
    }
}
