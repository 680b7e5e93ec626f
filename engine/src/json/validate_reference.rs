//! The validator as it was before its position moved into registers, kept as the reference
//! the tests and the `json_validate` fuzz target compare the validator with (decision and
//! error offset on every input).
//!
//! Rules (DSH `json.ts`, DESIGN §2): RFC 8259 syntax over UTF-8; every number finite as an
//! IEEE double (so `1e400` is refused) and not negative zero (so `-0`, `-0.0` and `-1e-400`,
//! which parses to `-0`, are refused); nesting depth and total size bounded by [`Limits`].
//! Beyond DSH, sessdb refuses what cannot be stored as one JSONL line: raw line breaks (`\n`,
//! `\r`) outside strings and whitespace around the value. `\u` escapes of lone surrogates are
//! accepted, as `JSON.parse` accepts them (DSH writes them); the bytes are kept as received.

use super::swar::{special_bytes, special_or_high, word_at};
use super::validate::{JsonError, JsonErrorKind, NoRecord, Record};
use crate::Limits;

/// The reference's decision on `bytes`.
///
/// # Errors
/// As [`super::validate`].
pub fn validate_reference(bytes: &[u8], limits: &Limits) -> Result<(), JsonError> {
    validate_with(bytes, limits, NoRecord)
}

/// [`validate`], telling `rec` the structure as it reads.
fn validate_with<R: Record>(bytes: &[u8], limits: &Limits, rec: R) -> Result<(), JsonError> {
    let err = |offset, kind| Err(JsonError { offset, kind });
    if bytes.len() > limits.max_data_bytes {
        return err(
            0,
            JsonErrorKind::TooLarge {
                size: bytes.len(),
                limit: limits.max_data_bytes,
            },
        );
    }
    // UTF-8 is checked as the grammar reads: outside strings only ASCII tokens are accepted,
    // and a string checks each run of non-ASCII bytes it crosses (one pass over the bytes
    // instead of two: PERFORMANCE.md, "UTF-8 checked by the grammar"). A refusal is then
    // named as before: invalid UTF-8 anywhere is reported first, at its offset.
    let result = validate_utf8_by_grammar(bytes, limits, rec);
    if result.is_err()
        && let Err(e) = std::str::from_utf8(bytes)
    {
        return err(e.valid_up_to(), JsonErrorKind::InvalidUtf8);
    }
    result
}

fn validate_utf8_by_grammar<R: Record>(
    bytes: &[u8],
    limits: &Limits,
    rec: R,
) -> Result<(), JsonError> {
    let err = |offset, kind| Err(JsonError { offset, kind });
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => return err(0, JsonErrorKind::Empty),
        (Some(&f), Some(&l)) if is_ws(f) || is_ws(l) => {
            let at = if is_ws(f) { 0 } else { bytes.len() - 1 };
            return err(at, JsonErrorKind::SurroundingWhitespace);
        }
        _ => {}
    }
    Validator {
        b: bytes,
        pos: 0,
        max_depth: limits.max_depth,
        stack: Nesting::default(),
        rec,
    }
    .run()
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

struct Validator<'a, R> {
    b: &'a [u8],
    pos: usize,
    max_depth: u32,
    /// Open containers, innermost last: `true` for an object.
    stack: Nesting,
    rec: R,
}

/// The open containers as a stack of bits (`true` for an object): inline up to 256 levels,
/// so validating allocates nothing under the default depth limit.
#[derive(Default)]
struct Nesting {
    bits: [u64; 4],
    depth: usize,
    /// Levels past the inline 256 (only under a raised depth limit).
    spill: Vec<bool>,
}

impl Nesting {
    const INLINE: usize = 256;

    fn len(&self) -> usize {
        self.depth
    }

    fn push(&mut self, object: bool) {
        if self.depth < Self::INLINE {
            let (word, bit) = (self.depth / 64, self.depth % 64);
            if let Some(w) = self.bits.get_mut(word) {
                *w = (*w & !(1 << bit)) | (u64::from(object) << bit);
            }
        } else {
            self.spill.push(object);
        }
        self.depth += 1;
    }

    fn pop(&mut self) {
        if self.depth > Self::INLINE {
            self.spill.pop();
        }
        self.depth = self.depth.saturating_sub(1);
    }

