//! Scanning JSON strings eight bytes at a time (SWAR: SIMD within a register): one pass that
//! stops at the bytes a string scan must look at, with no setup cost for short strings.

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The eight bytes at `at`, little-endian, when there are eight.
#[inline]
pub(crate) fn word_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at.checked_add(8)?)
        .and_then(|w| <[u8; 8]>::try_from(w).ok())
        .map(u64::from_le_bytes)
}

/// The high bit of each byte of `x` equal to `byte` — exact for the lowest such byte (the
/// subtraction's borrow can only mark bytes above a real match), which is all a scan needs.
#[inline]
fn equal_to(x: u64, byte: u8) -> u64 {
    let v = x ^ (ONES * u64::from(byte));
    v.wrapping_sub(ONES) & !v & HIGH
}

/// The high bit of each byte of `x` that is `"`, `\\` or below 0x20 (exact for the lowest).
#[inline]
pub(crate) fn special_bytes(x: u64) -> u64 {
    let below_space = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
    equal_to(x, b'"') | equal_to(x, b'\\') | below_space
}

/// [`special_bytes`] and every byte at or above 0x80 (exact for the lowest): a string scan
/// that checks UTF-8 as it goes stops at the first non-ASCII byte too.
#[inline]
pub(crate) fn special_or_high(x: u64) -> u64 {
    special_bytes(x) | (x & HIGH)
}

/// [`special_or_high`] and DEL (0x7f): where a run of printable ASCII stops (exact for the
/// lowest) — the chunk shortcut's strings take nothing else without a closer look.
#[inline]
pub(crate) fn not_printable_ascii(x: u64) -> u64 {
    special_or_high(x) | equal_to(x, 0x7f)
}

/// The high bit of each byte of `x` that is `"` or `\\` (exact for the lowest).
#[inline]
pub(crate) fn quote_or_backslash(x: u64) -> u64 {
    equal_to(x, b'"') | equal_to(x, b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Each finds the first byte it looks for, as a byte loop does (bytes drawn to hit
        /// the special values and their neighbours).
        #[test]
        fn the_scans_find_the_first_byte_they_look_for(
            word in proptest::array::uniform8(proptest::prop_oneof![
                proptest::prelude::any::<u8>(),
                proptest::sample::select(vec![0u8, 0x1f, 0x20, 0x21, b'"', 0x23, 0x5b, b'\\', 0x5d, 0x7f, 0x80, 0xff]),
            ])
        ) {
            let x = u64::from_le_bytes(word);
            let lowest = |m: u64| (m != 0).then(|| (m.trailing_zeros() / 8) as usize);
            proptest::prop_assert_eq!(
                lowest(special_bytes(x)),
                word.iter().position(|&c| c == b'"' || c == b'\\' || c < 0x20)
            );
            proptest::prop_assert_eq!(
                lowest(special_or_high(x)),
                word.iter().position(|&c| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c))
            );
            proptest::prop_assert_eq!(
                lowest(not_printable_ascii(x)),
                word.iter().position(|&c| c == b'"' || c == b'\\' || !(0x20..0x7f).contains(&c))
            );
            proptest::prop_assert_eq!(
                lowest(quote_or_backslash(x)),
                word.iter().position(|&c| c == b'"' || c == b'\\')
            );
        }
    }
}
