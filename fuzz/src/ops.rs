//! The operation language of `replace_validation` and the harness that runs each operation
//! through the in-memory session, a store on `MemStorage`, and the reference model.

use std::collections::HashMap;
use std::sync::Arc;

use arbitrary::Arbitrary;
use sessdb::storage::MemStorage;
use sessdb::{Clock, Config, Draft, Error, Session, SessionHeader, Store, StoreOptions, SurfaceOp};
use sessdb_reference::{Candidate, Model, Op, Refusal};

use crate::data::{Tool, ToolEdit, assistant, user};

/// A replace endpoint.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Pick {
    /// The node at this index of the current surface (modulo its length).
    Index(u8),
    /// Any seq (modulo the next seq plus two: sometimes not even written yet).
    Seq(u16),
}

/// How a surface event cites its sources.
#[derive(Debug, Clone, Arbitrary)]
pub struct Sources {
    /// No `sourceEventSeqs` at all.
    pub absent: bool,
    /// `sourceEventSeqs: []`.
    pub empty: bool,
    /// Cite the shadowed seqs (replaces).
    pub shadowed: bool,
    /// Drop the cited seq at this index.
    pub drop: Option<u8>,
    /// Cite the seq at this index twice.
    pub duplicate: Option<u8>,
    /// Cite the event's own seq, or the one after it.
    pub later: Option<bool>,
    /// More citations of earlier seqs.
    pub extra: Vec<u8>,
    /// Cite in descending order.
    pub reverse: bool,
}

/// A surface type the language writes.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Kind {
    /// `user/message`.
    User,
    /// `assistant/message`, possibly with empty content.
    Assistant(bool),
    /// `tool/result`.
    Tool,
}

/// A log-only event.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Log {
    /// A plugin event.
    Note,
    /// `turn/start`.
    TurnStart,
    /// `turn/end`, completed.
    TurnEnd,
    /// `compaction/summary`, as written before a compaction's replacement.
    CompactionSummary,
    /// A log event carrying `surfaceOp` (refused).
    WithSurfaceOp,
    /// A log event carrying `sourceEventSeqs` (refused).
    WithSources,
    /// `mode/set` (retired, refused).
    ModeSet,
}

/// One operation.
#[derive(Debug, Clone, Arbitrary)]
pub enum Action {
    /// Append a surface event.
    Append(Kind, Sources),
    /// Replace `start..=end` with a surface event; `edit` says how a tool-result replacement
    /// differs from its target.
    Replace {
        /// The replacement's type.
        kind: Kind,
        /// The first shadowed node.
        start: Pick,
        /// The last shadowed node.
        end: Pick,
        /// Its citations.
        sources: Sources,
        /// For a tool result: what changes.
        edit: ToolEdit,
    },
    /// A log-only event.
    Log(Log),
    /// A checkpoint of the store.
    Checkpoint,
    /// Close the store and open it again.
    Reopen,
}

const ID: &str = "fuzz";

fn config() -> Config {
    Config {
        clock: Clock::fixed(0),
        ..Config::default()
    }
}

fn options() -> StoreOptions {
    StoreOptions::tiny().with_clock(Clock::fixed(0))
}

/// Builds candidates from actions against the reference model, and remembers the tool
/// results it wrote so a replacement can edit one field of its target.
#[derive(Debug, Default)]
pub struct Builder {
    model: Model,
    tools: HashMap<u64, Tool>,
    pending: Option<(u64, Tool)>,
}

impl Builder {
    /// An empty session.
    pub fn new() -> Self {
        Self::default()
    }

    /// The model of the events offered and accepted so far.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The candidate event of `action` at `seq` (none for checkpoints and reopens).
    pub fn candidate(&mut self, action: &Action, seq: u64) -> Option<Candidate> {
        self.pending = None;
        let c = match action {
            Action::Checkpoint | Action::Reopen => return None,
            Action::Log(log) => log_candidate(*log, seq),
            Action::Append(kind, sources) => {
                let (ty, data, tool) = self.payload(*kind, seq, None, ToolEdit::Content);
                self.pending = tool.map(|t| (seq, t));
                let mut c = Candidate::surface(seq, ty, data.as_bytes(), Op::Append);
                c.sources = self.sources(sources, seq, &[]);
                c
            }
            Action::Replace {
                kind,
                start,
                end,
                sources,
                edit,
            } => {
                let (start, end) = (self.pick(*start), self.pick(*end));
                let (ty, data, tool) = self.payload(*kind, seq, Some(start), *edit);
                self.pending = tool.map(|t| (seq, t));
                let surface = self.model.surface();
                let shadowed = match (
                    surface.iter().position(|&s| s == start),
                    surface.iter().position(|&s| s == end),
                ) {
                    (Some(i), Some(j)) if i <= j => surface[i..=j].to_vec(),
                    _ => Vec::new(),
                };
                let mut c =
                    Candidate::surface(seq, ty, data.as_bytes(), Op::Replace { start, end });
                c.sources = self.sources(sources, seq, &shadowed);
                c
            }
        };
        Some(c)
    }

