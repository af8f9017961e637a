//! `sslrootcert=` as libpq means it: that CA alone is trusted. sqlx adds the
//! file to the system's roots, so any publicly trusted certificate for the
//! host would pass as well, and a network attacker holding one could relay
//! the login. So where a URL names a CA and asks for verification, the
//! store's connections go through a link of its own: a Unix socket in a
//! directory only this user can enter, each of whose connections this
//! process carries to the server after a TLS handshake that trusts that CA
//! alone (and, under `verify-full`, checks the host). sqlx speaks plain text
//! to the socket; the server sees TLS from this process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2_store::StoreError;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpStream, UnixListener, UnixStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Postgres's SSLRequest: length 8, then the code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 4, 210, 22, 47];

/// A running link: its socket directory, removed when the last store clone goes.
#[derive(Debug)]
pub(crate) struct PinnedLink {
    dir: PathBuf,
    task: tokio::task::AbortHandle,
}

impl Drop for PinnedLink {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What the URL asks of TLS, when it names a CA to trust alone.
struct Wanted {
    ca: PathBuf,
    check_host: bool,
    client: Option<(PathBuf, PathBuf)>,
}

/// A URL parameter (any of `keys`) or, failing that, the libpq variable `env`.
fn parameter(url: &str, keys: &[&str], env: &str) -> Option<String> {
    let from_url = url::Url::parse(url)
        .ok()
        .and_then(|u| u.query_pairs().find(|(k, _)| keys.contains(&k.as_ref())).map(|(_, v)| v.into_owned()));
    from_url.or_else(|| std::env::var(env).ok()).filter(|v| !v.is_empty())
}

fn wanted(url: &str, connect: &PgConnectOptions) -> Option<Wanted> {
    let check_host = match connect.get_ssl_mode() {
        PgSslMode::VerifyFull => true,
        PgSslMode::VerifyCa => false,
        _ => return None,
    };
    // A Unix socket carries no TLS.
    if connect.get_host().starts_with('/') || connect.get_socket().is_some() {
        return None;
    }
    let ca = parameter(url, &["sslrootcert", "ssl-root-cert", "ssl-ca"], "PGSSLROOTCERT")?;
    let cert = parameter(url, &["sslcert", "ssl-cert"], "PGSSLCERT");
    let key = parameter(url, &["sslkey", "ssl-key"], "PGSSLKEY");
    let client = cert.zip(key).map(|(c, k)| (PathBuf::from(c), PathBuf::from(k)));
    Some(Wanted { ca: PathBuf::from(ca), check_host, client })
}

/// Where the URL names a CA and asks for verification: start a link, check
/// one handshake through it now (so a refused certificate is a typed error
/// here), and return the options that reach the server through it. Else the
/// options as they were.
pub(crate) async fn route(
    url: &str,
    connect: PgConnectOptions,
    timeout: Duration,
) -> Result<(PgConnectOptions, Option<Arc<PinnedLink>>), StoreError> {
    let Some(wanted) = wanted(url, &connect) else { return Ok((connect, None)) };
    let link = Arc::new(Link::new(&wanted, connect.get_host(), connect.get_port(), timeout)?);
    drop(link.open().await?);
    let dir = socket_dir()?;
    let socket = dir.join(format!(".s.PGSQL.{}", connect.get_port()));
    let listener = UnixListener::bind(&socket).map_err(|e| {
        let _ = std::fs::remove_dir_all(&dir);
        StoreError::unavailable(format!("cannot make the TLS link's socket {}: {e}", socket.display()))
    })?;
    let task = tokio::spawn(serve(listener, link)).abort_handle();
    let through = connect.socket(&dir).ssl_mode(PgSslMode::Disable);
    Ok((through, Some(Arc::new(PinnedLink { dir, task }))))
}

/// A new directory only this user can enter, short enough for a socket
/// path. Its name is not guessable ahead (a pid repeats across restarts, and
/// one left by a killed process, or made by another user, is passed over).
fn socket_dir() -> Result<PathBuf, StoreError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    let mut last = None;
    for _ in 0..16 {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("a2-tls-{}-{n}-{nanos:08x}", std::process::id()));
        match builder.create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) => last = Some((dir, e)),
        }
    }
    let (dir, e) = last.unwrap_or_else(|| (std::env::temp_dir(), std::io::Error::other("no attempt")));
    Err(StoreError::unavailable(format!("cannot make the TLS link's directory {}: {e}", dir.display())))
}

