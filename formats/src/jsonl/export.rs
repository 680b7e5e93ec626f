//! Export of a store to the DSH v0 JSONL layout, streaming: events are read in windows,
//! written through the packer, and each file is written to a temp name and renamed.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use sessdb::Store;
use sessdb::storage::{FileWriter, FsStorage, Replacement, temp_name};
use sessdb::store::SessionInfo;

use super::layout::{RAW_FILE, ZSTD_FILE, session_dir};
use crate::pack::Packer;
use crate::{Error, Progress, Result};

/// Events read from the store at a time.
const WINDOW: u64 = 1024;
/// Threads that commit finished files (sync, rename, directory sync) while the next is
/// written. Measured with `report --only export --quick`, alternating, a fuzzer busy on the
/// other core: one 1.85–1.96× the bare loop's time, two 1.75–1.81×, four 1.79–2.15×.
const COMMITTERS: usize = 2;
/// Bytes collected before each `write` to a session file (the default 8 KiB made a write
/// system call every ~60 lines: 19 % of an export of DSH's mix).
const WRITE_BUFFER: usize = 256 << 10;
/// A zstd frame closes after a `turn/end` line or at this much plaintext.
const FRAME_BYTES: usize = 1 << 20;

/// How to export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportOptions {
    /// Write `session.jsonl.zstd` (a header frame, then frames of lines) instead of raw.
    pub zstd: bool,
    /// Pack chunk runs into `*-chunks` rows (DSH's default).
    pub pack: bool,
    /// Only these sessions (all when empty).
    pub sessions: Vec<String>,
    /// Write into a non-empty root that does not look like a sessions root (other files or
    /// directories in it). A path through a symbolic link is refused even so.
    pub force: bool,
}

