//! `sessdb show STORE SESSION [--events | --surface | --messages] [--from SEQ] [--to SEQ | --through SEQ] [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliError, CliResult, code};
use crate::out::{print, print_json, println, to_stdout};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").args(["events", "surface", "messages", "jsonl"])))]
pub struct Args {
    /// The store directory.
    pub store: PathArg,
    /// The session id.
    session: String,
    /// The events as DSH JSONL lines (the default).
    #[arg(long)]
    events: bool,
    /// The surface: the seqs whose events become messages.
    #[arg(long)]
    surface: bool,
    /// The derived LLM messages.
    #[arg(long)]
    messages: bool,
    /// The whole session file: the header line, then the events (chunk runs packed as DSH
    /// packs them), as `export --jsonl` writes it; `import --jsonl -` reads it back.
    #[arg(long, conflicts_with_all = ["from", "to", "through", "json"])]
    jsonl: bool,
    /// Start at this seq.
    #[arg(long, value_name = "SEQ", default_value_t = 0)]
    from: u64,
    /// Stop before this seq (exclusive, as the library's and Node's ranges are).
    #[arg(long, value_name = "SEQ", conflicts_with = "through")]
    to: Option<u64>,
    /// Stop after this seq (inclusive).
    #[arg(long, value_name = "SEQ")]
    through: Option<u64>,
    /// JSON output: for --surface an array of seqs, for --messages an array of
    /// `{"seq": N, "message": {...}}` (events are JSONL anyway).
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The seq the range ends before.
    fn end(&self) -> u64 {
        self.to
            .or(self.through.map(|t| t.saturating_add(1)))
            .unwrap_or(u64::MAX)
    }

    /// Whether a seq is within `--from` and `--to` / `--through`.
    fn wanted(&self, seq: u64) -> bool {
        seq >= self.from && seq < self.end()
    }
}

/// One message of `show --messages --json`.
#[derive(serde::Serialize)]
struct Message {
    seq: u64,
    message: Box<serde_json::value::RawValue>,
}

pub fn run(a: &Args) -> CliResult {
    if a.end() < a.from {
        return Err(CliError::new(
            code::USAGE,
            format!(
                "--from {} is past the range's end ({}): nothing could be shown",
                a.from,
                a.to.map_or_else(
                    || format!("--through {}", a.end() - 1),
                    |t| format!("--to {t}")
                )
            ),
        ));
    }
    let store = open_existing(&a.store)?;
    if a.jsonl {
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        to_stdout(sessdb_formats::jsonl::write_session_jsonl(
            &store,
            &a.session,
            &mut out,
            true,
            std::path::Path::new("stdout"),
        ))?;
        return Ok(code::OK);
    }
    if a.surface {
        let surface: Vec<u64> = store
            .surface(&a.session)?
            .into_iter()
            .filter(|s| a.wanted(*s))
            .collect();
        if a.json {
            print_json(&surface);
        } else {
            for seq in surface {
                let kind = store
                    .events(&a.session, seq..seq + 1)?
                    .first()
                    .map(|e| e.event_type().to_owned())
                    .unwrap_or_default();
                println(&format!("{seq}\t{kind}"));
            }
        }
        return Ok(code::OK);
    }
    if a.messages {
        let messages: Vec<sessdb::Message> = store
            .messages(&a.session)?
            .into_iter()
            .filter(|m| a.wanted(m.seq))
            .collect();
        if a.json {
            // The message bytes exactly as stored (validated JSON).
            let rows = messages
                .into_iter()
                .map(|sessdb::Message { seq, json, .. }| {
                    let text = String::from_utf8(json).map_err(|e| e.to_string())?;
                    let message = serde_json::value::RawValue::from_string(text)
                        .map_err(|e| e.to_string())?;
                    Ok(Message { seq, message })
                })
                .collect::<Result<Vec<_>, String>>()
                .map_err(|e| CliError::new(code::OTHER, format!("a stored message: {e}")))?;
            print_json(&rows);
        } else {
            for m in messages {
                println(&format!("{}\t{}", m.seq, String::from_utf8_lossy(&m.json)));
            }
        }
        return Ok(code::OK);
    }
    let mut out = Vec::new();
    for e in store.iter_events(&a.session, a.from..a.end())? {
        e?.write_jsonl(&mut out);
        out.push(b'\n');
        if out.len() >= 1 << 16 {
            print(&out);
            out.clear();
        }
    }
    print(&out);
    Ok(code::OK)
}
