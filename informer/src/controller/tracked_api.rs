//! [`TrackedApi`]: the writes of a reconcile, fenced (sent only while this replica may
//! act for the key) and remembered for read-your-writes; and
//! [`IfUnchanged`], the same writes made conditional on the state they were computed
//! from, so that the API server refuses a write from a stale view.

use std::sync::Arc;

use either::Either;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::Status;
use kube::{Api, Resource};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::read_your_writes::{CacheProbe, Expectation, ReadYourWrites, Written};
use crate::key::ObjectKey;
use crate::object::{Meta, Object};
use crate::projection::ProjectionOf;

/// Where a tracked write is remembered.
pub(crate) struct Tracking {
    pub(crate) cache: Arc<dyn CacheProbe>,
    pub(crate) reconciled: ObjectKey,
    pub(crate) read_your_writes: Arc<ReadYourWrites>,
}

/// A [`kube::Api`] whose writes the controller remembers: the next reconcile of the
/// key that made them waits (bounded) until the informer's cache shows them, so it
/// never acts on a view older than its own writes (no duplicate child after a quick
/// requeue). Made by [`Context::api`](super::Context::api).
///
/// Writes of a type the controller has no informer for are not tracked (there is no
/// cache to wait for); [`inner`](Self::inner) gives the plain `Api` for anything else.
pub struct TrackedApi<C> {
    /// On the context's client: its writes are fenced there.
    api: Api<C>,
    tracking: Option<Tracking>,
}

impl<C: Resource> std::fmt::Debug for TrackedApi<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedApi")
            .field("url", &self.api.resource_url())
            .field("tracked", &self.tracking.is_some())
            .finish()
    }
}

impl<C> TrackedApi<C> {
    pub(crate) fn new(api: Api<C>, tracking: Option<Tracking>) -> Self {
        Self { api, tracking }
    }
}

impl<C> TrackedApi<C>
where
    C: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    /// Writes to the object `seen` (as this reconcile read it, from the cache),
    /// each conditional on the object being unchanged since: the API server refuses
    /// the write with 409 Conflict when the object's `resourceVersion` has moved, so
    /// a write computed from a stale view never overwrites newer state. This is the
    /// fencing the server enforces, for writes that must hold even when a request
    /// was already on its way while this replica lost its term or lease (a process
    /// paused mid-request resumes and sends it): see
    /// [replicas and fencing](super#replicas-and-fencing). The writes are tracked
    /// and fenced like the others.
    ///
    /// A conflict is an ordinary error for the error policy: the next reconcile
    /// reads the newer state.
    ///
    /// ```no_run
    /// # use std::sync::Arc;
    /// # use informer::controller::Context;
    /// # use informer::controller::Action;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube::api::{Patch, PatchParams};
    /// # async fn reconcile(cm: Arc<ConfigMap>, ctx: Context<ConfigMap>) -> Result<Action, kube::Error> {
    /// let status = serde_json::json!({ "data": { "seen": "yes" } });
    /// ctx.api::<ConfigMap>()
    ///     .if_unchanged(&cm)
    ///     .patch(&PatchParams::default(), &Patch::Merge(&status))
    ///     .await?;
    /// # Ok(Action::Done)
    /// # }
    /// ```
    pub fn if_unchanged(&self, seen: &C) -> IfUnchanged<'_, C> {
        self.if_unchanged_at(seen.meta())
    }

    /// [`if_unchanged`](Self::if_unchanged) from a [projection](crate::projection) of
    /// `C` read from a cache (`Arc<PodView>` for writes to `Pod`): the write is
    /// conditional on the projection's `resourceVersion` (and `uid`), which are the
    /// object's, so a write computed from the fields the projection holds never
    /// overwrites a newer state of the whole object.
    pub fn if_unchanged_from<P>(&self, seen: &Arc<P>) -> IfUnchanged<'_, C>
    where
        P: Object + ProjectionOf<C>,
    {
        self.if_unchanged_at(seen.metadata())
    }

    fn if_unchanged_at(&self, meta: &impl Meta) -> IfUnchanged<'_, C> {
        IfUnchanged {
            api: self,
            name: meta.name().map(str::to_owned),
            uid: meta.uid().map(str::to_owned),
            resource_version: meta.resource_version().map(str::to_owned),
        }
    }

    /// The plain `Api` (its writes are not tracked, but fenced: see
    /// [`Context::client`](super::Context::client)).
    pub fn inner(&self) -> &Api<C> {
        &self.api
    }

    /// Patches the object `name`.
    pub async fn patch<P: Serialize + std::fmt::Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        let patched = self.api.patch(name, params, patch).await?;
        self.track_written(&patched);
        Ok(patched)
    }

    /// Patches the status subresource of the object `name`.
    pub async fn patch_status<P: Serialize + std::fmt::Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        let patched = self.api.patch_status(name, params, patch).await?;
        self.track_written(&patched);
        Ok(patched)
    }

    /// Deletes the object `name`: the object (deletion pending on finalizers) or the
    /// server's status (deleted). Either way the next reconcile waits for the cache to
    /// show it.
    pub async fn delete(
        &self,
        name: &str,
        params: &DeleteParams,
    ) -> kube::Result<Either<C, Status>> {
        let deleted = self.api.delete(name, params).await?;
        if let Some(tracking) = &self.tracking {
            let key = ObjectKey::new(self.api.namespace().map(str::to_owned), name);
            let version = deleted
                .as_ref()
                .left()
                .and_then(|object| object.meta().resource_version.clone());
            tracking.record(key, Written::Deleted(version));
        }
        Ok(deleted)
    }

    fn track_written(&self, object: &C) {
        let meta = object.meta();
        let (Some(tracking), Some(version)) = (&self.tracking, &meta.resource_version) else {
            return;
        };
        if !tracking.cache.holds(meta) {
            // A filtered cache (a sharded controller's) never shows it.
            return;
        }
        // An object being deleted may be gone at any moment (removing its last
        // finalizer deletes it at once): gone counts as caught up.
        let written = if meta.deletion_timestamp.is_some() {
            Written::Deleted(Some(version.clone()))
        } else {
            Written::AtLeast(version.clone())
        };
        tracking.record(ObjectKey::of(object), written);
    }
}

