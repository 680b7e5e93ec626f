//! Benchmarks of sessdb against the peers an agent harness would otherwise use: DSH-style
//! JSONL files (one file per session, one line per event) and SQLite (one row per event). All
//! three take the same generated workload through the workload `Sink` trait and make each turn
//! durable when it ends, as DSH's semantic checkpoints do.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use sessdb::{Draft, ForkSpec, Result, SessionHeader, Store, StoreOptions};
use sessdb_workload::Sink;

fn io(e: std::io::Error) -> sessdb::Error {
    sessdb::Error::Io {
        op: "bench peer",
        path: String::new(),
        source: e,
    }
}

fn is_turn_end(d: &Draft) -> bool {
    d.event_type() == "turn/end"
}

/// Discards everything: the cost of generating the workload itself, to subtract.
#[derive(Debug, Default)]
pub struct NullPeer {
    next: std::collections::HashMap<String, u64>,
}

impl Sink for NullPeer {
    fn create(&mut self, header: SessionHeader) -> Result<()> {
        self.next.insert(header.id, 1);
        Ok(())
    }

    fn append(&mut self, session: &str, draft: Draft) -> Result<u64> {
        let next = self.next.entry(session.to_owned()).or_insert(0);
        let seq = *next;
        std::hint::black_box(draft.into_event(seq, 1));
        *next += 1;
        Ok(seq)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String> {
        let child = spec.child_id.unwrap_or_else(|| format!("{source}-fork"));
        let len = self.next.get(source).copied().unwrap_or(0);
        self.next.insert(child.clone(), len + 1);
        Ok(child)
    }
}

/// sessdb, made durable (`sync`) at every turn end.
#[derive(Debug)]
pub struct SessdbPeer {
    /// The store.
    pub store: Store,
}

impl SessdbPeer {
    /// A store in `dir`.
    pub fn open(dir: &Path) -> Result<Self> {
        Ok(Self {
            store: Store::open(
                dir,
                StoreOptions::default().with_clock(sessdb::Clock::fixed(1)),
            )?,
        })
    }
}

impl Sink for SessdbPeer {
    fn create(&mut self, header: SessionHeader) -> Result<()> {
        self.store.create_session(header, Vec::new()).map(|_| ())
    }

    fn append(&mut self, session: &str, draft: Draft) -> Result<u64> {
        let end = is_turn_end(&draft);
        let seq = self.store.append(session, draft)?;
        if end {
            self.store.sync()?;
        }
        Ok(seq)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String> {
        self.store.fork(source, spec)
    }
}

/// DSH-style JSONL: one file per session, a write per event, `fsync` at every turn end.
#[derive(Debug)]
pub struct JsonlPeer {
    dir: PathBuf,
    files: HashMap<String, (File, u64)>,
}

impl JsonlPeer {
    /// Session files under `dir`.
    pub fn new(dir: &Path) -> Self {
        Self {
            dir: dir.to_owned(),
            files: HashMap::new(),
        }
    }

    fn path(&self, id: &str) -> PathBuf {
        self.dir
            .join(format!("{}.jsonl", id.replace(['/', '.'], "_")))
    }
}

impl Sink for JsonlPeer {
    fn create(&mut self, header: SessionHeader) -> Result<()> {
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.path(&header.id))
            .map_err(io)?;
        let mut line = header.to_json();
        line.extend_from_slice(
            b"\n{\"type\":\"session/end-seed\",\"seq\":0,\"time\":1,\"data\":{}}\n",
        );
        f.write_all(&line).map_err(io)?;
        f.sync_data().map_err(io)?;
        self.files.insert(header.id, (f, 1));
        Ok(())
    }

