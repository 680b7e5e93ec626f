//! Disk offsets and counts (`u64`) as memory indexes (`usize`): exact, because sessdb builds
//! for 64-bit targets only (asserted here, at compile time). Before, ~30 conversions of
//! values read from disk fell back silently to 0 or `usize::MAX` where they could not fail.

const _: () = assert!(
    usize::BITS == u64::BITS,
    "sessdb builds for 64-bit targets: its segments are mapped whole and indexed by u64"
);

/// `n` as an index: exact on every target sessdb builds for.
#[allow(
    clippy::cast_possible_truncation,
    reason = "usize is 64 bits wide (asserted above)"
)]
pub(crate) const fn index(n: u64) -> usize {
    n as usize
}
