//! Waiting until a freshly started server answers, or saying why it never did.
//!
//! etcd counts as ready once its client port accepts connections; the API server
//! once `/readyz` answers `ok` to the admin client (the same TLS and token a test
//! will use). Both are polled until [`READY_TIMEOUT`] runs out, and give up at once
//! if the server process has exited. A failure carries the end of the server's log,
//! since that is where the reason is.

use std::time::{Duration, Instant};

use super::process::Supervised;
use super::{READY_TIMEOUT, TestEnv, TestEnvError};

impl TestEnv {
    /// Polls `/readyz` until the API server running as `server` is ready.
    pub(super) async fn wait_for_apiserver(&self, server: &Supervised) -> Result<(), TestEnvError> {
        let client = self.client()?;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if !server.is_running() {
                return Err(not_ready("kube-apiserver", "exited".into(), server));
            }
            let request = http::Request::get("/readyz")
                .body(Vec::new())
                .expect("a static request is valid");
            let last = match client.request_text(request).await {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => body,
                Err(e) => e.to_string(),
            };
            if Instant::now() >= deadline {
                return Err(not_ready("kube-apiserver", last, server));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// Polls until etcd, running as `server`, accepts connections on `port`.
pub(super) async fn wait_for_port(server: &Supervised, port: u16) -> Result<(), TestEnvError> {
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
