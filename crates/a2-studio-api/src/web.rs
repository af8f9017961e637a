//! The web mode: the Studio's UI and commands over HTTP, on 127.0.0.1 only.
//! `POST /api/<command>` takes the same `{ "request": … }` body as the Tauri
//! command and answers with its result (200) or its `ApiError` (4xx/5xx).
//! Every API call must carry this server's random token in an `x-a2-token`
//! header: another local user or a web page cannot drive it. The printed URL
//! carries a one-time code, not the token: the page trades it once
//! (`POST /login`) for the token, which it keeps in this origin's storage
//! (a cookie would also go to every other port of 127.0.0.1), so the token
//! never appears in an address bar or a browser's history.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ErrorCode;
use crate::*;

/// Where the built UI comes from: assets embedded in a binary.
pub trait Assets: Send + Sync + 'static {
    /// The bytes of `path` (relative, no leading slash), if there is such a file.
    fn get(&self, path: &str) -> Option<Vec<u8>>;
}

/// The UI as Vite built it into `ui/dist` when this crate was compiled,
/// carried inside the binary (the desktop shell embeds it through Tauri).
#[derive(rust_embed::RustEmbed)]
#[folder = "../../ui/dist"]
#[allow_missing = true]
struct BuiltUi;

/// The embedded UI, for `a2 serve`.
pub struct EmbeddedUi;

impl Assets for EmbeddedUi {
    fn get(&self, path: &str) -> Option<Vec<u8>> {
        BuiltUi::get(path).map(|file| file.data.into_owned())
    }
}

/// A request body larger than this is refused unread: the largest command
/// (a multi-select redrive of 500 dead letters) is far smaller.
const BODY_LIMIT: usize = 256 * 1024;

macro_rules! web_dispatch {
    ($( $name:ident($request:ty) -> $response:ty; )*) => {
        /// The commands the web mode serves: the same list as the desktop shell's.
        pub const COMMANDS: &[&str] = &[$(stringify!($name)),*];

        async fn dispatch(studio: &Studio, command: &str, body: serde_json::Value) -> Option<Result<serde_json::Value, ApiError>> {
            Some(match command {
                $( stringify!($name) => match request::<$request>(body) {
                    Ok(request) => studio.$name(request).await.and_then(|answer| to_json(&answer)),
                    Err(error) => Err(error),
                }, )*
                _ => return None,
            })
        }
    };
}
crate::studio_commands!(web_dispatch);

fn request<T: DeserializeOwned>(mut body: serde_json::Value) -> Result<T, ApiError> {
    let request = body.get_mut("request").map(serde_json::Value::take).unwrap_or(serde_json::Value::Null);
    serde_json::from_value(request).map_err(|e| ApiError::invalid(format!("the request does not fit the command: {e}")))
}

fn to_json<T: Serialize>(value: &T) -> Result<serde_json::Value, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::new(ErrorCode::Internal, format!("the answer could not be encoded: {e}")))
}

struct Web {
    studio: Arc<Studio>,
    assets: Arc<dyn Assets>,
    token: String,
    port: u16,
    /// The printed URL's code has been exchanged for the cookie: it works once.
    code_spent: AtomicBool,
}

/// A fresh random token for one server's lifetime.
pub fn new_token() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// A listener on 127.0.0.1 (`port` 0: any free port).
pub async fn bind(port: u16) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await
}

/// The address to open in a browser: it carries a one-time code, not the
/// token, so what a browser's history keeps of it is already spent.
pub fn url(listener: &tokio::net::TcpListener, token: &str) -> std::io::Result<String> {
    Ok(format!("http://127.0.0.1:{}/?code={}", listener.local_addr()?.port(), one_time_code(token)))
}