async fn serve(listener: UnixListener, link: Arc<Link>) {
    loop {
        let Ok((local, _)) = listener.accept().await else {
            // Out of descriptors, say: wait rather than spin.
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let link = link.clone();
        tokio::spawn(async move {
            if let Err(error) = carry(local, &link).await {
                tracing::debug!(%error, "a connection through the TLS link ended");
            }
        });
    }
}

async fn carry(mut local: UnixStream, link: &Link) -> Result<(), StoreError> {
    let mut remote = link.open().await?;
    tokio::io::copy_bidirectional(&mut local, &mut remote)
        .await
        .map(drop)
        .map_err(|e| StoreError::unavailable(e.to_string()))
}

/// The server's address and the TLS it must pass.
struct Link {
    host: String,
    port: u16,
    name: ServerName<'static>,
    connector: TlsConnector,
    /// How long one connection's TCP connect and TLS handshake may take (the store's connect timeout).
    timeout: Duration,
}

impl Link {
    fn new(wanted: &Wanted, host: &str, port: u16, timeout: Duration) -> Result<Self, StoreError> {
        let tls = |what: String| StoreError::Tls { message: what };
        let read = |path: &Path| std::fs::read(path).map_err(|e| tls(format!("cannot read {}: {e}", path.display())));
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&read(&wanted.ca)?) {
            let cert = cert.map_err(|e| tls(format!("{} holds no usable certificate: {e}", wanted.ca.display())))?;
            roots.add(cert).map_err(|e| tls(format!("{}: {e}", wanted.ca.display())))?;
        }
        if roots.is_empty() {
            return Err(tls(format!("{} holds no certificate", wanted.ca.display())));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| tls(format!("the CA in {}: {e}", wanted.ca.display())))?;
        let verifier: Arc<dyn ServerCertVerifier> =
            if wanted.check_host { verifier } else { Arc::new(ChainOnly(verifier)) };
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        let config = match &wanted.client {
            None => builder.with_no_client_auth(),
            Some((cert, key)) => {
                let chain = CertificateDer::pem_slice_iter(&read(cert)?)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| tls(format!("{}: {e}", cert.display())))?;
                let key =
                    PrivateKeyDer::from_pem_slice(&read(key)?).map_err(|e| tls(format!("{}: {e}", key.display())))?;
                builder.with_client_auth_cert(chain, key).map_err(|e| tls(e.to_string()))?
            }
        };
        // An IPv6 address is written in brackets in a URL, and without them everywhere else.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| StoreError::invalid(format!("{host:?} is no host name TLS can check: {e}")))?;
        let connector = TlsConnector::from(Arc::new(config));
        Ok(Self { host: host.to_owned(), port, name, connector, timeout })
    }

    /// One connection to the server, TLS begun and the certificate checked,
    /// within the store's connect timeout.
    async fn open(&self) -> Result<TlsStream<TcpStream>, StoreError> {
        let late = || {
            let (host, port, secs) = (&self.host, self.port, self.timeout.as_secs());
            StoreError::unavailable(format!("{host}:{port}: no TLS connection within {secs} s"))
        };
        tokio::time::timeout(self.timeout, self.handshake()).await.unwrap_or_else(|_| Err(late()))
    }

    async fn handshake(&self) -> Result<TlsStream<TcpStream>, StoreError> {
        let unreachable = |e: std::io::Error| StoreError::unavailable(format!("{}:{}: {e}", self.host, self.port));
        let mut tcp = TcpStream::connect((self.host.as_str(), self.port)).await.map_err(unreachable)?;
        tcp.set_nodelay(true).map_err(unreachable)?;
        tcp.write_all(&SSL_REQUEST).await.map_err(unreachable)?;
        let mut answer = [0u8; 1];
        tcp.read_exact(&mut answer).await.map_err(unreachable)?;
        if answer[0] != b'S' {
            return Err(StoreError::Tls {
                message: format!("{}:{} does not offer TLS, and the URL asks for it", self.host, self.port),
            });
        }
        self.connector.connect(self.name.clone(), tcp).await.map_err(|e| StoreError::Tls {
            message: format!(
                "the server's certificate was refused ({e}): only the CA in sslrootcert= is trusted, \
                 and with verify-full the URL's host must be one the certificate names"
            ),
        })
    }
}

/// `verify-ca`: the chain to the CA is checked, the host name is not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
