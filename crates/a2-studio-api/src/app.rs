//! `a2 serve-app`: the demo contract served as an A2 app over the wire
//! (`a2-http`), with the example page at `/` that pushes to and follows a
//! session. The Studio (`a2 serve` or the desktop app) on the same store
//! shows what the page does.

use axum::response::Html;
use axum::routing::get;

use crate::{ApiError, Studio};

impl Studio {
    /// The servers an app on the open store serves: the demo contract's,
    /// its consumers draining in this process. Pushes write, so a read-only
    /// connection is refused.
    pub fn app_servers(&self) -> Result<Vec<a2_engine::Server>, ApiError> {
        let operator = self.writable_operator("serve-app")?;
        Ok(vec![operator.demo_server()?])
    }
}

/// Serve `servers`' routes and the example page until `shutdown` resolves.
pub async fn serve_app(
    listener: tokio::net::TcpListener,
    servers: Vec<a2_engine::Server>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = a2_http::router(servers).route("/", get(|| async { Html(a2_http::EXAMPLE_PAGE) }));
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}
