//! JSON text that sessdb writes itself (type strings, closer text, headers), escaped exactly
//! as `JSON.stringify` escapes it so that DSH and sessdb produce the same bytes.

use super::swar::{special_bytes, word_at};

/// Appends `n` in decimal (as `JSON.stringify` writes an integer), allocating nothing: the
/// line writers put three numbers on every exported line.
pub fn write_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(buf.get(i..).unwrap_or_default());
}

/// Appends `n` in decimal, `-` first when negative.
pub fn write_i64(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    write_u64(out, n.unsigned_abs());
}

/// Appends `s` as a JSON string literal, escaping like `JSON.stringify`: `"` and `\`,
/// the short escapes `\b \f \n \r \t`, and every other control character as `\u00xx`.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 1);
    // `start..at` is copied as it is; `at` moves over runs needing no escape eight bytes at
    // a time (headers and type strings rarely hold any: the byte loop alone was half of a
    // listing of decoded sessions, `docs/PERFORMANCE.md`).
    let (mut start, mut at) = (0, 0);
    loop {
        while let Some(word) = word_at(bytes, at) {
            let mask = special_bytes(word);
            if mask != 0 {
                at += (mask.trailing_zeros() / 8) as usize;
                break;
            }
            at += 8;
        }
        let Some(&c) = bytes.get(at) else {
            break;
        };
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => {
                at += 1;
                continue;
            }
        };
        out.extend_from_slice(bytes.get(start..at).unwrap_or_default());
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        at += 1;
        start = at;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn integers_are_written_as_display_writes_them(n in proptest::prelude::any::<i64>(), u in proptest::prelude::any::<u64>()) {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            write_i64(&mut a, n);
            write_u64(&mut b, u);
            proptest::prop_assert_eq!(a, n.to_string().into_bytes());
            proptest::prop_assert_eq!(b, u.to_string().into_bytes());
        }
    }

    /// The escaping as a byte loop (the writer before its word scan).
    fn by_bytes(s: &str) -> Vec<u8> {
        let mut out = vec![b'"'];
        for &c in s.as_bytes() {
            match c {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\r' => out.extend_from_slice(b"\\r"),
                b'\t' => out.extend_from_slice(b"\\t"),
                0x08 => out.extend_from_slice(b"\\b"),
                0x0c => out.extend_from_slice(b"\\f"),
                0x00..=0x1f => out.extend_from_slice(format!("\\u{c:04x}").as_bytes()),
                _ => out.push(c),
            }
        }
        out.push(b'"');
        out
    }

    proptest::proptest! {
        /// The word scan writes what a byte loop writes, whatever mix of plain text, escapes
        /// and non-ASCII the string holds.
        #[test]
        fn write_str_writes_what_a_byte_loop_writes(
            s in "[a-z \"\\\\\u{0}-\u{1f}\u{7f}é😀]{0,40}"
        ) {
            let mut out = Vec::new();
            write_str(&mut out, &s);
            proptest::prop_assert_eq!(out, by_bytes(&s));
        }
    }

    #[test]
    fn escapes_like_json_stringify() {
        let mut out = Vec::new();
        write_str(&mut out, "a\"b\\c\nd\u{1}\u{1f}\u{7f}é\u{8}\u{c}\t\r");
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#""a\"b\\c\nd\u0001\u001f"#.to_owned() + "\u{7f}é" + r#"\b\f\t\r""#
        );
    }
}
