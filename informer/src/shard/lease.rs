//! Requests about the group's Leases: create and renew this member's own (under the
//! resourceVersion last written), list the group, and fence (delete under the
//! resourceVersion observed) a member whose lease expired. Each is bounded in time.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Api;
use kube::api::{
    DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams, Preconditions,
};

use super::config::{GROUP_LABEL, VIEW_ANNOTATION};
use super::ring::{Layout, View};
use super::{ShardConfig, ShardError};
use crate::leader::wall_now;

/// Requests about one group's Leases.
#[derive(Clone, Debug)]
pub(crate) struct GroupLeases {
    api: Api<Lease>,
    config: ShardConfig,
    name: String,
    describe: String,
    /// Each request's time limit (leader election's: `max(1 s, renew_deadline / 2)`).
    limit: Duration,
}

impl GroupLeases {
    pub(crate) fn new(client: kube::Client, config: &ShardConfig) -> Self {
        let name = config.lease_name();
        Self {
            api: Api::namespaced(client, &config.namespace),
            describe: format!("{}/{name}", config.namespace),
            name,
            limit: (config.timings.renew_deadline / 2).max(Duration::from_secs(1)),
            config: config.clone(),
        }
    }

    /// This member's Lease as `namespace/name`.
    pub(crate) fn describe(&self) -> &str {
        &self.describe
    }

    /// This member's Lease publishing `view`; over `last` it carries `last`'s UID
    /// and resourceVersion (preconditions of the renewal) and acquire time.
    fn own_lease(&self, last: Option<&Lease>, view: &View) -> Lease {
        let now = MicroTime(wall_now());
        let metadata = ObjectMeta {
            name: Some(self.name.clone()),
            uid: last.and_then(|l| l.metadata.uid.clone()),
            resource_version: last.and_then(|l| l.metadata.resource_version.clone()),
            labels: Some(BTreeMap::from([(
                GROUP_LABEL.to_owned(),
                self.config.group.clone(),
            )])),
            annotations: Some(BTreeMap::from([(
                VIEW_ANNOTATION.to_owned(),
                view.to_annotation(),
            )])),
            ..ObjectMeta::default()
        };
        let acquired = last
            .and_then(|l| l.spec.as_ref())
            .and_then(|s| s.acquire_time.clone())
            .unwrap_or_else(|| now.clone());
        Lease {
            metadata,
            spec: Some(LeaseSpec {
                holder_identity: Some(self.config.identity.clone()),
                lease_duration_seconds: Some(self.config.lease_duration_seconds()),
                acquire_time: Some(acquired),
                renew_time: Some(now),
                ..LeaseSpec::default()
            }),
        }
    }

    /// Creates this member's Lease publishing `view`.
    pub(crate) async fn create(&self, view: &View) -> Result<Lease, ShardError> {
        let lease = self.own_lease(None, view);
        self.bounded(
            "creating",
            &self.describe,
            self.api.create(&PostParams::default(), &lease),
        )
        .await
    }

    /// Rewrites this member's Lease over `last` (a new renewTime), publishing `view`.
    ///
    /// A merge patch carrying `last`'s UID and resourceVersion: it fails with 409 if
    /// anyone wrote the Lease since, and with 404 if it was fenced (deleted). An
    /// update (PUT) would not do: Leases are created on update, which would bring a
    /// fenced member back without it noticing.
    pub(crate) async fn renew(&self, last: &Lease, view: &View) -> Result<Lease, ShardError> {
        let lease = self.own_lease(Some(last), view);
        self.bounded(
            "renewing",
            &self.describe,
            self.api
                .patch(&self.name, &PatchParams::default(), &Patch::Merge(&lease)),
        )
        .await
    }

    /// This member's Lease as the server has it now.
    pub(crate) async fn get_own(&self) -> Result<Option<Lease>, ShardError> {
        self.bounded("reading", &self.describe, self.api.get_opt(&self.name))
            .await
    }

    /// Every Lease of the group, read from etcd (not a cache): it must reflect every
    /// write that completed before it.
    pub(crate) async fn list(&self) -> Result<Vec<Lease>, ShardError> {
        let selector = self.config.selector();
        let params = ListParams::default().labels(&selector);
        let list = self
            .bounded("listing", &selector, self.api.list(&params))
            .await?;
        Ok(list.items)
    }

    /// Deletes `lease` if it is still exactly as observed (same UID and
    /// resourceVersion): a member that renewed meanwhile is left alone (409). Gone
    /// already counts as done.
    pub(crate) async fn delete_as_observed(
        &self,
        action: &'static str,
        lease: &Lease,
    ) -> Result<(), ShardError> {
        let name = lease.metadata.name.clone().unwrap_or_default();
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: lease.metadata.uid.clone(),
                resource_version: lease.metadata.resource_version.clone(),
            }),
            ..DeleteParams::default()
        };
        let describe = format!("{}/{name}", self.config.namespace);
        match self
            .bounded(action, &describe, self.api.delete(&name, &params))
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if error.status() == Some(404) => Ok(()),
            Err(error) => Err(error),
        }
    }

    async fn bounded<T>(
        &self,
        action: &'static str,
        lease: &str,
        request: impl Future<Output = kube::Result<T>>,
    ) -> Result<T, ShardError> {
        match tokio::time::timeout(self.limit, request).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(error)) => Err(ShardError::Api {
                action,
                lease: lease.to_owned(),
                error,
            }),
            Err(_) => Err(ShardError::Timeout {
                action,
                lease: lease.to_owned(),
                after: self.limit,
            }),
        }
    }
}

/// The identity a group Lease names (its holder), or `None` if it names none.
pub(crate) fn holder(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|spec| spec.holder_identity.as_deref())
        .filter(|holder| !holder.is_empty())
}

/// The view a group Lease publishes (empty if none), laid out by `layout`.
pub(crate) fn published_view(layout: Layout, lease: &Lease) -> View {
    lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|annotations| annotations.get(VIEW_ANNOTATION))
        .map(|view| View::parse(layout, view))
        .unwrap_or_default()
}