    /// Offers `c` to the model; an accepted tool result is remembered.
    ///
    /// # Errors
    /// The model's refusal.
    pub fn offer(&mut self, c: &Candidate) -> Result<(), Refusal> {
        self.model.accept(c)?;
        if let Some((seq, tool)) = self.pending.take()
            && seq == c.seq
        {
            self.tools.insert(seq, tool);
        }
        Ok(())
    }

    fn pick(&self, pick: Pick) -> u64 {
        let surface = self.model.surface();
        match pick {
            Pick::Index(i) if !surface.is_empty() => surface[usize::from(i) % surface.len()],
            Pick::Index(i) => u64::from(i),
            Pick::Seq(s) => u64::from(s) % (self.model.len() + 2),
        }
    }

    /// The type and data of a surface event; for a tool-result replacement of a tool result
    /// this builder wrote, its target edited by `edit`.
    fn payload(
        &self,
        kind: Kind,
        seq: u64,
        target: Option<u64>,
        edit: ToolEdit,
    ) -> (&'static str, String, Option<Tool>) {
        match kind {
            Kind::User => ("user/message", user(seq, &format!("text {seq}")), None),
            Kind::Assistant(empty) => ("assistant/message", assistant(seq, empty), None),
            Kind::Tool => {
                let base = target
                    .and_then(|t| self.tools.get(&t).cloned())
                    .unwrap_or_else(|| Tool::new(seq));
                let (tool, data) = match target {
                    Some(_) => base.edited(edit, seq),
                    None => {
                        let data = base.data();
                        (base, data)
                    }
                };
                ("tool/result", data, Some(tool))
            }
        }
    }

    fn sources(&self, spec: &Sources, seq: u64, shadowed: &[u64]) -> Option<Vec<u64>> {
        if spec.absent {
            return None;
        }
        if spec.empty {
            return Some(Vec::new());
        }
        let mut out: Vec<u64> = if spec.shadowed {
            shadowed.to_vec()
        } else {
            Vec::new()
        };
        for &e in spec.extra.iter().take(4) {
            let s = u64::from(e) % seq.max(1);
            if s < seq && !out.contains(&s) {
                out.push(s);
            }
        }
        if let Some(d) = spec.drop
            && !out.is_empty()
        {
            out.remove(usize::from(d) % out.len());
        }
        if let Some(d) = spec.duplicate
            && !out.is_empty()
        {
            out.push(out[usize::from(d) % out.len()]);
        }
        if let Some(after) = spec.later {
            out.push(seq + u64::from(after));
        }
        out.sort_unstable();
        if spec.reverse {
            out.reverse();
        }
        Some(out)
    }
}

