//! CRC-32 for the hot paths. `crc32fast::Hasher::new` detects the CPU's features on every
//! call; the log computes a checksum per appended event (its own) and two per record (the
//! frame's over what the events' leave out, the length's), so a hasher made once is cloned
//! instead.

use std::sync::LazyLock;

/// A hasher with the CPU's features already detected.
static PROTOTYPE: LazyLock<crc32fast::Hasher> = LazyLock::new(crc32fast::Hasher::new);

/// A fresh hasher (initial state), without a feature detection.
#[inline]
pub(crate) fn hasher() -> crc32fast::Hasher {
    PROTOTYPE.clone()
}

/// CRC-32 of `bytes`.
#[inline]
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut h = hasher();
    h.update(bytes);
    h.finalize()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_same_checksum_as_a_new_hasher() {
        for input in [
            &b""[..],
            b"a",
            b"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefX",
        ] {
            assert_eq!(super::crc32(input), crc32fast::hash(input));
        }
        let mut h = super::hasher();
        h.update(b"abc");
        let mut again = super::hasher();
        again.update(b"abc");
        assert_eq!(h.finalize(), again.finalize());
    }
}
