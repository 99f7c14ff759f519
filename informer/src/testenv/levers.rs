//! The levers for the faults an informer must survive.
//!
//! Each one reproduces something a real cluster does to its clients: the API server
//! going away and coming back while etcd keeps the data (every watch breaks, changes
//! made meanwhile must be caught up by a relist), etcd compacting its history (old
//! resourceVersions answer 410 Gone), and one client's connection being cut while
//! others go on writing ([`FaultProxy`]).

use super::etcd;
use super::process::Supervised;
use super::{FaultProxy, TestEnv, TestEnvError};

use crate::lock::MutexExt;

impl TestEnv {
    /// Starts a [`FaultProxy`] to the API server: clients made from it can be cut
    /// off and reconnected while other clients go on. It lives as long as the
    /// returned value, on the calling tokio runtime.
    pub async fn fault_proxy(&self) -> Result<FaultProxy, TestEnvError> {
        FaultProxy::start(self.apiserver_port, &self.admin).await
    }

    /// Stops the API server; etcd keeps running with all data. Clients see
    /// connection errors until [`TestEnv::start_apiserver`].
    pub async fn stop_apiserver(&self) {
        let running = self.apiserver.locked().take();
        if let Some(mut server) = running {
            // Stopping waits for the process: keep that off the async worker.
            let _ = tokio::task::spawn_blocking(move || server.stop()).await;
        }
    }

    /// Starts the API server (on the same port as before) and waits until it is
    /// ready. Does nothing if it is already running.
    pub async fn start_apiserver(&self) -> Result<(), TestEnvError> {
        if self.apiserver.locked().is_some() {
            return Ok(());
        }
        let server = Supervised::spawn(
            "kube-apiserver",
            &self.binaries.apiserver,
            &self.apiserver_args,
            &self.dir.join("kube-apiserver.log"),
            None,
        )?;
        let ready = self.wait_for_apiserver(&server).await;
        *self.apiserver.locked() = Some(server);
        ready
    }

    /// Stops and starts the API server while etcd keeps its data: every watch
    /// breaks, and objects changed meanwhile must be caught up by a relist.
    pub async fn restart_apiserver(&self) -> Result<(), TestEnvError> {
        self.stop_apiserver().await;
        self.start_apiserver().await
    }

    /// Compacts etcd's history up to its current revision and returns that revision.
    ///
    /// Afterwards any older resourceVersion is gone from etcd: with the watch cache
    /// off ([`TestEnvBuilder::watch_cache`](super::TestEnvBuilder::watch_cache)), a
    /// watch or list from one answers 410 Gone at once. With the watch cache on, the
    /// API server goes on answering such versions from its cache (a watch from one
    /// replays its events, even a list at an exact old version or an old continue
    /// token answers 200) until it restarts: after
    /// [`TestEnv::restart_apiserver`] (etcd keeps the data) they are 410 too. Seen on
    /// 1.36 (etcd 3.5) and 1.20 (etcd 3.4); etcd compacts alike in every release.
    pub async fn compact_etcd(&self) -> Result<i64, TestEnvError> {
        // etcd's own API through its JSON gateway (on by default on the client URL).
        let status = self
            .etcd_api("status", "/v3/maintenance/status", "{}")
            .await?;
        // 64-bit integers come as strings in the gateway's JSON.
        let revision = status["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse::<i64>().ok())
            .ok_or_else(|| TestEnvError::Etcd {
                action: "status",
                message: format!("no revision in {status}"),
            })?;
        let compaction = serde_json::json!({ "revision": revision.to_string(), "physical": true });
        self.etcd_api("compaction", "/v3/kv/compaction", &compaction.to_string())
            .await?;
        Ok(revision)
    }

    /// POSTs `body` to etcd's JSON gateway at `path` and returns the JSON it answers.
    async fn etcd_api(
        &self,
        action: &'static str,
        path: &str,
        body: &str,
    ) -> Result<serde_json::Value, TestEnvError> {
        etcd::request(&self.etcd_url, action, "POST", path, body).await
    }
}
