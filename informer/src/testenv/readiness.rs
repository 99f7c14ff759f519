//! Waiting until a freshly started server answers, or saying why it never did.
//!
//! etcd counts as ready once it says it is healthy on its client URL; the API server
//! once `/readyz` answers `ok` to the admin client (the same TLS and token a test
//! will use); the controller manager, when there is one, once its own `/healthz`
//! answers `ok`. Each is polled until [`READY_TIMEOUT`] runs out, and gives up at
//! once if the server process has exited. A failure carries the end of the server's
//! log, since that is where the reason is, and is logged once. An API server that
//! fails while etcd has exited is reported as etcd's failure, with etcd's log: the
//! API server's own log only says that etcd refused it.
//!
//! Polling is quiet: the kube client logs every refused connection and every 500 from
//! a `/readyz` still starting as an `ERROR`, which is how a starting server is
//! expected to answer, so those are not shown.

use std::time::{Duration, Instant};

use kube::Client;
use tracing::instrument::WithSubscriber;
use tracing::subscriber::NoSubscriber;

use crate::lock::MutexExt;

use super::etcd;
use super::process::Supervised;
use super::{READY_TIMEOUT, TestEnv, TestEnvError};

impl TestEnv {
    /// Polls `/readyz` until the API server running as `server` is ready.
    pub(super) async fn wait_for_apiserver(&self, server: &Supervised) -> Result<(), TestEnvError> {
        let polled = poll_ok(&self.client()?, "/readyz", "kube-apiserver", server)
            .with_subscriber(NoSubscriber::default())
            .await;
        polled
            .map_err(|error| self.etcd_exited().unwrap_or(error))
            .inspect_err(log_not_ready)
    }

    /// etcd's failure, when it is the one that is gone.
    fn etcd_exited(&self) -> Option<TestEnvError> {
        let etcd = self.etcd.locked();
        let etcd = etcd.as_ref().filter(|etcd| !etcd.is_running())?;
        Some(not_ready(
            "etcd",
            "exited while kube-apiserver started".into(),
            etcd,
        ))
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

/// Polls until etcd, running as `server`, says it is healthy at `url`.
pub(super) async fn wait_for_etcd(server: &Supervised, url: &str) -> Result<(), TestEnvError> {
    poll_etcd(server, url).await.inspect_err(log_not_ready)
}

async fn poll_etcd(server: &Supervised, url: &str) -> Result<(), TestEnvError> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let last = match etcd::is_healthy(url).await {
            Ok(()) => return Ok(()),
            Err(last) => last,
        };
        if !server.is_running() {
            return Err(not_ready("etcd", "exited".into(), server));
        }
        if Instant::now() >= deadline {
            return Err(not_ready("etcd", last, server));
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A stand-in for etcd's client URL that answers every request with `answer`.
    async fn answering(answer: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = [0; 1024];
                let _ = stream.read(&mut request).await;
                let reply =
                    format!("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{answer}");
                let _ = stream.write_all(reply.as_bytes()).await;
            }
        });
        url
    }

    fn server(dir: &Path, script: &str) -> Supervised {
        let args = ["-c".to_owned(), script.to_owned()];
        Supervised::spawn("etcd", Path::new("sh"), &args, &dir.join("log"), None).unwrap()
    }

    #[tokio::test]
    async fn etcd_is_ready_once_it_says_it_is_healthy() {
        let dir = tempfile::tempdir().unwrap();
        let etcd = server(dir.path(), "sleep 60");
        let url = answering(r#"{"health":"true","reason":""}"#).await;
        wait_for_etcd(&etcd, &url).await.unwrap();
    }

    /// An open port is not enough: an etcd that listens, then fails to open its
    /// storage (a full disk), and exits is reported as etcd's failure, with its log.
    #[tokio::test]
    async fn an_etcd_that_answers_unhealthy_and_exits_is_reported_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let etcd = server(
            dir.path(),
            "echo 'no space left on device' >&2; sleep 0.5; exit 1",
        );
        let url = answering(r#"{"health":"false","reason":"no leader"}"#).await;
        match wait_for_etcd(&etcd, &url).await {
            Err(TestEnvError::NotReady {
                component,
                reason,
                log_tail,
            }) => {
                assert_eq!((component, reason.as_str()), ("etcd", "exited"));
                assert!(log_tail.contains("no space left on device"), "{log_tail}");
            }
            other => panic!("{other:?}"),
        }
    }
}