    fn last(&self) -> Option<bool> {
        let top = self.depth.checked_sub(1)?;
        if top < Self::INLINE {
            let (word, bit) = (top / 64, top % 64);
            self.bits.get(word).map(|w| w >> bit & 1 == 1)
        } else {
            self.spill.last().copied()
        }
    }
}

impl<R: Record> Validator<'_, R> {
    fn fail<T>(&self, kind: JsonErrorKind) -> Result<T, JsonError> {
        Err(JsonError {
            offset: self.pos,
            kind,
        })
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    #[inline]
    fn skip_ws(&mut self) -> Result<(), JsonError> {
        // Compact JSON (what agents send) has no whitespace between tokens: one comparison.
        if self.peek().is_none_or(|c| c > b' ') {
            return Ok(());
        }
        self.skip_ws_slow()
    }

    #[cold]
    fn skip_ws_slow(&mut self) -> Result<(), JsonError> {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' => self.pos += 1,
                b'\n' | b'\r' => return self.fail(JsonErrorKind::LineBreak),
                _ => break,
            }
        }
        Ok(())
    }

    #[inline]
    fn expect(&mut self, c: u8, what: &'static str) -> Result<(), JsonError> {
        self.skip_ws()?;
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            self.fail(JsonErrorKind::Syntax(what))
        }
    }

    fn run(mut self) -> Result<(), JsonError> {
        // Iterative so that hostile nesting cannot exhaust the call stack.
        'value: loop {
            self.skip_ws()?;
            match self.peek() {
                Some(b'{') => {
                    self.open(true)?;
                    self.skip_ws()?;
                    if self.peek() == Some(b'}') {
                        self.pos += 1;
                        self.stack.pop();
                    } else {
                        self.key()?;
                        continue 'value;
                    }
                }
                Some(b'[') => {
                    self.open(false)?;
                    self.skip_ws()?;
                    if self.peek() == Some(b']') {
                        self.pos += 1;
                        self.stack.pop();
                    } else {
                        continue 'value;
                    }
                }
                Some(b'"') => self.string()?,
                Some(b'-' | b'0'..=b'9') => self.number()?,
                Some(b't') => self.literal(b"true")?,
                Some(b'f') => self.literal(b"false")?,
                Some(b'n') => self.literal(b"null")?,
                _ => return self.fail(JsonErrorKind::Syntax("expected a value")),
            }
            // After a complete value: close containers until one wants another member.
            loop {
                let end = self.pos;
                self.skip_ws()?;
                let Some(in_object) = self.stack.last() else {
                    if self.pos != self.b.len() {
                        return self.fail(JsonErrorKind::Syntax("trailing characters"));
                    }
                    return Ok(());
                };
                if R::RECORDS && in_object {
                    self.rec.value_end(self.stack.len(), end);
                }
                match (self.peek(), in_object) {
                    (Some(b','), true) => {
                        self.pos += 1;
                        self.key()?;
                        continue 'value;
                    }
                    (Some(b','), false) => {
                        self.pos += 1;
                        continue 'value;
                    }
                    (Some(b'}'), true) | (Some(b']'), false) => {
                        self.pos += 1;
                        self.stack.pop();
                    }
                    (_, true) => return self.fail(JsonErrorKind::Syntax("expected ',' or '}'")),
                    (_, false) => return self.fail(JsonErrorKind::Syntax("expected ',' or ']'")),
                }
            }
        }
    }

    fn open(&mut self, object: bool) -> Result<(), JsonError> {
        if self.stack.len() >= self.max_depth as usize {
            return self.fail(JsonErrorKind::TooDeep {
                limit: self.max_depth,
            });
        }
        self.stack.push(object);
        self.pos += 1;
        Ok(())
    }

    /// An object key and its colon.
    fn key(&mut self) -> Result<(), JsonError> {
        self.skip_ws()?;
        if self.peek() != Some(b'"') {
            return self.fail(JsonErrorKind::Syntax("expected a string key"));
        }
        let key_start = self.pos;
        self.string()?;
        let key_end = self.pos;
        self.expect(b':', "expected ':'")?;
        if R::RECORDS {
            self.skip_ws()?;
            self.rec
                .member(self.stack.len(), (key_start, key_end), self.pos);
        }
        Ok(())
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<(), JsonError> {
        if self.b.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            self.fail(JsonErrorKind::Syntax("invalid literal"))
        }
    }

    fn string(&mut self) -> Result<(), JsonError> {
        self.pos += 1; // opening quote
        loop {
            // Eight bytes at a time (SWAR): stop at the first quote, backslash, control
            // character or non-ASCII byte; plain ASCII text is skipped in one pass.
            while let Some(word) = word_at(self.b, self.pos) {
                let mask = special_or_high(word);
                if mask != 0 {
                    self.pos += (mask.trailing_zeros() / 8) as usize;
                    break;
                }
                self.pos += 8;
            }
            let Some(c) = self.peek() else {
                return self.fail(JsonErrorKind::Syntax("unterminated string"));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    return Ok(());
                }
                b'\\' => self.escape()?,
                0x00..=0x1f => {
                    return self.fail(JsonErrorKind::Syntax("control character in string"));
                }
                0x80..=0xff => self.non_ascii()?,
                _ => self.pos += 1,
            }
        }
    }

    /// A run of string bytes from a non-ASCII one to the next quote, backslash or control
    /// character (all ASCII, so never inside a multi-byte character): valid UTF-8 or refused.
    fn non_ascii(&mut self) -> Result<(), JsonError> {
        let start = self.pos;
        let mut end = start;
        while let Some(word) = word_at(self.b, end) {
            let mask = special_bytes(word);
            if mask != 0 {
                end += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            end += 8;
        }
        while self
            .b
            .get(end)
            .is_some_and(|&c| c != b'"' && c != b'\\' && c >= 0x20)
        {
            end += 1;
        }
        match std::str::from_utf8(&self.b[start..end]) {
            Ok(_) => {
                self.pos = end;
                Ok(())
            }
            Err(e) => {
                self.pos = start + e.valid_up_to();
                self.fail(JsonErrorKind::InvalidUtf8)
            }
        }
    }

    fn escape(&mut self) -> Result<(), JsonError> {
        self.pos += 1;
        match self.peek() {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                self.pos += 1;
                Ok(())
            }
            // Any four hex digits, lone surrogates included: JSON's grammar allows them,
            // `JSON.parse` accepts them, and DSH writes them (a string cut inside a UTF-16
            // pair). The bytes are stored and exported exactly as received.
            Some(b'u') => {
                self.pos += 1;
                self.hex4().map(|_| ())
            }
            _ => self.fail(JsonErrorKind::Syntax("invalid escape")),
        }
    }

    fn hex4(&mut self) -> Result<u32, JsonError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = match self.peek() {
                Some(c @ b'0'..=b'9') => c - b'0',
                Some(c @ b'a'..=b'f') => c - b'a' + 10,
                Some(c @ b'A'..=b'F') => c - b'A' + 10,
                _ => return self.fail(JsonErrorKind::Syntax("invalid \\u escape")),
            };
            v = v * 16 + u32::from(d);
            self.pos += 1;
        }
        Ok(v)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    fn number(&mut self) -> Result<(), JsonError> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        let mut all_zero = true;
        let int_start = self.pos;
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return self.fail(JsonErrorKind::Syntax("invalid number")),
        }
        all_zero &= self.b[int_start..self.pos].iter().all(|&d| d == b'0');
        if self.peek() == Some(b'.') {
            self.pos += 1;
            let frac_start = self.pos;
            if self.digits() == 0 {
                return self.fail(JsonErrorKind::Syntax("digit expected after '.'"));
            }
            all_zero &= self.b[frac_start..self.pos].iter().all(|&d| d == b'0');
        }
        let mut exponent = false;
        if matches!(self.peek(), Some(b'e' | b'E')) {
            exponent = true;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return self.fail(JsonErrorKind::Syntax("digit expected in exponent"));
            }
        }
        let token = &self.b[start..self.pos];
        if negative && all_zero {
            self.pos = start;
            return self.fail(JsonErrorKind::NegativeZero);
        }
        // Without an exponent and with at most 300 digits a number is finite and, if
        // non-zero, far above the smallest double: only the rest needs a real parse.
        if exponent || token.len() > 300 {
            let parsed = std::str::from_utf8(token)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            match parsed {
                Some(v) if !v.is_finite() => {
                    self.pos = start;
                    return self.fail(JsonErrorKind::NonFinite);
                }
                Some(v) if v == 0.0 && v.is_sign_negative() => {
                    self.pos = start;
                    return self.fail(JsonErrorKind::NegativeZero);
                }
                Some(_) => {}
                None => return self.fail(JsonErrorKind::Syntax("invalid number")),
            }
        }
        Ok(())
    }
}
