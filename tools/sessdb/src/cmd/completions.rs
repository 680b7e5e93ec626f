//! `sessdb completions SHELL` and `sessdb man`: generated from the clap definitions, so they
//! cannot drift from the commands.

use crate::error::{CliError, CliResult, code};
use crate::out::print;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write every page (sessdb(1) and one per subcommand, sessdb-ls(1) and so on) into this
    /// directory instead of printing the top page.
    dir: Option<std::path::PathBuf>,
}

/// Prints the completion script for `a.shell`.
pub fn completions(a: &CompletionsArgs, mut command: clap::Command) -> CliResult {
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut command, "sessdb", &mut out);
    print(&out);
    Ok(code::OK)
}

/// Prints the top man page (roff), or writes all of them into a directory.
pub fn man(a: &ManArgs, command: clap::Command) -> CliResult {
    if let Some(dir) = &a.dir {
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError::new(code::OTHER, format!("cannot create {}: {e}", dir.display()))
        })?;
        clap_mangen::generate_to(command, dir).map_err(|e| {
            CliError::new(
                code::OTHER,
                format!("cannot write the man pages into {}: {e}", dir.display()),
            )
        })?;
        let mut pages: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("sessdb") && n.ends_with(".1"))
            .collect();
        pages.sort();
        for p in pages {
            let path = dir.join(p);
            let io = |e: std::io::Error| {
                CliError::new(code::OTHER, format!("cannot write {}: {e}", path.display()))
            };
            let page = std::fs::read_to_string(&path).map_err(io)?;
            std::fs::write(&path, keep_columns(&page)).map_err(io)?;
            crate::out::println(&path.display().to_string());
        }
        return Ok(code::OK);
    }
    let mut out = Vec::new();
    clap_mangen::Man::new(command)
        .render(&mut out)
        .map_err(|e| CliError::new(code::OTHER, format!("cannot render the man page: {e}")))?;
    print(keep_columns(&String::from_utf8_lossy(&out)).as_bytes());
    Ok(code::OK)
}

/// The page's EXTRA section (the examples and the exit codes, laid out in columns) set
/// without filling: `man` would otherwise join and re-break its lines.
fn keep_columns(page: &str) -> String {
    let mut out = String::with_capacity(page.len() + 16);
    let mut in_extra = false;
    for line in page.lines() {
        if in_extra && line.starts_with(".SH ") {
            out.push_str(".fi\n");
            in_extra = false;
        }
        out.push_str(line);
        out.push('\n');
        if line == ".SH EXTRA" {
            out.push_str(".nf\n");
            in_extra = true;
        }
    }
    if in_extra {
        out.push_str(".fi\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::keep_columns;

    #[test]
    fn the_extra_section_is_set_without_filling() {
        let page = ".SH NAME\nsessdb\n.SH EXTRA\nExamples:\n  a     b\n.SH VERSION\nv0\n";
        assert_eq!(
            keep_columns(page),
            ".SH NAME\nsessdb\n.SH EXTRA\n.nf\nExamples:\n  a     b\n.fi\n.SH VERSION\nv0\n"
        );
    }
}