/// The code the printed URL carries, derived one way from the token (so the
/// server needs keep nothing more): the first page that trades it gets the
/// token, and the code is spent.
pub fn one_time_code(token: &str) -> String {
    use sha1::Digest as _;
    let digest = sha1::Sha1::digest(format!("a2-studio-login:{token}").as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Serve until `shutdown` resolves.
pub async fn run(
    listener: tokio::net::TcpListener,
    studio: Arc<Studio>,
    assets: Arc<dyn Assets>,
    token: String,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let web = Arc::new(Web { studio, assets, token, port, code_spent: AtomicBool::new(false) });
    let app = Router::new()
        .route("/api/{command}", post(command))
        .route("/login", post(login))
        .fallback(get(asset))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(web);
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

fn error_response(status: StatusCode, error: ApiError) -> Response {
    (status, axum::Json(error)).into_response()
}

fn status_of(error: &ApiError) -> StatusCode {
    match error.code {
        ErrorCode::ReadOnly | ErrorCode::Forbidden => StatusCode::FORBIDDEN,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::NotConnected => StatusCode::CONFLICT,
        code if code.as_str().starts_with("INVALID") => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// A request addressed to this server by its loopback name: a page of
/// another site reaching it through DNS rebinding names another host.
fn local_host(web: &Web, headers: &HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    [format!("127.0.0.1:{}", web.port), format!("localhost:{}", web.port)].iter().any(|h| h == host)
}

/// A request from a page of another origin (its browser says so) is refused.
fn same_origin(web: &Web, headers: &HeaderMap) -> bool {
    match headers.get(header::ORIGIN).map(|v| v.to_str().unwrap_or("")) {
        None => true,
        Some(origin) => [format!("http://127.0.0.1:{}", web.port), format!("http://localhost:{}", web.port)]
            .iter()
            .any(|o| o == origin),
    }
}

/// Only a page served by this server, from this machine, may call the API.
fn allowed(web: &Web, headers: &HeaderMap) -> bool {
    let token = headers.get("x-a2-token").and_then(|v| v.to_str().ok()).unwrap_or("");
    constant_time_eq(token.as_bytes(), web.token.as_bytes()) && local_host(web, headers) && same_origin(web, headers)
}

/// The page's trade of the printed URL's code for the token, once: a code
/// spent or wrong gets nothing (restart the server for a new link).
async fn login(State(web): State<Arc<Web>>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let code = serde_json::from_slice::<serde_json::Value>(&body).ok();
    let code = code.as_ref().and_then(|b| b.get("code")).and_then(|c| c.as_str()).unwrap_or("");
    let expected = one_time_code(&web.token);
    let fresh = local_host(&web, &headers)
        && same_origin(&web, &headers)
        && constant_time_eq(code.as_bytes(), expected.as_bytes())
        && web.code_spent.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_ok();
    if !fresh {
        let error = ApiError::new(
            ErrorCode::Unauthorized,
            "this link's one-time code was already used (or is wrong): the tab that opened it first has the \
             Studio's token; restart `a2 serve` for a new link",
        );
        return error_response(StatusCode::FORBIDDEN, error);
    }
    let mut response = axum::Json(serde_json::json!({ "token": web.token })).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token and host are checked before the body is read, and the body is read only up to [`BODY_LIMIT`].
async fn command(State(web): State<Arc<Web>>, Path(name): Path<String>, request: Request) -> Response {
    if !allowed(&web, request.headers()) {
        let error = ApiError::new(
            ErrorCode::Unauthorized,
            "the Studio's token is missing or wrong: open the URL `a2 serve` printed",
        );
        return error_response(StatusCode::UNAUTHORIZED, error);
    }
    let body = match axum::body::to_bytes(request.into_body(), BODY_LIMIT).await {
        Ok(body) => body,
        Err(_) => {
            let error = ApiError::invalid(format!("the request body is over {} KiB", BODY_LIMIT / 1024));
            return error_response(StatusCode::PAYLOAD_TOO_LARGE, error);
        }
    };
    let body: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => {
            return error_response(StatusCode::BAD_REQUEST, ApiError::invalid(format!("the body is not JSON: {e}")))
        }
    };
    match dispatch(&web.studio, &name, body).await {
        Some(Ok(answer)) => axum::Json(answer).into_response(),
        Some(Err(error)) => error_response(status_of(&error), error),
        None => {
            error_response(StatusCode::NOT_FOUND, ApiError::new(ErrorCode::NotFound, format!("no command '{name}'")))
        }
    }
}

const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// A path an asset may have: relative, no parent or hidden parts, no drive or backslash.
fn plain_asset_path(path: &str) -> bool {
    !path.is_empty()
        && !path.contains([':', '\\'])
        && path.split('/').all(|part| !part.is_empty() && part != ".." && !part.starts_with('.'))
}

/// A file of the UI; any other path is the app's page (routes live in the hash).
async fn asset(State(web): State<Arc<Web>>, headers: HeaderMap, uri: Uri) -> Response {
    if !local_host(&web, &headers) {
        return (StatusCode::MISDIRECTED_REQUEST, "this server answers to 127.0.0.1 and localhost only")
            .into_response();
    }
    let path = uri.path().trim_start_matches('/');
    let found = if plain_asset_path(path) { web.assets.get(path) } else { None };
    let (path, bytes) = match found {
        Some(bytes) => (path, bytes),
        None => match web.assets.get("index.html") {
            Some(bytes) => ("index.html", bytes),
            None => {
                let message =
                    "this binary was built without the Studio UI: build ui/ first (`cargo xtask studio` does), then this binary";
                return (StatusCode::NOT_FOUND, message).into_response();
            }
        },
    };
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}
