//! etcd's own HTTP API on its client URL: its health, and the calls the levers make.
//!
//! Spoken by hand over one TCP connection (HTTP/1.0, so that the answer is neither
//! chunked nor kept alive), so that no etcdctl is needed: envtest's binary folders
//! have none.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::TestEnvError;

/// How long one request may wait for etcd's answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends `method path` with `body` (JSON, or empty) to the etcd at `url`
/// (`http://127.0.0.1:PORT`) and returns the JSON it answers with 200.
pub(super) async fn request(
    url: &str,
    action: &'static str,
    method: &str,
    path: &str,
    body: &str,
) -> Result<serde_json::Value, TestEnvError> {
    let failed = |message: String| TestEnvError::Etcd { action, message };
    let address = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .map_err(|e| failed(format!("connecting to {address}: {e}")))?;
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut answer = Vec::new();
    let exchanged = async {
        stream.write_all(request.as_bytes()).await?;
        stream.read_to_end(&mut answer).await
    };
    tokio::time::timeout(ANSWER_TIMEOUT, exchanged)
        .await
        .map_err(|_| failed(format!("no answer within {ANSWER_TIMEOUT:?}")))?
        .map_err(|e| failed(e.to_string()))?;
    let answer = String::from_utf8_lossy(&answer);
    let (head, json) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        let status = head.lines().next().unwrap_or_default();
        return Err(failed(format!("{status}: {}", json.trim())));
    }
    serde_json::from_str(json).map_err(|e| failed(format!("{e} in {json}")))
}

/// Whether the etcd at `url` says it is healthy (`GET /health`: it has a leader and
/// can commit, which an open port alone does not show: etcd listens before its
/// storage is ready, and exits after listening when that fails, e.g. a full disk).
pub(super) async fn is_healthy(url: &str) -> Result<(), String> {
    match request(url, "health", "GET", "/health", "").await {
        Ok(answer) if answer["health"] == "true" => Ok(()),
        Ok(answer) => Err(format!("unhealthy: {answer}")),
        Err(e) => Err(e.to_string()),
    }
}
