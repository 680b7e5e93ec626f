//! One-line errors with an exit code and a hint of what to do.

use std::fmt;

/// Exit codes (documented in `--help` and the README).
pub mod code {
    /// Success.
    pub const OK: u8 = 0;
    /// Any other error (I/O, internal).
    pub const OTHER: u8 = 1;
    /// Usage error (clap's own).
    pub const USAGE: u8 = 2;
    /// Corruption found: by `verify`, or by any command reading a damaged store.
    pub const CORRUPTION: u8 = 3;
    /// Input refused: validation, an unreadable or unsupported input file, a conflict.
    pub const REJECTED: u8 = 4;
    /// The store is locked by another writer.
    pub const LOCKED: u8 = 5;
    /// No store at the path, or no such session in it.
    pub const NOT_FOUND: u8 = 6;
}

/// The error for a path that holds no store.
pub fn no_store(dir: &std::path::Path) -> CliError {
    CliError::new(
        code::NOT_FOUND,
        format!("no sessdb store at {}", dir.display()),
    )
    .hint("a store is a directory with a segments/ subdirectory; `sessdb import` or `sessdb demo` creates one")
}

/// What the CLI prints on failure: `sessdb: <what>. <hint>`.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    /// What to do; `STORE` in it stands for the command's store, named when printed.
    pub hint: Option<std::borrow::Cow<'static, str>>,
    pub code: u8,
}

impl CliError {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            code,
        }
    }

    pub fn hint(mut self, hint: &'static str) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// The hint with `STORE` replaced by the path of the store the command was given (quoted
    /// for a shell when it needs to be), so it can be run as printed.
    pub fn naming(mut self, store: Option<&std::path::Path>) -> Self {
        if let (Some(hint), Some(store)) = (&self.hint, store)
            && hint.contains("STORE")
        {
            let path = store.display().to_string();
            let plain = !path.is_empty()
                && path
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/._-~+,:@".contains(&b));
            let shown = if plain {
                path
            } else {
                format!("'{}'", path.replace('\'', r"'\''"))
            };
            self.hint = Some(hint.replace("STORE", &shown).into());
        }
        self
    }
}

/// An error as `--json` prints it:
/// `{"error":{"code":"NOT_FOUND","exit":6,"message":"...","hint":"..."|null}}` — `code` a
/// stable name (as the Node binding's), `exit` the exit status.
#[derive(serde::Serialize)]
pub struct ErrorJson<'a> {
    error: ErrorBody<'a>,
}

#[derive(serde::Serialize)]
struct ErrorBody<'a> {
    code: &'static str,
    exit: u8,
    message: &'a str,
    hint: Option<&'a str>,
}

/// The stable name of an exit status.
pub fn code_name(exit: u8) -> &'static str {
    match exit {
        code::OK => "OK",
        code::USAGE => "USAGE",
        code::CORRUPTION => "CORRUPTION",
        code::REJECTED => "REJECTED",
        code::LOCKED => "LOCKED",
        code::NOT_FOUND => "NOT_FOUND",
        _ => "ERROR",
    }
}

impl CliError {
    /// The JSON form of this error.
    pub fn to_json(&self) -> ErrorJson<'_> {
        ErrorJson {
            error: ErrorBody {
                code: code_name(self.code),
                exit: self.code,
                message: &self.message,
                hint: self.hint.as_deref(),
            },
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " ({h})")?;
        }
        Ok(())
    }
}

impl From<sessdb::Error> for CliError {
    fn from(e: sessdb::Error) -> Self {
        use sessdb::Error as E;
        let message = e.to_string();
        match e {
            E::Locked { .. } => CliError::new(code::LOCKED, message),
            E::Fork {
                code: sessdb::ForkErrorCode::SessionNotFound,
                ..
            } => CliError::new(code::NOT_FOUND, message),
            E::Rejected { .. }
            | E::Fork { .. }
            | E::InvalidHeader { .. }
            | E::InvalidEnvelope { .. }
            | E::InvalidType { .. }
            | E::SessionExists { .. }
            | E::UnsupportedFormat { .. }
            | E::NotAStore { .. } => CliError::new(code::REJECTED, message),
            E::Corruption { .. } => CliError::new(code::CORRUPTION, message).hint("run `sessdb verify STORE` to see all damage; `sessdb repair STORE --salvage --dry-run` shows what salvage would keep (every intact session, whole)"),
            E::SalvageInterrupted { .. } => CliError::new(code::CORRUPTION, message).hint("run `sessdb repair STORE --salvage` to finish the salvage (`--dry-run` first shows what it keeps)"),
            E::Poisoned { .. } | E::Overtaken { .. } => CliError::new(code::OTHER, message).hint("run the command again"),
            E::SessionNotFound { .. } => CliError::new(code::NOT_FOUND, message).hint("`sessdb ls STORE` lists the sessions"),
            _ => CliError::new(code::OTHER, message),
        }
    }
}

impl From<sessdb_formats::Error> for CliError {
    fn from(e: sessdb_formats::Error) -> Self {
        use sessdb_formats::Error as E;
        match e {
            E::Store(inner) => inner.into(),
            E::Conflict { .. } => CliError::new(code::REJECTED, e.to_string()).hint(
                "nothing of this import was stored; `sessdb import --dry-run` shows the plan per \
                 session, and `sessdb delete STORE SESSION` makes room for the incoming version",
            ),
            E::Invalid { .. }
            | E::InvalidRow { .. }
            | E::Corrupt { .. }
            | E::UnsupportedFormat { .. }
            | E::Layout { .. } => CliError::new(code::REJECTED, e.to_string()),
            _ => CliError::new(code::OTHER, e.to_string()),
        }
    }
}

/// The CLI's result type.
pub type CliResult<T = u8> = Result<T, CliError>;