// Writes of whole objects need a type that serializes (a projection does not).
impl<C> TrackedApi<C>
where
    C: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    /// Creates `object`.
    pub async fn create(&self, params: &PostParams, object: &C) -> kube::Result<C> {
        let created = self.api.create(params, object).await?;
        self.track_written(&created);
        Ok(created)
    }

    /// Replaces the object `name` with `object` (optimistic concurrency on its
    /// resourceVersion).
    pub async fn replace(&self, name: &str, params: &PostParams, object: &C) -> kube::Result<C> {
        let replaced = self.api.replace(name, params, object).await?;
        self.track_written(&replaced);
        Ok(replaced)
    }
}

impl Tracking {
    fn record(&self, key: ObjectKey, written: Written) {
        tracing::trace!(reconciled = %self.reconciled, written = %key, ?written, "tracking a write");
        self.read_your_writes.record(
            &self.reconciled,
            Expectation {
                cache: Arc::clone(&self.cache),
                key,
                written,
            },
        );
    }
}

/// Writes made conditional on the object being unchanged since it was read; made by
/// [`TrackedApi::if_unchanged`].
pub struct IfUnchanged<'a, C> {
    api: &'a TrackedApi<C>,
    name: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
}

impl<C: Resource> std::fmt::Debug for IfUnchanged<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IfUnchanged")
            .field("api", self.api)
            .field("name", &self.name)
            .field("resource_version", &self.resource_version)
            .finish_non_exhaustive()
    }
}

impl<C> IfUnchanged<'_, C>
where
    C: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    /// Patches the object, if unchanged: a merge, strategic merge or server-side
    /// apply patch, sent with the read `metadata.resourceVersion`, which the server
    /// takes as a precondition. Other patch kinds are refused (unsent) with an error
    /// saying so.
    pub async fn patch<P: Serialize + std::fmt::Debug>(
        &self,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        let (name, patch) = self.conditional(patch)?;
        self.api.patch(name, params, &patch).await
    }

    /// Patches the status subresource of the object, if unchanged (as
    /// [`patch`](Self::patch)).
    pub async fn patch_status<P: Serialize + std::fmt::Debug>(
        &self,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> kube::Result<C> {
        let (name, patch) = self.conditional(patch)?;
        self.api.patch_status(name, params, &patch).await
    }

    /// Deletes the object, if unchanged: preconditions on the read `uid` and
    /// `resourceVersion` (a deletion of the object re-created under the same name is
    /// refused too).
    pub async fn delete(&self, params: &DeleteParams) -> kube::Result<Either<C, Status>> {
        let (name, version) = self.read()?;
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: Some(version.to_owned()),
                uid: self.uid.clone(),
            }),
            ..params.clone()
        };
        self.api.delete(name, &params).await
    }

    /// The read name and resourceVersion; an error when the object carried none
    /// (it was not read from the API server).
    fn read(&self) -> kube::Result<(&str, &str)> {
        match (&self.name, &self.resource_version) {
            (Some(name), Some(version)) => Ok((name, version)),
            _ => Err(not_sent(
                "if_unchanged needs an object read from the API server (with a name and a resourceVersion)",
            )),
        }
    }

    /// `patch` as JSON with the read resourceVersion set, and the name to patch.
    fn conditional<P: Serialize>(
        &self,
        patch: &Patch<P>,
    ) -> kube::Result<(&str, Patch<serde_json::Value>)> {
        let (name, version) = self.read()?;
        let with_version = |body: &P| -> kube::Result<serde_json::Value> {
            let mut body = serde_json::to_value(body).map_err(kube::Error::SerdeError)?;
            let Some(object) = body.as_object_mut() else {
                return Err(not_sent("a conditional patch must be a JSON object"));
            };
            let metadata = object
                .entry("metadata")
                .or_insert_with(|| serde_json::json!({}));
            let Some(metadata) = metadata.as_object_mut() else {
                return Err(not_sent("the patch's metadata must be a JSON object"));
            };
            metadata.insert("resourceVersion".to_owned(), version.into());
            Ok(body)
        };
        let patch = match patch {
            Patch::Merge(body) => Patch::Merge(with_version(body)?),
            Patch::Strategic(body) => Patch::Strategic(with_version(body)?),
            Patch::Apply(body) => Patch::Apply(with_version(body)?),
            _ => {
                return Err(not_sent(
                    "if_unchanged supports merge, strategic merge and apply patches (a JSON patch can carry its own `test` of /metadata/resourceVersion)",
                ));
            }
        };
        Ok((name, patch))
    }
}

impl<C> IfUnchanged<'_, C>
where
    C: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    /// Replaces the object with `object`, if unchanged: `object` is sent with the
    /// read `resourceVersion`, whatever it carries.
    pub async fn replace(&self, params: &PostParams, object: &C) -> kube::Result<C> {
        let (name, version) = self.read()?;
        let mut object = object.clone();
        object.meta_mut().resource_version = Some(version.to_owned());
        self.api.replace(name, params, &object).await
    }
}

/// A conditional write that could not be made, unsent.
#[derive(Debug, thiserror::Error)]
#[error("conditional write not sent: {0}")]
struct NotSent(&'static str);

fn not_sent(why: &'static str) -> kube::Error {
    kube::Error::Service(Box::new(NotSent(why)))
}
