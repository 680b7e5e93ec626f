//! JSON text that sessdb writes itself (type strings, closer text, headers), escaped exactly
//! as `JSON.stringify` escapes it so that DSH and sessdb produce the same bytes.

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
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(c >> 4)]);
            out.push(HEX[usize::from(c & 0xf)]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
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
