//! A bounds-checked little-endian reader shared by every decoder: a read past the end is an
//! error naming the field, never a panic, and no count is trusted beyond the bytes left.

/// A decoder's error: which field was short or wrong.
pub type Decoded<T> = Result<T, &'static str>;

/// A cursor over bytes.
pub(crate) struct ByteReader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Self { b, pos: 0 }
    }

    /// Bytes read so far.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }

    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Decoded<&'a [u8]> {
        let end = self.pos.checked_add(n).ok_or(what)?;
        let s = self.b.get(self.pos..end).ok_or(what)?;
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Decoded<[u8; N]> {
        let mut w = [0u8; N];
        w.copy_from_slice(self.take(N, what)?);
        Ok(w)
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Decoded<u8> {
        self.array::<1>(what).map(|[b]| b)
    }

    pub(crate) fn u16(&mut self, what: &'static str) -> Decoded<u16> {
        self.array(what).map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self, what: &'static str) -> Decoded<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self, what: &'static str) -> Decoded<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    pub(crate) fn i64(&mut self, what: &'static str) -> Decoded<i64> {
        self.array(what).map(i64::from_le_bytes)
    }

    /// A length as `usize`, refused when fewer than `len * unit` bytes remain: a damaged
    /// count can never make a decoder allocate more than its input.
    pub(crate) fn count(&mut self, len: u64, unit: usize, what: &'static str) -> Decoded<usize> {
        let n = usize::try_from(len).map_err(|_| what)?;
        if n.checked_mul(unit.max(1))
            .is_none_or(|b| b > self.remaining())
        {
            return Err(what);
        }
        Ok(n)
    }

    /// An event type (`docs/FORMAT.md` §4): a `u16` length, or `0xFFFF` and a `u32` length
    /// of at least `0xFFFF` (one encoding per length: a shorter one so escaped is refused).
    pub(crate) fn type_ref(&mut self, what: &'static str) -> Decoded<&'a str> {
        let mut n = usize::from(self.u16(what)?);
        if n == usize::from(u16::MAX) {
            n = usize::try_from(self.u32(what)?).map_err(|_| what)?;
            if n < usize::from(u16::MAX) {
                return Err("event type: a short length escaped");
            }
        }
        let s = self.take(n, what)?;
        std::str::from_utf8(s).map_err(|_| what)
    }

    /// A string with a `u16` length.
    pub(crate) fn str16(&mut self, what: &'static str) -> Decoded<String> {
        self.str16_ref(what).map(str::to_owned)
    }

    /// A UTF-8 string with a `u16` length, borrowed from the bytes.
    pub(crate) fn str16_ref(&mut self, what: &'static str) -> Decoded<&'a str> {
        let n = self.u16(what)?;
        let s = self.take(usize::from(n), what)?;
        std::str::from_utf8(s).map_err(|_| what)
    }

    /// Bytes with a `u16` length (a string whose UTF-8 the caller does not need checked).
    pub(crate) fn bytes16(&mut self, what: &'static str) -> Decoded<&'a [u8]> {
        let n = self.u16(what)?;
        self.take(usize::from(n), what)
    }

    /// Bytes with a `u32` length.
    pub(crate) fn bytes32(&mut self, what: &'static str) -> Decoded<&'a [u8]> {
        let n = self.u32(what)?;
        let n = usize::try_from(n).map_err(|_| what)?;
        self.take(n, what)
    }

    /// `value`, if every byte was read.
    pub(crate) fn finish<T>(&self, value: T) -> Decoded<T> {
        if self.pos == self.b.len() {
            Ok(value)
        } else {
            Err("trailing bytes")
        }
    }
}

/// `n` as a `u32` length field; `None` if it does not fit.
pub(crate) fn len32(n: usize) -> Option<u32> {
    u32::try_from(n).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded_and_counts_are_checked_against_the_bytes_left() {
        let mut c = ByteReader::new(&[1, 0, 2, 0, 0, 0, 9]);
        assert_eq!(c.u16("a"), Ok(1));
        assert_eq!(c.u32("b"), Ok(2));
        assert_eq!(c.count(1, 1, "n"), Ok(1));
        assert_eq!(c.count(2, 1, "n"), Err("n"));
        assert_eq!(c.count(u64::MAX, 16, "n"), Err("n"));
        assert_eq!(c.u16("c"), Err("c"));
        assert_eq!(c.finish(()), Err("trailing bytes"));
        assert_eq!(c.u8("d"), Ok(9));
        assert_eq!(c.finish(()), Ok(()));
    }
}
