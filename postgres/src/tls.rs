//! TLS to the server, as libpq's connection parameters ask for it: `sslmode` (`disable`,
//! `allow`, `prefer`, `require`, `verify-ca`, `verify-full`) and `sslrootcert` (a PEM file of
//! the certificate authorities to trust, or `system` for the operating system's), in a
//! `key=value` string or a `postgresql://` URL's query. The `postgres` crate reads only the
//! first three modes and no root certificate: this module takes both out of the string, hands
//! the crate the mode it knows (`require` for the verifying ones) and builds the connector
//! that verifies as libpq would. Client certificates (`sslcert`, `sslkey`) are refused by
//! name rather than ignored.

use native_tls::{Certificate, TlsConnector};
use postgres_native_tls::MakeTlsConnector;

use crate::{Error, Result};

/// What a connection string asks of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tls {
    /// The connection string without `sslrootcert`, its `sslmode` one the `postgres` crate
    /// reads.
    pub(crate) url: String,
    mode: Mode,
    root: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl Tls {
    /// Reads `url`'s TLS parameters.
    ///
    /// # Errors
    /// `Tls` for an `sslmode` libpq does not know, or a client certificate asked for.
    pub(crate) fn parse(url: &str) -> Result<Tls> {
        let url_form = url.starts_with("postgres://") || url.starts_with("postgresql://");
        let params = if url_form { query(url) } else { pairs(url) };
        let mut mode = Mode::Prefer;
        let mut root = None;
        for (k, v) in &params {
            match k.as_str() {
                "sslmode" => {
                    mode = match v.as_str() {
                        "disable" => Mode::Disable,
                        "allow" | "prefer" => Mode::Prefer,
                        "require" => Mode::Require,
                        "verify-ca" => Mode::VerifyCa,
                        "verify-full" => Mode::VerifyFull,
                        other => {
                            return Err(Error::Tls {
                                problem: format!(
                                    "sslmode={other}: not one of disable, allow, prefer, require, verify-ca, verify-full"
                                ),
                            });
                        }
                    }
                }
                "sslrootcert" => root = Some(v.clone()),
                "sslcert" | "sslkey" => {
                    return Err(Error::Tls {
                        problem: format!("{k}: client certificates are not supported"),
                    });
                }
                _ => {}
            }
        }
        // libpq: `require` with a root certificate given verifies the chain, as verify-ca.
        if mode == Mode::Require && root.is_some() {
            mode = Mode::VerifyCa;
        }
        let crate_mode = match mode {
            Mode::Disable => "disable",
            Mode::Prefer => "prefer",
            _ => "require",
        };
        let kept: Vec<(String, String)> = params
            .into_iter()
            .filter(|(k, _)| k != "sslmode" && k != "sslrootcert")
            .chain(std::iter::once((
                "sslmode".to_owned(),
                crate_mode.to_owned(),
            )))
            .collect();
        let url = if url_form {
            let base = url.split('?').next().unwrap_or(url);
            let q: Vec<String> = kept
                .iter()
                .map(|(k, v)| format!("{k}={}", percent_encode(v)))
                .collect();
            format!("{base}?{}", q.join("&"))
        } else {
            kept.iter()
                .map(|(k, v)| format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        Ok(Tls { url, mode, root })
    }

    /// The connector: `None` for `disable`.
    ///
    /// # Errors
    /// `Tls` when the root certificate file cannot be read or is not PEM, or a verifying mode
    /// has none (libpq's default, `~/.postgresql/root.crt`, is looked at too).
    pub(crate) fn connector(&self) -> Result<Option<MakeTlsConnector>> {
        if self.mode == Mode::Disable {
            return Ok(None);
        }
        let mut b = TlsConnector::builder();
        let verifying = matches!(self.mode, Mode::VerifyCa | Mode::VerifyFull);
        let root = self.root.clone().or_else(|| {
            let home = std::env::var_os("HOME")?;
            let p = std::path::Path::new(&home).join(".postgresql/root.crt");
            (verifying && p.is_file()).then(|| p.display().to_string())
        });
        match root.as_deref() {
            Some("system") => {}
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| Error::Tls {
                    problem: format!("sslrootcert {path}: {e}"),
                })?;
                let cert = Certificate::from_pem(&pem).map_err(|e| Error::Tls {
                    problem: format!("sslrootcert {path}: not a PEM certificate: {e}"),
                })?;
                // As libpq: the file given is what is trusted, not the system's store too.
                b.add_root_certificate(cert).disable_built_in_roots(true);
            }
            None if verifying => {
                return Err(Error::Tls {
                    problem: "sslmode verify-ca and verify-full need sslrootcert (a PEM file of the certificate authority, or `system`); ~/.postgresql/root.crt is not there either".into(),
                });
            }
            None => {}
        }
        match self.mode {
            // Encrypted, not authenticated: libpq's `prefer` and `require` without a root.
            Mode::Prefer | Mode::Require => {
                b.danger_accept_invalid_certs(true)
                    .danger_accept_invalid_hostnames(true);
            }
            Mode::VerifyCa => {
                b.danger_accept_invalid_hostnames(true);
            }
            Mode::VerifyFull | Mode::Disable => {}
        }
        let connector = b.build().map_err(|e| Error::Tls {
            problem: format!("the TLS library: {e}"),
        })?;
        Ok(Some(MakeTlsConnector::new(connector)))
    }
}

