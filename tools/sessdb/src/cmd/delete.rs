//! `sessdb delete STORE SESSION`

use sessdb::StoreOptions;

use crate::cmd::{PathArg, open_store_writer};
use crate::error::{CliResult, code};
use crate::out::{note, shown};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The store directory.
    store: PathArg,
    /// The session to delete (its forks keep what they inherited).
    session: String,
}

pub fn run(a: &Args, quiet: bool) -> CliResult {
    let store = open_store_writer(&a.store, StoreOptions::default())?;
    let result = store.delete_session(&a.session);
    let close = store.close();
    result?;
    close?;
    note(quiet, &format!("deleted {}", shown(&a.session)));
    Ok(code::OK)
}