fn log_candidate(log: Log, seq: u64) -> Candidate {
    let (ty, data): (&str, &str) = match log {
        Log::Note | Log::WithSurfaceOp | Log::WithSources => ("command/run", r#"{"command":"ls"}"#),
        Log::TurnStart => ("turn/start", r#"{"turn":1}"#),
        Log::TurnEnd => ("turn/end", r#"{"turn":1,"reason":{"kind":"completed"}}"#),
        Log::CompactionSummary => (
            "compaction/summary",
            r#"{"shadowedRange":{"start":0,"end":0},"shadowedSeqs":[0],"shadowedTokenCount":1}"#,
        ),
        Log::ModeSet => ("mode/set", r#"{"mode":"plan"}"#),
    };
    let mut c = Candidate::log(seq, ty, data.as_bytes());
    match log {
        Log::WithSurfaceOp => c.op = Some(Op::Append),
        Log::WithSources => c.sources = Some(vec![seq.saturating_sub(1)]),
        _ => {}
    }
    c
}

/// The three deciders: the in-memory session, the store, the reference model.
pub struct Harness {
    session: Session,
    storage: Arc<MemStorage>,
    store: Store,
    builder: Builder,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// An empty session in all three.
    pub fn new() -> Self {
        let session =
            Session::restore(SessionHeader::new(ID, 0), [], config()).expect("an empty session");
        let storage = Arc::new(MemStorage::new());
        let store = Store::open_with(storage.clone(), options()).expect("a new store");
        store
            .restore_session(SessionHeader::new(ID, 0), Vec::new())
            .expect("an empty session");
        Self {
            session,
            storage,
            store,
            builder: Builder::new(),
        }
    }

    /// Runs one operation in all three and compares them.
    pub fn step(&mut self, action: &Action) {
        let seq = self.builder.model().len();
        match action {
            Action::Checkpoint => {
                self.store.checkpoint().expect("checkpoint");
                return;
            }
            Action::Reopen => {
                self.store.close().expect("close");
                self.store = Store::open_with(self.storage.clone(), options()).expect("reopen");
                self.compare_store("after reopen");
                return;
            }
            _ => {}
        }
        let Some(candidate) = self.builder.candidate(action, seq) else {
            return;
        };
        let expected = self.builder.model().decide(&candidate);
        let draft = draft(&candidate);
        let in_memory = self.session.append(draft.clone());
        // Both ways in, alternately: the one-event append (`Catalog::append_one`) and a
        // batch of one (the batch path).
        let stored = if seq % 2 == 0 {
            self.store.append(ID, draft).map(|s| s..s + 1)
        } else {
            self.store.append_batch(ID, vec![draft])
        };
        let line = String::from_utf8_lossy(&candidate.to_jsonl()).into_owned();
        match &expected {
            Ok(()) => {
                assert_eq!(
                    in_memory.ok(),
                    Some(seq),
                    "session refused what the model accepts: {line}"
                );
                assert_eq!(
                    stored.ok(),
                    Some(seq..seq + 1),
                    "store refused what the model accepts: {line}"
                );
                self.builder.offer(&candidate).expect("decided");
            }
            Err(refusal) => {
                assert_eq!(
                    rule(in_memory),
                    refusal.rule,
                    "session vs model ({}) on {line}",
                    refusal.detail
                );
                assert_eq!(
                    rule(stored.map(|r| r.start)),
                    refusal.rule,
                    "store vs model ({}) on {line}",
                    refusal.detail
                );
            }
        }
        let surface = self.builder.model().surface();
        assert_eq!(
            self.session.surface(),
            surface.as_slice(),
            "session surface after {line}"
        );
        assert_eq!(
            self.store.surface(ID).expect("surface"),
            surface,
            "store surface after {line}"
        );
    }

    /// Compares messages everywhere and the store after a reopen.
    pub fn finish(mut self) {
        let expected = self.builder.model().messages();
        let got: Vec<(u64, String)> = self
            .session
            .messages()
            .iter()
            .map(|m| (m.seq, String::from_utf8_lossy(m.json).into_owned()))
            .collect();
        assert_eq!(got, expected, "session messages");
        self.compare_store("at the end");
        self.step(&Action::Reopen);
    }

    fn compare_store(&self, when: &str) {
        let model = self.builder.model();
        assert_eq!(
            self.store.session_len(ID).expect("len"),
            model.len(),
            "{when}"
        );
        assert_eq!(
            self.store.surface(ID).expect("surface"),
            model.surface(),
            "{when}"
        );
        let got: Vec<(u64, String)> = self
            .store
            .messages(ID)
            .expect("messages")
            .into_iter()
            .map(|m| (m.seq, String::from_utf8_lossy(&m.json).into_owned()))
            .collect();
        assert_eq!(got, model.messages(), "store messages {when}");
    }
}

/// The engine's draft of a candidate.
pub fn draft(c: &Candidate) -> Draft {
    let mut d = Draft::dynamic(c.ty.as_str(), c.data.clone());
    match c.op {
        Some(Op::Append) => d = d.with_surface_op(SurfaceOp::Append),
        Some(Op::Replace { start, end }) => {
            d = d.with_surface_op(SurfaceOp::Replace { start, end })
        }
        None => {}
    }
    if let Some(s) = &c.sources {
        d = d.with_sources(s.clone());
    }
    if c.ignorable {
        d = d.ignorable();
    }
    d
}

/// The rule an engine refusal names; anything but a rule refusal is a bug here.
pub fn rule<T: std::fmt::Debug>(result: Result<T, Error>) -> &'static str {
    match result {
        Err(Error::Rejected { violation, .. }) => violation.rule(),
        other => panic!("expected a rule refusal, got {other:?}"),
    }
}
