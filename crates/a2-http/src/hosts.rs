//! Which requests the routes answer at all: those naming a host they serve
//! (a page of another site that reached 127.0.0.1 through DNS rebinding
//! names its own), and, for a push, those from a page of an origin they
//! serve (a form or `fetch` of another site can POST without a preflight).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::error::WireError;
use crate::Wire;

/// The names of this machine a request may give without configuration.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// A `Host` header's (or an allowed entry's) name: its port and a trailing
/// dot left off, in lower case. Anything after an IPv6 literal but a port
/// keeps the whole text, which then matches no name.
fn host_name(host: &str) -> String {
    let host = host.trim().to_ascii_lowercase();
    let port_ok = |port: &str| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit());
    if let Some(end) = host.strip_prefix('[').and_then(|rest| rest.find(']')) {
        let rest = &host[end + 2..];
        return match rest.strip_prefix(':') {
            None if rest.is_empty() => host,
            Some(port) if port_ok(port) => host[..end + 2].to_owned(),
            _ => host,
        };
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port_ok(port) => name,
        _ => host.as_str(),
    };
    name.strip_suffix('.').unwrap_or(name).to_owned()
}

fn host_allowed(allowed: &[String], headers: &HeaderMap) -> bool {
    // A request without a Host is no browser's: rebinding needs a page, and a page's request names its host.
    let Some(host) = headers.get(header::HOST) else { return true };
    let Ok(host) = host.to_str() else { return false };
    let name = host_name(host);
    LOOPBACK.contains(&name.as_str()) || allowed.iter().any(|a| a == "*" || host_name(a) == name)
}

/// A push's `Origin` (a browser's, when it sends one) is the request's own
/// host, or one configured; a request without `Origin` is not a page's.
fn origin_allowed(allowed: &[String], headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return true };
    let Ok(origin) = origin.to_str() else { return false };
    let origin = origin.trim_end_matches('/').to_ascii_lowercase();
    let own = headers.get(header::HOST).and_then(|h| h.to_str().ok()).map(str::to_ascii_lowercase);
    let same = own.is_some_and(|host| origin == format!("http://{host}") || origin == format!("https://{host}"));
    same || allowed.iter().any(|a| a.trim_end_matches('/').eq_ignore_ascii_case(&origin))
}

pub(crate) async fn guard(State(wire): State<Arc<Wire>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    if !host_allowed(&wire.options.allowed_hosts, headers) {
        let message = "this server does not answer that Host: add it to WireOptions::allowed_hosts";
        return WireError::new(StatusCode::FORBIDDEN, "FORBIDDEN_HOST", message).into_response();
    }
    if request.method() == Method::POST && !origin_allowed(&wire.options.allowed_origins, headers) {
        let message = "pushes from a page of another origin are refused: add it to WireOptions::allowed_origins";
        return WireError::new(StatusCode::FORBIDDEN, "FORBIDDEN_ORIGIN", message).into_response();
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_lose_their_port() {
        assert_eq!(host_name("LocalHost:8080"), "localhost");
        assert_eq!(host_name("[::1]:99"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
        assert_eq!(host_name("app.example"), "app.example");
        assert_eq!(host_name("app.example:"), "app.example:");
        assert_eq!(host_name("localhost."), "localhost");
        assert_eq!(host_name("[::1]x"), "[::1]x");
        assert_eq!(host_name("[::1]:x"), "[::1]:x");
    }
}