/// A `key=value key='quoted \' value'` string's pairs (libpq's quoting rules).
fn pairs(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        if key.is_empty() {
            return out;
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek() != Some(&'=') {
            out.push((key, String::new()));
            continue;
        }
        chars.next();
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(n) = chars.next() {
                            value.push(n);
                        }
                    }
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    if let Some(n) = chars.next() {
                        value.push(n);
                    }
                    continue;
                }
                value.push(c);
                chars.next();
            }
        }
        out.push((key, value));
    }
}

/// A URL's query parameters, percent-decoded.
fn query(url: &str) -> Vec<(String, String)> {
    let Some((_, q)) = url.split_once('?') else {
        return Vec::new();
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |x: u8| (x as char).to_digit(16);
        match (b[i], b.get(i + 1).copied(), b.get(i + 2).copied()) {
            (b'%', Some(h), Some(l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|c| match c {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (c as char).to_string()
            }
            c => format!("%{c:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verifying_modes_become_require_and_the_root_leaves_the_string() {
        let t = Tls::parse(
            "host=db.example port=5432 sslmode=verify-full sslrootcert='/etc/ca one.pem'",
        )
        .unwrap();
        assert_eq!(t.mode, Mode::VerifyFull);
        assert_eq!(t.root.as_deref(), Some("/etc/ca one.pem"));
        assert_eq!(t.url, "host='db.example' port='5432' sslmode='require'");
        let u = Tls::parse("postgresql://u@db.example/app?sslmode=verify-ca&sslrootcert=%2Fetc%2Fca.pem&application_name=x").unwrap();
        assert_eq!(u.mode, Mode::VerifyCa);
        assert_eq!(u.root.as_deref(), Some("/etc/ca.pem"));
        assert_eq!(
            u.url,
            "postgresql://u@db.example/app?application_name=x&sslmode=require"
        );
    }

    #[test]
    fn libpq_rules_for_require_the_default_and_what_is_refused() {
        // `require` with a root given verifies the chain.
        assert_eq!(
            Tls::parse("sslmode=require sslrootcert=ca.pem")
                .unwrap()
                .mode,
            Mode::VerifyCa
        );
        assert_eq!(Tls::parse("host=/run/pg").unwrap().mode, Mode::Prefer);
        assert!(
            Tls::parse("sslmode=disable")
                .unwrap()
                .connector()
                .unwrap()
                .is_none()
        );
        for bad in ["sslmode=always", "sslcert=client.pem"] {
            assert!(matches!(Tls::parse(bad), Err(Error::Tls { .. })), "{bad}");
        }
        // A verifying mode with no root anywhere says what to give.
        let t = Tls::parse("sslmode=verify-full").unwrap();
        let home = std::env::var_os("HOME");
        if home.is_none_or(|h| {
            !std::path::Path::new(&h)
                .join(".postgresql/root.crt")
                .is_file()
        }) {
            assert!(matches!(t.connector(), Err(Error::Tls { .. })));
        }
    }

    #[test]
    fn quoted_values_keep_spaces_quotes_and_backslashes() {
        let p = pairs(r"a=1 b='x y' c='it\'s' d=back\\slash e = 'spaced'");
        assert_eq!(
            p,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "it's".into()),
                ("d".into(), r"back\slash".into()),
                ("e".into(), "spaced".into()),
            ]
        );
    }
}
