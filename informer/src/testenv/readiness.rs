//! Waiting until a freshly started server answers, or saying why it never did.
//!
//! etcd counts as ready once its client port accepts connections; the API server
//! once `/readyz` answers `ok` to the admin client (the same TLS and token a test
//! will use); the controller manager, when there is one, once its own `/healthz`
//! answers `ok`. Each is polled until [`READY_TIMEOUT`] runs out, and gives up at
//! once if the server process has exited. A failure carries the end of the server's
//! log, since that is where the reason is, and is logged once.
//!
//! Polling is quiet: the kube client logs every refused connection and every 500 from
//! a `/readyz` still starting as an `ERROR`, which is how a starting server is
//! expected to answer, so those are not shown.

use std::time::{Duration, Instant};

use kube::Client;
use tracing::instrument::WithSubscriber;
use tracing::subscriber::NoSubscriber;

use super::process::Supervised;
use super::{READY_TIMEOUT, TestEnv, TestEnvError};

impl TestEnv {
    /// Polls `/readyz` until the API server running as `server` is ready.
    pub(super) async fn wait_for_apiserver(&self, server: &Supervised) -> Result<(), TestEnvError> {
        wait_for_ok(&self.client()?, "/readyz", "kube-apiserver", server).await
    }
}

/// Polls `GET path` through `client` until it answers `ok`, giving up when `server`
/// (the `component` that answers there) exits or [`READY_TIMEOUT`] runs out.
pub(super) async fn wait_for_ok(
    client: &Client,
    path: &'static str,
    component: &'static str,
    server: &Supervised,
) -> Result<(), TestEnvError> {
    let polled = poll_ok(client, path, component, server)
        .with_subscriber(NoSubscriber::default())
        .await;
    polled.inspect_err(log_not_ready)
}

async fn poll_ok(
    client: &Client,
    path: &'static str,
    component: &'static str,
    server: &Supervised,
) -> Result<(), TestEnvError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if !server.is_running() {
            return Err(not_ready(component, "exited".into(), server));
        }
        let request = http::Request::get(path)
            .body(Vec::new())
            .expect("a static request is valid");
        let last = match client.request_text(request).await {
            Ok(body) if body.trim() == "ok" => return Ok(()),
            Ok(body) => body,
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(not_ready(component, last, server));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls until etcd, running as `server`, accepts connections on `port`.
pub(super) async fn wait_for_port(server: &Supervised, port: u16) -> Result<(), TestEnvError> {
    poll_port(server, port).await.inspect_err(log_not_ready)
}

async fn poll_port(server: &Supervised, port: u16) -> Result<(), TestEnvError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        if !server.is_running() {
            return Err(not_ready("etcd", "exited".into(), server));
        }
        if Instant::now() >= deadline {
            return Err(not_ready("etcd", format!("port {port} closed"), server));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn not_ready(component: &'static str, reason: String, server: &Supervised) -> TestEnvError {
    TestEnvError::NotReady {
        component,
        reason,
        log_tail: server.log_tail(),
    }
}

/// The one line a server that never became ready is worth.
fn log_not_ready(error: &TestEnvError) {
    tracing::error!(%error, "the test control plane did not become ready");
}
