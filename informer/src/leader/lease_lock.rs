//! The Lease as a lock: read, create, and update under the resourceVersion last
//! read (client-go's `resourcelock.LeaseLock`), each request bounded in time.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use super::LeaderError;
use super::record::Record;

/// Requests about one Lease.
#[derive(Clone, Debug)]
pub(crate) struct LeaseLock {
    api: Api<Lease>,
    name: String,
    describe: String,
}

impl LeaseLock {
    pub(crate) fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            describe: format!("{namespace}/{name}"),
        }
    }

    /// The Lease as `namespace/name`.
    pub(crate) fn describe(&self) -> &str {
        &self.describe
    }

    /// The Lease, or `None` if it does not exist.
    pub(crate) async fn get(&self, limit: Duration) -> Result<Option<Lease>, LeaderError> {
        self.bounded("reading", limit, self.api.get_opt(&self.name))
            .await
    }

    /// Creates the Lease holding `record`.
    pub(crate) async fn create(
        &self,
        record: &Record,
        limit: Duration,
    ) -> Result<Lease, LeaderError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(record.to_spec()),
        };
        self.bounded(
            "creating",
            limit,
            self.api.create(&PostParams::default(), &lease),
        )
        .await
    }

    /// Writes `record` over `last`, the Lease as last read or written: the update
    /// carries `last`'s resourceVersion, so it fails with a conflict if anyone wrote
    /// the Lease since (optimistic concurrency).
    pub(crate) async fn update(
        &self,
        last: &Lease,
        record: &Record,
        limit: Duration,
    ) -> Result<Lease, LeaderError> {
        let lease = Lease {
            metadata: last.metadata.clone(),
            spec: Some(record.to_spec()),
        };
        self.bounded(
            "updating",
            limit,
            self.api.replace(&self.name, &PostParams::default(), &lease),
        )
        .await
    }

    async fn bounded<T>(
        &self,
        action: &'static str,
        limit: Duration,
        request: impl Future<Output = kube::Result<T>>,
    ) -> Result<T, LeaderError> {
        match tokio::time::timeout(limit, request).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(source)) => Err(LeaderError::Api {
                action,
                lease: self.describe.clone(),
                source,
            }),
            Err(_) => Err(LeaderError::Timeout {
                action,
                lease: self.describe.clone(),
                after: limit,
            }),
        }
    }
}

/// Whether a request failed because someone else wrote the Lease first.
pub(crate) fn is_conflict(error: &LeaderError) -> bool {
    matches!(error, LeaderError::Api { source: kube::Error::Api(status), .. } if status.code == 409)
}