impl Default for ExportOptions {
    fn default() -> Self {
        Self {
            zstd: false,
            pack: true,
            sessions: Vec::new(),
            force: false,
        }
    }
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportReport {
    /// `(session id, file)` per session.
    pub files: Vec<(String, PathBuf)>,
    /// Events written.
    pub events: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Session files already under the root that this export did not write (an earlier
    /// export's sessions since deleted from the store, or not chosen this time): left as they
    /// were, and named here so a re-export over an earlier one says what it kept.
    pub left: Vec<PathBuf>,
}

/// Exports sessions of `store` under `root`.
///
/// # Errors
/// `SessionNotFound` for a chosen session that does not exist; `Layout` when the root holds
/// the other encoding, when the root, a directory on the way to it, or a directory or file
/// inside it is a symbolic link, or when the root is not empty and holds anything but project directories
/// (`--…--`, `_no-cwd`: an earlier export or a DSH sessions root) unless `force`; I/O errors.
pub fn export_jsonl(store: &Store, root: &Path, options: &ExportOptions) -> Result<ExportReport> {
    export_jsonl_with_progress(store, root, options, &mut |_| {})
}

/// As [`export_jsonl`], telling `progress` how far it has come (for progress bars).
///
/// # Errors
/// As [`export_jsonl`].
pub fn export_jsonl_with_progress(
    store: &Store,
    root: &Path,
    options: &ExportOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<ExportReport> {
    let chosen = crate::select::chosen_sessions(store, &options.sessions)?;
    check_root(root, options.force)?;
    check_one_encoding(root, options.zstd)?;
    if options.zstd && !cfg!(feature = "zstd") {
        return Err(Error::Layout {
            path: root.to_owned(),
            problem: "a zstd export needs sessdb-formats' `zstd` feature, not in this build".into(),
        });
    }
    let mut done = Progress {
        events_total: chosen.iter().map(|i| i.events).sum(),
        ..Progress::default()
    };
    // One storage rooted at the export root, so the replacements outlive the loop: each
    // finished file is handed to a committer thread, which syncs it, renames it into place
    // and syncs its directory while this thread writes the next file (the two device flushes
    // per file no longer stall the writing; `docs/PERFORMANCE.md`). The first error of a
    // committer ends the export (files already committed stay, as before).
    let storage = FsStorage::new(root);
    let (tx, rx) = std::sync::mpsc::sync_channel::<(Replacement<'_>, PathBuf)>(2);
    let rx = std::sync::Mutex::new(rx);
    let rx = &rx;
    let failed = &std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        let spawn = || scope.spawn(move || commit_all(rx, failed));
        let committers: Vec<_> = (0..COMMITTERS).map(|_| spawn()).collect();
        let mut report = ExportReport::default();
        let write_all = || -> Result<()> {
            for info in chosen {
                // A committer failed: stop writing; its error is reported below.
                if failed.load(std::sync::atomic::Ordering::Relaxed) {
                    return Ok(());
                }
                let (file, path, written) =
                    write_file(store, &info, root, &storage, options, &mut |n| {
                        done.events_done += n;
                        progress(done);
                    })?;
                // A closed channel means every committer stopped: their error is reported below.
                if tx.send((file, path.clone())).is_err() {
                    return Ok(());
                }
                done.bytes_done += written;
                report.events += info.events;
                report.bytes += written;
                report.files.push((info.header.id.clone(), path));
                progress(done);
            }
            Ok(())
        };
        let written = write_all();
        drop(tx);
        let mut committed = Ok(());
        for c in committers {
            let r = c
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if committed.is_ok() {
                committed = r;
            }
        }
        written?;
        committed?;
        report.left = session_files(root)
            .into_iter()
            .filter(|f| !report.files.iter().any(|(_, w)| w == f))
            .collect();
        Ok(report)
    })
}

/// A committer: syncs each finished file, renames it into place and syncs its directory,
/// until the channel closes; the first failure stops it (and, through `failed`, the export).
fn commit_all(
    rx: &std::sync::Mutex<std::sync::mpsc::Receiver<(Replacement<'_>, PathBuf)>>,
    failed: &std::sync::atomic::AtomicBool,
) -> Result<()> {
    loop {
        // A poisoned lock means another committer panicked; its join re-raises it.
        let Ok(job) = rx.lock().map(|rx| rx.recv()) else {
            return Ok(());
        };
        let Ok((file, path)) = job else {
            return Ok(());
        };
        if let Err(e) = file.commit() {
            failed.store(true, std::sync::atomic::Ordering::Relaxed);
            return Err(Error::io("replace", &path, e));
        }
    }
}

/// Writes one session's file under its temp name below `root` (nothing is renamed yet):
/// the replacement to commit, the file's final path, and the bytes written.
fn write_file<'s>(
    store: &Store,
    info: &SessionInfo,
    root: &Path,
    storage: &'s FsStorage,
    options: &ExportOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<(Replacement<'s>, PathBuf, u64)> {
    let dir = session_dir(root, &info.header.id, info.header.cwd.as_deref());
    let name = if options.zstd { ZSTD_FILE } else { RAW_FILE };
    let path = dir.join(name);
    for on_the_way in [dir.parent().unwrap_or(root), &dir, &path] {
        refuse_link(on_the_way)?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;
    let relative = path
        .strip_prefix(root)
        .ok()
        .and_then(Path::to_str)
        .ok_or_else(|| Error::Layout {
            path: path.clone(),
            problem: "the session's path is not UTF-8 under the root".into(),
        })?;
    let tmp = dir.join(temp_name(name));
    let file = Replacement::create(storage, relative).map_err(|e| Error::io("create", &tmp, e))?;
    let mut sink = Sink::new(
        BufWriter::with_capacity(WRITE_BUFFER, FileWriter::new(file.file())),
        options.zstd,
    );
    write_session(store, info, &mut sink, options.pack, &tmp, progress)?;
    let written = sink.finish().map_err(|e| Error::io("write", &tmp, e))?;
    Ok((file, path, written))
}

/// Writes one session as its DSH `session.jsonl` (header line, then the events; chunk runs
/// packed as DSH packs them unless `pack` is false) to `out`, for example stdout. Returns the
/// events written.
///
/// # Errors
/// `SessionNotFound`; store read errors; I/O errors of `out` (named `path` in messages).
pub fn write_session_jsonl(
    store: &Store,
    id: &str,
    out: &mut dyn Write,
    pack: bool,
    path: &Path,
) -> Result<u64> {
    let info = crate::select::chosen_sessions(store, &[id.to_owned()])?
        .into_iter()
        .next()
        .ok_or_else(|| sessdb::Error::SessionNotFound { id: id.to_owned() })?;
    let mut sink = Sink::new(out, false);
    write_session(store, &info, &mut sink, pack, path, &mut |_| {})?;
    sink.finish().map_err(|e| Error::io("write", path, e))?;
    Ok(info.events)
}

/// The header line and the events of one session into `sink`; `done(n)` after each window.
fn write_session<W: Write>(
    store: &Store,
    info: &SessionInfo,
    sink: &mut Sink<W>,
    pack: bool,
    path: &Path,
    done: &mut dyn FnMut(u64),
) -> Result<()> {
    let mut header = info.header.to_json();
    header.push(b'\n');
    sink.write(&header)
        .map_err(|e| Error::io("write", path, e))?;
    let mut packer = Packer::new(pack);
    let mut out = Vec::new();
    let mut from = 0;
    // Where a writer's batch began (an event marked so: a DSH zstd frame imported, a batch
    // DSH's backend wrote) a packed row and a frame begin, wherever in the session it is —
    // also after events that came without marks (imported from an uncompressed file). Before
    // the first mark, a frame ends at each `turn/end` or after `FRAME_BYTES`; from it on,
    // frames begin at marks and only there, so DSH's file comes out byte for byte.
    let mut dsh = false;
    let mut io_error = None;
    while from < info.events {
        let to = (from + WINDOW).min(info.events);
        // Events are written from the bytes read (borrowed), not decoded into owned events.
        store.visit_events(&info.header.id, from..to, |event| {
            if event.frame_start() {
                dsh = true;
                packer.flush(&mut out);
                if let Err(e) = sink.write(&out) {
                    io_error.get_or_insert(e);
                }
                out.clear();
            }
            let closes_turn = event.event_type() == "turn/end";
            packer.push_ref(&event, &mut out);
            if closes_turn {
                packer.flush(&mut out);
            }
            if !dsh && (closes_turn || out.len() >= FRAME_BYTES) {
                if let Err(e) = sink.write(&out) {
                    io_error.get_or_insert(e);
                }
                out.clear();
            }
            Ok(())
        })?;
        if let Some(e) = io_error.take() {
            return Err(Error::io("write", path, e));
        }
        done(to - from);
        from = to;
    }
    packer.flush(&mut out);
    sink.write(&out).map_err(|e| Error::io("write", path, e))?;
    Ok(())
}

/// The one rule for links: an export writes through no symbolic link, neither on the path as
/// given (the root or the SQLite file, or any directory named on the way to it: `link` and
/// `link/sub` alike) nor inside the root. A path through a link is refused with the link
/// named; pass the resolved path (`realpath`) to write there.
pub(crate) fn refuse_links_on_path(path: &Path) -> Result<()> {
    for p in path.ancestors().filter(|p| !p.as_os_str().is_empty()) {
        refuse_link(p)?;
    }
    Ok(())
}

/// A symbolic link anywhere on the way would take the export out of the root: refused.
pub(crate) fn refuse_link(path: &Path) -> Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(Error::Layout {
            path: path.to_owned(),
            problem: "is a symbolic link; an export writes through no link (give the resolved path, as `realpath` prints it, to write there)".into(),
        }),
        _ => Ok(()),
    }
}

/// The root is new, empty, or a sessions root (only project directories), unless forced; never
/// a symbolic link, never a file.
fn check_root(root: &Path, force: bool) -> Result<()> {
    refuse_links_on_path(root)?;
    let Ok(entries) = std::fs::read_dir(root) else {
        if root.exists() {
            return Err(Error::Layout {
                path: root.to_owned(),
                problem: "is not a directory".into(),
            });
        }
        return Ok(());
    };
    if force {
        return Ok(());
    }
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let project = name == "_no-cwd"
            || (name.len() >= 4 && name.starts_with("--") && name.ends_with("--"));
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !(project && is_dir) {
            return Err(Error::Layout {
                path: root.to_owned(),
                problem: format!(
                    "holds {name:?}, which is not a project directory of a sessions root: not an earlier export; pass --force to write into it anyway"
                ),
            });
        }
    }
    Ok(())
}

/// The session files of a sessions root (`<root>/<project>/<session>/session.jsonl[.zstd]`),
/// sorted.
fn session_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dirs = |p: &Path| {
        std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect::<Vec<_>>()
    };
    for project in dirs(root) {
        for session in dirs(&project) {
            for name in [RAW_FILE, ZSTD_FILE] {
                let f = session.join(name);
                if f.is_file() {
                    out.push(f);
                }
            }
        }
    }
    out.sort();
    out
}

