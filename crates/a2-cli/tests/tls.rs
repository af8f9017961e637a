//! Attaching to a Postgres that accepts TLS only, as managed services do:
//! a second cluster this test starts (`hostssl` only, a certificate from a
//! CA made here with rcgen), reached through the `a2` binary and through
//! the Studio's `connection_open`.

use std::path::{Path, PathBuf};

use a2_studio_api::{ConnectionOpen, ErrorCode, Studio, TlsView};

mod common;

use common::cluster;

/// A CA and a server certificate it signed, for localhost, 127.0.0.1 and 127.0.0.2.
struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn pki(name: &str) -> Pki {
    pki_for(name, &["localhost", "127.0.0.1", "127.0.0.2"])
}

/// A CA and a server certificate it signed for `hosts` alone.
fn pki_for(name: &str, hosts: &[&str]) -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, name);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap_or_else(|e| panic!("{e}"));
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
    let mut params = CertificateParams::new(names).unwrap_or_else(|e| panic!("{e}"));
    params.distinguished_name.push(DnType::CommonName, hosts.first().copied().unwrap_or("localhost"));
    let cert = params.signed_by(&key, &issuer).unwrap_or_else(|e| panic!("{e}"));
    Pki { ca_pem: ca_cert.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() }
}

fn scratch() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir
}

fn a2(store: &str, args: &[&str], config: &Path) -> (i32, String, String) {
    common::a2_with_config(store, args, config)
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_only_postgres_is_attached_verified_and_refused_without_tls_or_with_a_wrong_ca() {
    let dir = scratch();
    let server = pki("a2 test CA");
    let stranger = pki("some other CA");
    let ca = dir.join("ca.pem");
    let wrong_ca = dir.join("wrong-ca.pem");
    std::fs::write(&ca, &server.ca_pem).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&wrong_ca, &stranger.ca_pem).unwrap_or_else(|e| panic!("{e}"));
    let cluster =
        cluster::Cluster::start_tls(cluster::ServerTls { cert_pem: &server.cert_pem, key_pem: &server.key_pem })
            .unwrap_or_else(|e| panic!("{e}"));
    let port = cluster.port;
    let verified =
        format!("postgres://postgres@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={}", ca.display());
    // 127.0.0.2 is not this machine by name: no sslmode given means verify-full.
    let remote_default = format!("postgres://postgres@127.0.0.2:{port}/postgres?sslrootcert={}", ca.display());
    let plain = format!("postgres://postgres@localhost:{port}/postgres?sslmode=disable");
    let wrong =
        format!("postgres://postgres@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={}", wrong_ca.display());
    let config = dir.join("config");

    // The CLI: create the store explicitly, then read it with the TLS state in the header.
    let (code, _, err) = a2(&verified, &["init"], &config);
    assert_eq!(code, 0, "init over verify-full: {err}");
    let (code, out, err) = a2(&verified, &["consumers"], &config);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("read-only") && out.contains("TLS verified"), "the header says it: {out}");
    let (code, out, err) = a2(&remote_default, &["consumers"], &config);
    assert_eq!(code, 0, "a host that is not this machine is verified by default: {err}");
    assert!(out.contains("TLS verified"), "{out}");

    let (code, _, err) = a2(&plain, &["consumers"], &config);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("requires TLS") && err.contains("TLS_FAILED"), "the refusal says TLS is required: {err}");
    let (code, _, err) = a2(&wrong, &["consumers"], &config);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("certificate") && err.contains("TLS_FAILED"), "the refusal names the certificate: {err}");

    // The Studio's connection_open: the same three ways.
    let studio = Studio::new(&config);
    let open = |url: &str| ConnectionOpen { url: Some(url.to_owned()), profile: None, password: None, read_only: None };
    let info = studio.connection_open(open(&verified)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(info.tls, Some(TlsView::Verified));
    assert!(info.read_only, "Postgres attaches read-only unless asked");
    let server_info = info.server.unwrap_or_else(|| panic!("a Postgres connection names its server"));
    assert_eq!((server_info.database.as_str(), server_info.session_user.as_str()), ("postgres", "postgres"));
    let require = format!("postgres://postgres@localhost:{port}/postgres?sslmode=require");
    let info = studio.connection_open(open(&require)).await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(info.tls, Some(TlsView::Encrypted), "encrypted, server not checked");
    let error = studio.connection_open(open(&plain)).await.err().unwrap_or_else(|| panic!("plain text was let in"));
    assert_eq!(error.code, ErrorCode::TlsFailed, "{error}");
    assert!(error.message.contains("requires TLS"), "{error}");
    let error = studio.connection_open(open(&wrong)).await.err().unwrap_or_else(|| panic!("a wrong CA was trusted"));
    assert_eq!(error.code, ErrorCode::TlsFailed, "{error}");
    assert!(error.message.contains("certificate"), "{error}");
    drop(cluster);
    let _ = std::fs::remove_dir_all(dir);
}