    fn append(&mut self, session: &str, draft: Draft) -> Result<u64> {
        let end = is_turn_end(&draft);
        let (file, next) =
            self.files
                .get_mut(session)
                .ok_or_else(|| sessdb::Error::SessionNotFound {
                    id: session.to_owned(),
                })?;
        let seq = *next;
        let mut line = draft.into_event(seq, 1).to_jsonl();
        line.push(b'\n');
        file.write_all(&line).map_err(io)?;
        if end {
            file.sync_data().map_err(io)?;
        }
        *next += 1;
        Ok(seq)
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String> {
        // DSH writes a fork's whole seed into the child's file.
        let child = spec.child_id.unwrap_or_else(|| format!("{source}-fork"));
        let len = self.files.get(source).map_or(0, |(_, n)| *n);
        std::fs::copy(self.path(source), self.path(&child)).map_err(io)?;
        let mut f = OpenOptions::new()
            .append(true)
            .open(self.path(&child))
            .map_err(io)?;
        f.write_all(
            format!("{{\"type\":\"session/end-seed\",\"seq\":{len},\"time\":1,\"data\":{{}}}}\n")
                .as_bytes(),
        )
        .map_err(io)?;
        f.sync_data().map_err(io)?;
        self.files.insert(child.clone(), (f, len + 1));
        Ok(child)
    }
}

/// SQLite: one row per event, one transaction per turn, `synchronous=FULL` in WAL mode.
#[derive(Debug)]
pub struct SqlitePeer {
    conn: rusqlite::Connection,
    next: HashMap<String, u64>,
    in_tx: bool,
}

fn sql(e: rusqlite::Error) -> sessdb::Error {
    io(std::io::Error::other(e.to_string()))
}

impl SqlitePeer {
    /// A database at `file`.
    pub fn open(file: &Path) -> Result<Self> {
        let conn = rusqlite::Connection::open(file).map_err(sql)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;
             CREATE TABLE sessions (id TEXT PRIMARY KEY, header TEXT NOT NULL) STRICT;
             CREATE TABLE events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, time INTEGER NOT NULL,
               data TEXT NOT NULL, source_event_seqs TEXT, surface_op TEXT, PRIMARY KEY (session_id, seq)) STRICT;",
        )
        .map_err(sql)?;
        Ok(Self {
            conn,
            next: HashMap::new(),
            in_tx: false,
        })
    }
}

impl Sink for SqlitePeer {
    fn create(&mut self, header: SessionHeader) -> Result<()> {
        let json = String::from_utf8_lossy(&header.to_json()).into_owned();
        self.conn
            .execute("INSERT INTO sessions VALUES (?1, ?2)", (&header.id, json))
            .map_err(sql)?;
        self.next.insert(header.id, 0);
        Ok(())
    }

    fn append(&mut self, session: &str, draft: Draft) -> Result<u64> {
        let end = is_turn_end(&draft);
        if !self.in_tx {
            self.conn.execute_batch("BEGIN").map_err(sql)?;
            self.in_tx = true;
        }
        let next = self
            .next
            .get_mut(session)
            .ok_or_else(|| sessdb::Error::SessionNotFound {
                id: session.to_owned(),
            })?;
        let e = draft.into_event(*next, 1);
        let sources = e.sources().map(|s| format!("{s:?}"));
        let op = e.surface_op().map(|o| format!("{o:?}"));
        self.conn
            .prepare_cached("INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")
            .and_then(|mut st| {
                st.execute((
                    session,
                    e.seq() as i64,
                    e.event_type(),
                    e.time(),
                    String::from_utf8_lossy(e.data()),
                    sources,
                    op,
                ))
            })
            .map_err(sql)?;
        *next += 1;
        if end {
            self.conn.execute_batch("COMMIT").map_err(sql)?;
            self.in_tx = false;
        }
        Ok(e.seq())
    }

    fn fork(&mut self, source: &str, spec: ForkSpec) -> Result<String> {
        let child = spec.child_id.unwrap_or_else(|| format!("{source}-fork"));
        self.conn
            .execute("INSERT INTO events SELECT ?2, seq, type, time, data, source_event_seqs, surface_op FROM events WHERE session_id = ?1", (source, &child))
            .map_err(sql)?;
        let len = self.next.get(source).copied().unwrap_or(0);
        self.next.insert(child.clone(), len);
        Ok(child)
    }
}

/// A realistic user message (about 190 bytes as a JSONL line), appended to the surface: the
/// event the report and the read benchmark append in bulk.
pub fn user_draft(n: u64) -> Draft {
    Draft::surface(
        sessdb::SurfaceType::UserMessage,
        sessdb_workload::payload::user_message(
            &format!("u{n}"),
            "user",
            "read the config and then fix the build",
        )
        .into_bytes(),
        sessdb::SurfaceIntent::append(),
    )
}