/// A root holds one encoding only (DSH): refuse to add the other.
fn check_one_encoding(root: &Path, zstd: bool) -> Result<()> {
    let other = if zstd { RAW_FILE } else { ZSTD_FILE };
    let Ok(projects) = std::fs::read_dir(root) else {
        return Ok(());
    };
    for project in projects.flatten() {
        let Ok(sessions) = std::fs::read_dir(project.path()) else {
            continue;
        };
        for session in sessions.flatten() {
            if session.path().join(other).exists() {
                return Err(Error::Layout {
                    path: session.path(),
                    problem: format!(
                        "the root already holds {other} files; a root holds one encoding only"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// Raw bytes, or one zstd frame per `write`.
struct Sink<W: Write> {
    out: W,
    #[cfg_attr(
        not(feature = "zstd"),
        allow(
            dead_code,
            reason = "export refuses zstd before writing without the feature"
        )
    )]
    zstd: bool,
    written: u64,
}

impl<W: Write> Sink<W> {
    fn new(out: W, zstd: bool) -> Self {
        Self {
            out,
            zstd,
            written: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        #[cfg(feature = "zstd")]
        if self.zstd {
            let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3)?;
            enc.include_checksum(true)?;
            enc.write_all(bytes)?;
            let frame = enc.finish()?;
            self.out.write_all(&frame)?;
            self.written += frame.len() as u64;
            return Ok(());
        }
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    /// Flushes; the replacement's commit syncs.
    fn finish(mut self) -> std::io::Result<u64> {
        self.out.flush()?;
        Ok(self.written)
    }
}
