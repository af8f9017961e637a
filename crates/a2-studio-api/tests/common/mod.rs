//! What the Studio's tests share: a scratch folder each, and the web mode's
//! HTTP spoken by hand (so a test sees exactly the status and body sent).

use std::sync::atomic::{AtomicU64, Ordering};

use std::sync::Arc;

use a2_studio_api::{web, ConnectionOpen, Studio};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static NEXT: AtomicU64 = AtomicU64::new(0);

/// A folder no other test uses.
pub fn scratch(tag: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "a2-{tag}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// Open `url` by URL, as the switch says (`None`: as the Studio decides).
pub fn open(url: &str, read_only: Option<bool>) -> ConnectionOpen {
    ConnectionOpen { url: Some(url.to_owned()), profile: None, password: None, read_only }
}

/// A UI of two files: the app's page and one script.
pub struct Ui;

impl web::Assets for Ui {
    fn get(&self, path: &str) -> Option<Vec<u8>> {
        match path {
            "index.html" => Some(b"<!doctype html><title>A2 Studio</title>".to_vec()),
            "app.js" => Some(b"console.log(1)".to_vec()),
            _ => None,
        }
    }
}

/// One HTTP/1.1 exchange: (status, body).
pub async fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, _, body) = http_with_head(port, method, path, headers, body).await;
    (status, body)
}

/// One HTTP/1.1 exchange: (status, the response's head, body).
#[allow(dead_code)]
pub async fn http_with_head(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap_or_else(|e| panic!("{e}"));
    let mut request = format!("{method} {path} HTTP/1.1\r\nconnection: close\r\ncontent-length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| *k == "host") {
        request.push_str(&format!("host: 127.0.0.1:{port}\r\n"));
    }
    for (key, value) in headers {
        request.push_str(&format!("{key}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    // A server may answer (413, 401) and close before reading a large body: what it sent still counts.
    let _ = stream.write_all(request.as_bytes()).await;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response).await;
    let status = response.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (head, body) = response.split_once("\r\n\r\n").map(|(h, b)| (h.to_owned(), b.to_owned())).unwrap_or_default();
    (status, head, body)
}

/// The web mode serving `studio` on a free port, until [`Served::stop`].
pub struct Served {
    pub port: u16,
    pub token: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

pub async fn serve(studio: Arc<Studio>) -> Served {
    let listener = web::bind(0).await.unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().unwrap_or_else(|e| panic!("{e}")).port();
    let token = web::new_token();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(web::run(listener, studio, Arc::new(Ui), token.clone(), async {
        let _ = stopped.await;
    }));
    Served { port, token, stop, server }
}

impl Served {
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}
