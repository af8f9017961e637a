//! `a2 serve-app`: the demo contract served as an A2 app over the wire
//! (`a2-http`), with the example page at `/` that pushes to and follows a
//! session. The Studio (`a2 serve` or the desktop app) on the same store
//! shows what the page does.

use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::{ApiError, ErrorCode, Studio};

impl Studio {
    /// The servers an app on the open store serves: the demo contract's,
    /// its consumers draining in this process. Pushes write, so a read-only
    /// connection is refused, and so is a store the demo does not own.
    pub async fn app_servers(&self) -> Result<Vec<a2_engine::Server>, ApiError> {
        let operator = self.writable_operator("serve-app")?;
        Ok(vec![operator.demo_server().await?])
    }
}

/// Serve `servers`' routes and the example page on 127.0.0.1 until
/// `shutdown` resolves; open streams are cut then, not waited for (an SSE
/// stream never ends by itself).
pub async fn serve_app(
    listener: tokio::net::TcpListener,
    servers: Vec<a2_engine::Server>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ApiError> {
    let port = listener.local_addr().map_err(|e| ApiError::new(ErrorCode::Unavailable, e.to_string()))?.port();
    let routes = a2_http::router(servers).map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    let app = routes
        .route("/", get(|| async { Html(a2_http::EXAMPLE_PAGE) }))
        .layer(axum::middleware::from_fn(move |request: Request, next: Next| local_only(port, request, next)));
    tokio::select! {
        served = axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>()) => served.map_err(|e| ApiError::new(ErrorCode::Unavailable, e.to_string())),
        () = shutdown => Ok(()),
    }
}

/// Only requests addressed to this server by its loopback name: a page of
/// another site reaching it through DNS rebinding names another host, and
/// this server writes to the store.
async fn local_only(port: u16, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    if [format!("127.0.0.1:{port}"), format!("localhost:{port}")].iter().any(|h| h == host) {
        return next.run(request).await;
    }
    let body = serde_json::json!({ "error": { "code": "FORBIDDEN", "message": "this server answers 127.0.0.1 and localhost only", "retryable": false } });
    (StatusCode::FORBIDDEN, axum::Json(body)).into_response()
}