/// The badge claims no more than was checked: `verify-ca` reads "TLS, host
/// not checked" even where the certificate names the host, and a server whose
/// certificate names another host (what a relaying attacker with some trusted
/// certificate presents) is refused under verify-full.
#[tokio::test(flavor = "multi_thread")]
async fn tls_badge_says_what_was_checked() {
    // A directory of its own: the other test removes its scratch directory when it ends.
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-tls-badge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let config = dir.join("config");
    let studio = Studio::new(&config);
    let open = |url: &str| ConnectionOpen { url: Some(url.to_owned()), profile: None, password: None, read_only: None };
    let url = |port: u16, mode: &str, ca: &Path| {
        format!("postgres://postgres@localhost:{port}/postgres?sslmode={mode}&sslrootcert={}", ca.display())
    };

    let here = pki("a2 test CA");
    let here_ca = dir.join("here-ca.pem");
    std::fs::write(&here_ca, &here.ca_pem).unwrap_or_else(|e| panic!("{e}"));
    let cluster = cluster::Cluster::start_tls(cluster::ServerTls { cert_pem: &here.cert_pem, key_pem: &here.key_pem })
        .unwrap_or_else(|e| panic!("{e}"));
    let (code, _, err) = a2(&url(cluster.port, "verify-full", &here_ca), &["init"], &config);
    assert_eq!(code, 0, "init over verify-full: {err}");
    let info = studio.connection_open(open(&url(cluster.port, "verify-ca", &here_ca))).await;
    let info = info.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(info.tls, Some(TlsView::VerifiedCaOnly), "verify-ca promises the chain, not the host");
    let (code, out, err) = a2(&url(cluster.port, "verify-ca", &here_ca), &["consumers"], &config);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("TLS, host not checked") && !out.contains("TLS verified"), "the header says it: {out}");
    let info = studio.connection_open(open(&url(cluster.port, "verify-full", &here_ca))).await;
    assert_eq!(info.map(|i| i.tls).ok().flatten(), Some(TlsView::Verified), "verify-full: chain and host");
    drop(cluster);

    let elsewhere = pki_for("a2 test CA", &["db.elsewhere.example"]);
    let elsewhere_ca = dir.join("elsewhere-ca.pem");
    std::fs::write(&elsewhere_ca, &elsewhere.ca_pem).unwrap_or_else(|e| panic!("{e}"));
    let cluster =
        cluster::Cluster::start_tls(cluster::ServerTls { cert_pem: &elsewhere.cert_pem, key_pem: &elsewhere.key_pem })
            .unwrap_or_else(|e| panic!("{e}"));
    let refused = studio.connection_open(open(&url(cluster.port, "verify-full", &elsewhere_ca))).await.err();
    let refused = refused.unwrap_or_else(|| panic!("verify-full let in a certificate for another host"));
    assert_eq!(refused.code, ErrorCode::TlsFailed, "{refused}");
    // verify-ca as libpq means it: the chain to sslrootcert's CA is checked, the host is not.
    let (code, _, err) = a2(&url(cluster.port, "verify-ca", &elsewhere_ca), &["init"], &config);
    assert_eq!(code, 0, "verify-ca lets in a certificate of its CA for another host: {err}");
    let info = studio.connection_open(open(&url(cluster.port, "verify-ca", &elsewhere_ca))).await;
    let info = info.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(info.tls, Some(TlsView::VerifiedCaOnly), "and the badge says the host was not checked");
    drop(cluster);
    let _ = std::fs::remove_dir_all(dir);
}

/// `sslrootcert=` trusts that CA alone, as libpq does: a server whose
/// certificate chains to a CA the system trusts (here the system's roots
/// are `SSL_CERT_FILE`) but not to the named one is refused. Without a named
/// CA the system's roots are what verify-full trusts.
#[tokio::test(flavor = "multi_thread")]
async fn sslrootcert_trusts_that_ca_alone() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("a2-tls-pinned-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let config = dir.join("config");
    let public = pki("a publicly trusted CA");
    let ours = pki("the CA the URL names");
    let (public_ca, our_ca) = (dir.join("public-ca.pem"), dir.join("our-ca.pem"));
    std::fs::write(&public_ca, &public.ca_pem).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&our_ca, &ours.ca_pem).unwrap_or_else(|e| panic!("{e}"));
    // The server presents a certificate of the "public" CA, as a relaying attacker with one would.
    let cluster =
        cluster::Cluster::start_tls(cluster::ServerTls { cert_pem: &public.cert_pem, key_pem: &public.key_pem })
            .unwrap_or_else(|e| panic!("{e}"));
    let port = cluster.port;
    let a2_trusting = |url: &str, args: &[&str]| {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_a2"))
            .args(["--store", url])
            .args(args)
            .env("A2_STUDIO_CONFIG_DIR", &config)
            .env("SSL_CERT_FILE", &public_ca)
            .env("SSL_CERT_DIR", dir.join("no-such-dir"))
            .output()
            .unwrap_or_else(|e| panic!("running a2: {e}"));
        (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let system = format!("postgres://postgres@localhost:{port}/postgres?sslmode=verify-full");
    let (code, err) = a2_trusting(&system, &["init"]);
    assert_eq!(code, 0, "the system's roots trust the public CA: {err}");
    for mode in ["verify-full", "verify-ca"] {
        let pinned =
            format!("postgres://postgres@localhost:{port}/postgres?sslmode={mode}&sslrootcert={}", our_ca.display());
        let (code, err) = a2_trusting(&pinned, &["consumers"]);
        assert_eq!(code, 1, "{mode}: a CA the URL did not name was trusted: {err}");
        assert!(err.contains("TLS_FAILED") && err.contains("sslrootcert"), "{mode}: {err}");
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(dir);
}
