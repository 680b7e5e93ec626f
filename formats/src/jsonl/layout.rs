//! Where DSH puts a session's JSONL file (`docs/FORMATS.md` §2.1):
//! `<root>/--<project-key>--/<escaped-id>/session.jsonl[.zstd]`, `<root>/_no-cwd/...` for
//! sessions without a cwd.
//!
//! Both name parts use DSH's `~XXXX` escaping (one escape per UTF-16 code unit, four upper-hex
//! digits) of every character outside `[A-Za-z0-9._-]`, so neither can contain a separator,
//! and an id of `.` or `..` is escaped whole: no session id or cwd can make a path outside
//! the root.

use std::path::{Path, PathBuf};

/// The raw file name.
pub const RAW_FILE: &str = "session.jsonl";
/// The zstd file name.
pub const ZSTD_FILE: &str = "session.jsonl.zstd";
/// The directory of sessions without a cwd.
pub const NO_CWD_DIR: &str = "_no-cwd";
/// DSH truncates project keys to this many characters.
pub const PROJECT_KEY_MAX: usize = 251;

fn is_plain(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn escape_char(c: char, out: &mut String) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        out.push_str(&format!("~{unit:04X}"));
    }
}

/// DSH's project key for a cwd, without the `--` wrapping.
pub fn project_key(cwd: &str) -> String {
    let mut out = String::with_capacity(cwd.len());
    let mut in_separator_run = false;
    for c in cwd.chars() {
        if matches!(c, '/' | '\\' | ':') {
            if !in_separator_run {
                out.push('-');
            }
            in_separator_run = true;
            continue;
        }
        in_separator_run = false;
        if is_plain(c) {
            out.push(c)
        } else {
            escape_char(c, &mut out)
        }
    }
    let trimmed = out.trim_start_matches('-');
    let key = if trimmed.is_empty() { "root" } else { trimmed };
    key.chars().take(PROJECT_KEY_MAX).collect()
}

/// DSH's directory name for a session id (injective).
pub fn escape_id(id: &str) -> String {
    if id == "." || id == ".." {
        return "~002E".repeat(id.len());
    }
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if is_plain(c) {
            out.push(c)
        } else {
            escape_char(c, &mut out)
        }
    }
    out
}

/// The directory of a session under `root`.
pub fn session_dir(root: &Path, id: &str, cwd: Option<&str>) -> PathBuf {
    let project = match cwd {
        Some(cwd) => format!("--{}--", project_key(cwd)),
        None => NO_CWD_DIR.to_owned(),
    };
    root.join(project).join(escape_id(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_keys_follow_dsh() {
        assert_eq!(
            project_key("/home/dev/my project"),
            "home-dev-my~0020project"
        );
        assert_eq!(project_key("C:\\\\Users\\x"), "C-Users-x");
        assert_eq!(project_key("/"), "root");
        assert_eq!(project_key(""), "root");
        assert_eq!(project_key("/a~b/é"), "a~007Eb-~00E9");
        assert_eq!(project_key("/😀"), "~D83D~DE00");
        assert_eq!(
            project_key(&format!("/{}", "a".repeat(300))).len(),
            PROJECT_KEY_MAX
        );
    }

    #[test]
    fn ids_cannot_escape_the_root() {
        assert_eq!(escape_id("."), "~002E");
        assert_eq!(escape_id(".."), "~002E~002E");
        assert_eq!(escape_id("../../x"), "..~002F..~002Fx");
        assert_eq!(escape_id("/etc/passwd"), "~002Fetc~002Fpasswd");
        assert_eq!(escape_id("session-1.a_b"), "session-1.a_b");
        let root = Path::new("/r");
        for id in [".", "..", "../../x", "/etc/passwd", "a\\b", "a\0b"] {
            let dir = session_dir(root, id, Some("/w"));
            assert_eq!(dir.parent(), Some(Path::new("/r/--w--")), "{id}");
            assert!(
                dir.components().all(|c| matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )),
                "{id}"
            );
        }
        assert_eq!(session_dir(root, "s", None), Path::new("/r/_no-cwd/s"));
    }
}
