//! File names: the writer's lock file, and numbered files `<dir>/<n as 20 digits>.<ext>`, so
//! names sort as their numbers do.

/// The lock file a writer holds (`docs/FORMAT.md` §1).
pub const LOCK_FILE: &str = "LOCK";

/// Present while a salvage rewrites the log (`docs/FORMAT.md` §1): a read-only view that
/// sees it keeps what it holds instead of reading a log half old, half new.
pub const SALVAGE_MARKER: &str = "SALVAGING";

/// `dir/<n, 20 digits>.ext`.
pub(crate) fn numbered_path(dir: &str, n: u64, ext: &str) -> String {
    format!("{dir}/{n:020}.{ext}")
}

/// The number a file name `<20 digits>.ext` stands for.
pub(crate) fn parse_numbered(name: &str, ext: &str) -> Option<u64> {
    let digits = name.strip_suffix(ext)?.strip_suffix('.')?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        let p = numbered_path("d", 42, "seg");
        assert_eq!(p, "d/00000000000000000042.seg");
        assert_eq!(parse_numbered(&p[2..], "seg"), Some(42));
        assert_eq!(parse_numbered("42.seg", "seg"), None);
        assert_eq!(parse_numbered("0000000000000000004x.seg", "seg"), None);
        assert_eq!(parse_numbered("00000000000000000042seg", "seg"), None);
        assert_eq!(parse_numbered("00000000000000000042.ckpt", "seg"), None);
    }
}
