//! TLS to PostgreSQL as libpq's `sslmode` and `sslrootcert` ask for it, against a private
//! cluster that accepts TCP connections over TLS only, its certificate signed by an
//! authority made for the test (`Cluster::start_tls`). Without PostgreSQL's server binaries
//! the test says SKIPPED.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers fail loudly"
)]

use sessdb::Store;
use sessdb_postgres::{Error, Shipper};
use sessdb_tests::mem_store;
use sessdb_tests::pg::Cluster;
use sessdb_workload::{WorkloadSpec, generate};

fn store() -> Store {
    let mut store = mem_store();
    generate(
        &WorkloadSpec {
            seed: 7,
            sessions: 2,
            max_turns: 3,
            ..WorkloadSpec::default()
        },
        &mut store,
    )
    .unwrap();
    store
}

/// One round of shipping over `url`: the events shipped, or the error.
fn ship(url: &str, store: &Store) -> Result<u64, Error> {
    Ok(Shipper::new(url, "tls-test")?.ship(store)?.events)
}

#[test]
fn sslmodes_encrypt_and_verify_as_libpq_does() {
    let Some(pg) = Cluster::start_tls() else {
        return;
    };
    let store = store();
    let base = pg.tcp_url();
    let ca = pg.ca().display().to_string();
    let other = pg.other_ca().display().to_string();
    // Encrypted: the server takes no plaintext connection over TCP.
    let shipped = ship(&format!("{base} sslmode=require"), &store).unwrap();
    assert!(shipped > 0);
    // The default (`prefer`) tries TLS first, as libpq does.
    assert_eq!(ship(&base, &store).unwrap(), 0, "nothing new to ship");
    // Plaintext asked for: the server's refusal, its own words.
    let plain = ship(&format!("{base} sslmode=disable"), &store).unwrap_err();
    assert!(
        plain.to_string().contains("no encryption"),
        "the server's message: {plain}"
    );
    // Verified against the authority that signed the server's certificate: in a key=value
    // string and in a URL.
    ship(
        &format!("{base} sslmode=verify-full sslrootcert={ca}"),
        &store,
    )
    .unwrap();
    let port = base
        .split("port=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let url = format!(
        "postgresql://postgres@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={ca}"
    );
    ship(&url, &store).unwrap();
    // `require` with a root given verifies the chain (libpq's rule): the wrong authority fails.
    for mode in ["verify-full", "verify-ca", "require"] {
        let err = ship(
            &format!("{base} sslmode={mode} sslrootcert={other}"),
            &store,
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::Postgres { .. }) && err.to_string().contains("certificate"),
            "{mode}: {err}"
        );
    }
    // The name checked by verify-full only: the certificate names localhost, not 127.0.0.1.
    let by_ip = base.replace("host=localhost", "host=127.0.0.1");
    let err = ship(
        &format!("{by_ip} sslmode=verify-full sslrootcert={ca}"),
        &store,
    )
    .unwrap_err();
    assert!(err.to_string().contains("certificate"), "{err}");
    ship(
        &format!("{by_ip} sslmode=verify-ca sslrootcert={ca}"),
        &store,
    )
    .unwrap();
    // An authority file that is not there is named.
    let err = Shipper::new(
        &format!("{base} sslmode=verify-full sslrootcert={ca}.missing"),
        "x",
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::Tls { .. }) && err.to_string().contains("sslrootcert"),
        "{err}"
    );
}
