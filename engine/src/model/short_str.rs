//! Short strings held inline: the ids the repair state keeps of every turn, step and tool
//! call (`"3"`, `"call_0a1b2c"`), so that accepting an event allocates nothing for them
//! (`docs/PERFORMANCE.md`, "Allocations per appended event"). Longer ones go to the heap.

use std::fmt;
use std::ops::Deref;

/// Bytes held inline: the value is 32 bytes, as large as a `String` plus a tag would be.
const INLINE: usize = 30;

/// An immutable string, inline up to 30 bytes.
#[derive(Clone)]
pub struct ShortStr(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

impl ShortStr {
    /// `s`, inline when it fits.
    pub fn new(s: &str) -> Self {
        match (u8::try_from(s.len()), s.len() <= INLINE) {
            (Ok(len), true) => {
                let mut bytes = [0; INLINE];
                if let Some(to) = bytes.get_mut(..s.len()) {
                    to.copy_from_slice(s.as_bytes());
                }
                Self(Repr::Inline { len, bytes })
            }
            _ => Self(Repr::Heap(s.into())),
        }
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Always UTF-8: the bytes were copied from a `str` whole.
            Repr::Inline { len, bytes } => bytes
                .get(..usize::from(*len))
                .and_then(|b| std::str::from_utf8(b).ok())
                .unwrap_or_default(),
            Repr::Heap(s) => s,
        }
    }

    /// Whether the string is held inline (no heap allocation).
    pub fn is_inline(&self) -> bool {
        matches!(self.0, Repr::Inline { .. })
    }
}

impl Deref for ShortStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for ShortStr {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl PartialEq for ShortStr {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ShortStr {}

impl PartialEq<str> for ShortStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl fmt::Debug for ShortStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for ShortStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any string comes back as it went in, inline exactly when it fits; equality is the
        /// strings', whichever way each is held.
        #[test]
        fn a_string_comes_back_as_it_went_in(s in "\\PC{0,40}", t in "\\PC{0,40}") {
            let a = ShortStr::new(&s);
            proptest::prop_assert_eq!(a.as_str(), s.as_str());
            proptest::prop_assert_eq!(a.is_inline(), s.len() <= INLINE);
            proptest::prop_assert_eq!(a == ShortStr::new(&t), s == t);
            proptest::prop_assert_eq!(format!("{a:?}"), format!("{s:?}"));
        }
    }

    #[test]
    fn the_boundary_is_thirty_bytes() {
        let fits = "é".repeat(15);
        assert!(ShortStr::new(&fits).is_inline());
        let over = format!("{fits}a");
        assert!(!ShortStr::new(&over).is_inline());
        assert_eq!(ShortStr::new(&over).as_str(), over);
        assert_eq!(std::mem::size_of::<ShortStr>(), 32);
    }
}
