//! `sessdb show STORE SESSION [--events | --surface | --messages] [--from SEQ] [--to SEQ] [--json]`

use crate::cmd::{PathArg, open_existing};
use crate::error::{CliResult, code};
use crate::out::{print, println};

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("what").args(["events", "surface", "messages"])))]
pub struct Args {
    /// The store directory.
    store: PathArg,
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
    /// Start at this seq.
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// Stop after this seq (inclusive).
    #[arg(long, value_name = "SEQ")]
    to: Option<u64>,
    /// JSON output: for --surface an array of seqs, for --messages an array of
    /// `{"seq": N, "message": {...}}` (events are JSONL anyway).
    #[arg(long)]
    json: bool,
}

impl Args {
    /// Whether a seq is within `--from` and `--to`.
    fn wanted(&self, seq: u64) -> bool {
        seq >= self.from && self.to.is_none_or(|t| seq <= t)
    }
}

pub fn run(a: &Args) -> CliResult {
    let store = open_existing(&a.store)?;
    if a.surface {
        let surface: Vec<u64> = store
            .surface(&a.session)?
            .into_iter()
            .filter(|s| a.wanted(*s))
            .collect();
        if a.json {
            println(&format!(
                "[{}]",
                surface
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        } else {
            for seq in surface {
                let kind = store
                    .events(&a.session, seq, seq + 1)?
                    .first()
                    .map(|e| e.event_type().to_owned())
                    .unwrap_or_default();
                println(&format!("{seq}\t{kind}"));
            }
        }
        return Ok(code::OK);
    }
    if a.messages {
        let messages: Vec<(u64, Vec<u8>)> = store
            .messages(&a.session)?
            .into_iter()
            .filter(|(s, _)| a.wanted(*s))
            .collect();
        if a.json {
            let mut out = b"[".to_vec();
            // `[{"seq":N,"message":{...}}, ...]`: the message bytes exactly as stored.
            for (i, (seq, json)) in messages.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(format!("{{\"seq\":{seq},\"message\":").as_bytes());
                out.extend_from_slice(json);
                out.push(b'}');
            }
            out.extend_from_slice(b"]\n");
            print(&out);
        } else {
            for (seq, json) in messages {
                println(&format!("{seq}\t{}", String::from_utf8_lossy(&json)));
            }
        }
        return Ok(code::OK);
    }
    let len = store
        .session_len(&a.session)?
        .min(a.to.map_or(u64::MAX, |t| t.saturating_add(1)));
    let mut from = a.from;
    while from < len {
        let events = store.events(&a.session, from, (from + 1024).min(len))?;
        from += events.len().max(1) as u64;
        let mut out = Vec::new();
        for e in events {
            e.write_jsonl(&mut out);
            out.push(b'\n');
        }
        print(&out);
    }
    Ok(code::OK)
}
