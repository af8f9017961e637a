//! A bare HTTP/1.0 client over a TCP socket: the tests speak the wire as a
//! foreign client would, with nothing of the server's code in between.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const PATIENCE: Duration = Duration::from_secs(20);

pub struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The error code of an error answer.
    pub fn code(&self) -> String {
        self.json()["error"]["code"].as_str().unwrap_or_else(|| panic!("no error code in {}", self.body)).to_owned()
    }
}

/// A request as text; `Host: 127.0.0.1` unless `headers` names one.
fn request_text(method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut text = format!("{method} {path} HTTP/1.0\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        text.push_str("Host: 127.0.0.1\r\n");
    }
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        text.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    text.push_str("\r\n");
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

pub async fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let exchange = async {
        let mut socket = TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        socket.write_all(&request_text(method, path, headers, body)).await.unwrap_or_else(|e| panic!("write: {e}"));
        let mut raw = Vec::new();
        socket.read_to_end(&mut raw).await.unwrap_or_else(|e| panic!("read: {e}"));
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {raw:?}"));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("status of {head}"));
        Answer { status, body: body.to_owned() }
    };
    tokio::time::timeout(PATIENCE, exchange).await.unwrap_or_else(|_| panic!("{method} {path} did not answer"))
}

pub async fn push(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    send(addr, "POST", path, &[("Content-Type", "application/json")], body.to_string().as_bytes()).await
}

/// A push whose body is sent in chunks, its length never declared (HTTP/1.1).
pub async fn chunked_push(addr: SocketAddr, path: &str, body: &[u8]) -> Answer {
    let exchange = async {
        let mut socket = TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        let mut bytes = head.into_bytes();
        for chunk in body.chunks(1000) {
            bytes.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
            bytes.extend_from_slice(chunk);
            bytes.extend_from_slice(b"\r\n");
        }
        bytes.extend_from_slice(b"0\r\n\r\n");
        // The server may answer and close before it has read it all.
        let _ = socket.write_all(&bytes).await;
        let mut raw = Vec::new();
        let _ = socket.read_to_end(&mut raw).await;
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no head in {raw:?}"));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("status of {head}"));
        Answer { status, body: body.to_owned() }
    };
    tokio::time::timeout(PATIENCE, exchange).await.unwrap_or_else(|_| panic!("POST {path} did not answer"))
}

pub async fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, "GET", path, &[], b"").await
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub event: String,
    pub id: Option<String>,
    pub data: Value,
}

/// An open SSE stream, read a frame at a time.
pub struct Sse {
    pub status: u16,
    pub headers: String,
    reader: BufReader<TcpStream>,
}

impl Sse {
    pub async fn open(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Sse {
        Self::open_from(None, addr, path, headers).await
    }

    /// [`Sse::open`] from a local address of the test's choosing (another
    /// loopback address is another client).
    pub async fn open_from(
        from: Option<std::net::Ipv4Addr>,
        addr: SocketAddr,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Sse {
        let open = async {
            let mut socket = match from {
                None => TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("connect {addr}: {e}")),
                Some(ip) => {
                    let socket = tokio::net::TcpSocket::new_v4().unwrap_or_else(|e| panic!("socket: {e}"));
                    socket.bind(SocketAddr::from((ip, 0))).unwrap_or_else(|e| panic!("bind {ip}: {e}"));
                    socket.connect(addr).await.unwrap_or_else(|e| panic!("connect {addr} from {ip}: {e}"))
                }
            };
            socket.write_all(&request_text("GET", path, headers, b"")).await.unwrap_or_else(|e| panic!("write: {e}"));
            let mut reader = BufReader::new(socket);
            let mut head = String::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).await.unwrap_or_else(|e| panic!("read: {e}"));
                if line == "\r\n" || line.is_empty() {
                    break;
                }
                head.push_str(&line);
            }
            let status =
                head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("status of {head}"));
            Sse { status, headers: head.to_ascii_lowercase(), reader }
        };
        tokio::time::timeout(PATIENCE, open).await.unwrap_or_else(|_| panic!("GET {path} did not answer"))
    }

    /// The rest of the response (a refusal's JSON body).
    pub async fn body(&mut self) -> String {
        let mut body = String::new();
        let read = self.reader.read_to_string(&mut body);
        tokio::time::timeout(PATIENCE, read).await.unwrap_or_else(|_| panic!("the body did not end")).ok();
        body
    }

    /// The next frame (pings skipped), or `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Frame> {
        let read = async {
            let (mut event, mut id, mut data) = (String::from("message"), None, String::new());
            let mut any = false;
            loop {
                let mut line = String::new();
                if self.reader.read_line(&mut line).await.unwrap_or_else(|e| panic!("read: {e}")) == 0 {
                    return None;
                }
                let line = line.trim_end_matches(['\r', '\n']);
                if line.is_empty() {
                    if any {
                        let data = serde_json::from_str(&data).unwrap_or_else(|e| panic!("frame data ({e}): {data}"));
                        return Some(Frame { event, id, data });
                    }
                    continue;
                }
                if line.starts_with(':') {
                    continue;
                }
                any = true;
                let (name, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match name {
                    "event" => event = value.to_owned(),
                    "id" => id = Some(value.to_owned()),
                    "data" => data.push_str(value),
                    _ => {}
                }
            }
        };
        tokio::time::timeout(PATIENCE, read).await.unwrap_or_else(|_| panic!("no frame came"))
    }

    /// The next frame that is an event.
    pub async fn next_event(&mut self) -> Frame {
        loop {
            let frame = self.next().await.unwrap_or_else(|| panic!("the stream ended"));
            if frame.event == "event" {
                return frame;
            }
        }
    }
}
