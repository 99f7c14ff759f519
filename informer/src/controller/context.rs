//! What a reconcile gets beside its object: typed listers, the client, tracked writes.

use std::marker::PhantomData;
use std::sync::Arc;

use either::Either;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::Status;
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::read_your_writes::{CacheProbe, Expectation, ReadYourWrites, Written};
use super::registry::Registry;
use crate::events::{EventSpec, Published, Recorder, object_reference};
use crate::key::{ObjectKey, short_type_name};
use crate::lister::Lister;
use crate::scope::FactoryScope;
use crate::workqueue::WorkQueue;

/// What every reconcile of one controller shares.
pub(crate) struct Shared {
    pub(crate) client: Client,
    pub(crate) registry: Registry,
    pub(crate) read_your_writes: Arc<ReadYourWrites>,
    /// The primary type's name, for messages.
    pub(crate) primary: &'static str,
    pub(crate) recorder: Recorder,
    pub(crate) queue: WorkQueue<ObjectKey>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("primary", &self.primary)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}

/// The reconcile's view of the world: typed listers for every type the controller
/// registered, the client, and an [`api`](Self::api) whose writes the next reconcile
/// of the same key is guaranteed to see (read-your-writes).
///
/// Cheap to clone; one is made per reconcile, for the key being reconciled.
pub struct Context<K> {
    shared: Arc<Shared>,
    key: ObjectKey,
    _primary: PhantomData<fn() -> K>,
}

impl<K> Clone for Context<K> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            key: self.key.clone(),
            _primary: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Context<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.shared.primary)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()> + 'static> Context<K> {
    pub(crate) fn new(shared: Arc<Shared>, key: ObjectKey) -> Self {
        Self {
            shared,
            key,
            _primary: PhantomData,
        }
    }

    /// The key being reconciled.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// How many reconciles of this key failed in a row before this one (client-go's
    /// `NumRequeues`): 0 on a first attempt.
    pub fn retries(&self) -> u32 {
        self.shared.queue.num_requeues(&self.key)
    }

    /// The client the controller's informers use, for reads and writes the cache
    /// cannot serve. Writes made through it are not tracked: prefer [`api`](Self::api).
    pub fn client(&self) -> &Client {
        &self.shared.client
    }

    /// The lister of `C`: the primary type or any type registered with `owns`,
    /// `watches` or `reads`.
    ///
    /// # Panics
    /// If `C` is none of those; the message says how to register it.
    pub fn lister<C: Resource + Send + Sync + 'static>(&self) -> Lister<C> {
        self.shared
            .registry
            .expect_informer::<C>(self.shared.primary)
            .lister()
    }

    /// The `C`s that `owner` controls (their controller owner reference is `owner`),
    /// from the owner index the controller keeps on `C`: no scan, no API call.
    ///
    /// # Panics
    /// If `C` was not registered with [`owns`](super::Controller::owns).
    pub fn owned<C: Resource + Send + Sync + 'static>(&self, owner: &K) -> Vec<Arc<C>> {
        let Some(uid) = owner.meta().uid.as_deref() else {
            return Vec::new();
        };
        let (indexer, index) = self.shared.registry.expect_owned::<C>(self.shared.primary);
        indexer
            .by_index(index, uid)
            .expect("the controller added the owner index when it registered the type")
    }

    /// An [`Api`] for `C` in the reconciled object's namespace (for a namespaced
    /// `C`; cluster-scoped types ignore it), whose writes are tracked.
    pub fn api<C>(&self) -> TrackedApi<C>
    where
        C: Resource<DynamicType = ()> + 'static,
        C::Scope: FactoryScope,
    {
        self.api_in(self.key.namespace.as_deref())
    }

    /// [`api`](Self::api) in `namespace` (`None`: every namespace, for reads).
    pub fn api_in<C>(&self, namespace: Option<&str>) -> TrackedApi<C>
    where
        C: Resource<DynamicType = ()> + 'static,
        C::Scope: FactoryScope,
    {
        TrackedApi {
            api: C::Scope::api(self.shared.client.clone(), namespace),
            tracking: self.shared.registry.cache::<C>().map(|cache| Tracking {
                cache,
                reconciled: self.key.clone(),
                read_your_writes: Arc::clone(&self.shared.read_your_writes),
            }),
        }
    }

    /// The controller's event recorder (reporting as the controller's name).
    pub fn recorder(&self) -> &Recorder {
        &self.shared.recorder
    }

    /// Publishes an `events.k8s.io/v1` Event about `object` (usually the one being
    /// reconciled). Never waits for the API server; identical events fold into a
    /// series and a hot loop is held back by the spam filter (see [`crate::events`]).
    pub fn publish(&self, object: &K, event: EventSpec) -> Published {
        self.shared
            .recorder
            .publish(&object_reference(object), event)
    }
}

/// Where a tracked write is remembered.
struct Tracking {
    cache: Arc<dyn CacheProbe>,
    reconciled: ObjectKey,
    read_your_writes: Arc<ReadYourWrites>,
}

/// A [`kube::Api`] whose writes the controller remembers: the next reconcile of the
/// key that made them waits (bounded) until the informer's cache shows them, so it
/// never acts on a view older than its own writes (no duplicate child after a quick
/// requeue). Made by [`Context::api`].
///
/// Writes of a type the controller has no informer for are not tracked (there is no
/// cache to wait for); [`inner`](Self::inner) gives the plain `Api` for anything else.
pub struct TrackedApi<C> {
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

impl<C> TrackedApi<C>
where
    C: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    /// The plain `Api` (its writes are not tracked).
    pub fn inner(&self) -> &Api<C> {
        &self.api
    }

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

/// The name used in messages for the primary type `K`.
pub(crate) fn primary_name<K: 'static>() -> &'static str {
    short_type_name::<K>()
}
