//! What a reconcile gets beside its object: typed listers, the client, tracked writes.

use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::{Client, Resource};

use crate::object::Object;

use super::read_your_writes::ReadYourWrites;
use super::reasons::Reasons;
use super::registry::Registry;
use super::tracked_api::{TrackedApi, Tracking};
use crate::claim::{Fence, fenced_client};
use crate::events::{EventSpec, Published, Recorder, object_reference};
use crate::key::{ObjectKey, short_type_name};
use crate::lister::Lister;
use crate::scope::FactoryScope;
use crate::workqueue::WorkQueue;

/// What every reconcile of one controller shares: the client, the registered types,
/// the read-your-writes record, the recorder, the queue and why keys were queued,
/// and what a layer above added (a span, labels).
pub(crate) struct ControllerState {
    pub(crate) client: Client,
    pub(crate) registry: Registry,
    pub(crate) read_your_writes: Arc<ReadYourWrites>,
    /// The primary type's name, for messages.
    pub(crate) primary: &'static str,
    pub(crate) recorder: Recorder,
    pub(crate) queue: WorkQueue<ObjectKey>,
    /// Why each queued key was queued.
    pub(crate) reasons: Arc<Reasons>,
    /// The controller's name, for its spans.
    pub(crate) name: String,
    /// The span every reconcile's span is a child of (a fleet's cluster), if any.
    pub(crate) parent_span: Option<tracing::Span>,
    /// Named values a layer above gave the controller (a fleet's `cluster`).
    pub(crate) labels: Vec<(&'static str, Arc<str>)>,
}

impl std::fmt::Debug for ControllerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerState")
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
    state: Arc<ControllerState>,
    key: ObjectKey,
    /// Whether this replica may still act for the key: checked before each write.
    fence: Fence,
    /// [`Context::client`], fenced, made on first use.
    client: Arc<OnceLock<Client>>,
    /// [`Context::recorder`], fenced, made on first use.
    recorder: Arc<OnceLock<Recorder>>,
    _primary: PhantomData<fn() -> K>,
}

impl<K> Clone for Context<K> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            key: self.key.clone(),
            fence: self.fence.clone(),
            client: Arc::clone(&self.client),
            recorder: Arc::clone(&self.recorder),
            _primary: PhantomData,
        }
    }
}

impl<K> std::fmt::Debug for Context<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.state.primary)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl<K: Resource<DynamicType = ()> + 'static> Context<K> {
    pub(crate) fn new(state: Arc<ControllerState>, key: ObjectKey, fence: Fence) -> Self {
        Self {
            state,
            key,
            fence,
            client: Arc::default(),
            recorder: Arc::default(),
            _primary: PhantomData,
        }
    }

    /// The key being reconciled.
    pub fn key(&self) -> &ObjectKey {
        &self.key
    }

    /// The value of the label `name` a layer above gave the controller (a fleet's
    /// `cluster`), if any.
    pub(crate) fn label(&self, name: &str) -> Option<&str> {
        self.state
            .labels
            .iter()
            .find(|(label, _)| *label == name)
            .map(|(_, value)| &**value)
    }

    /// How many reconciles of this key failed in a row before this one (client-go's
    /// `NumRequeues`): 0 on a first attempt.
    pub fn retries(&self) -> u32 {
        self.state.queue.num_requeues(&self.key)
    }

    /// A client for reads and writes the cache cannot serve. Writes made through it
    /// are not tracked (prefer [`api`](Self::api)), but they are fenced like every
    /// write through the context: under leader election or sharding, a write is
    /// refused with [`Fenced`](super::Fenced) before it is sent once this replica may no longer act
    /// for the key (see [replicas](super#replicas-and-fencing)). Reads go through;
    /// GETs that act (`exec`, `attach`, `portforward`, `proxy`) are fenced as writes.
    pub fn client(&self) -> &Client {
        self.client
            .get_or_init(|| fenced_client(&self.state.client, self.fence.clone()))
    }

    /// The lister of `C`: the primary type or any type registered with `owns`,
    /// `watches` or `reads`.
    ///
    /// # Panics
    /// If `C` is none of those; the message says how to register it.
    pub fn lister<C: Object + Send + Sync + 'static>(&self) -> Lister<C> {
        self.state
            .registry
            .expect_informer::<C>(self.state.primary)
            .lister()
    }

    /// The `C`s that `owner` controls (their controller owner reference is `owner`),
    /// from the owner index the controller keeps on `C`: no scan, no API call. The
    /// way to read a primary's children in a reconcile.
    ///
    /// # Panics
    /// If `C` was not registered with [`owns`](super::Controller::owns).
    pub fn owned<C: Object + Send + Sync + 'static>(&self, owner: &K) -> Vec<Arc<C>> {
        let Some(uid) = owner.meta().uid.as_deref() else {
            return Vec::new();
        };
        let (indexer, index) = self.state.registry.expect_owned::<C>(self.state.primary);
        indexer
            .by_index(index, uid)
            .expect("the controller added the owner index when it registered the type")
    }

    /// An [`Api`](kube::Api) for `C` in the reconciled object's namespace (for a namespaced
    /// `C`; cluster-scoped types ignore it), whose writes are tracked.
    pub fn api<C>(&self) -> TrackedApi<C>
    where
        C: Resource<DynamicType = (), Scope: FactoryScope> + 'static,
    {
        self.api_in(self.key.namespace.as_deref())
    }

    /// [`api`](Self::api) in `namespace` (`None`: every namespace, for reads).
    pub fn api_in<C>(&self, namespace: Option<&str>) -> TrackedApi<C>
    where
        C: Resource<DynamicType = (), Scope: FactoryScope> + 'static,
    {
        TrackedApi::new(
            C::Scope::api(self.client().clone(), namespace),
            self.state.registry.cache::<C>().map(|cache| Tracking {
                cache,
                reconciled: self.key.clone(),
                read_your_writes: Arc::clone(&self.state.read_your_writes),
            }),
        )
    }

    /// An owner reference to `owner` (usually the object being reconciled) as the
    /// controller of the object it is put on: `controller` and `blockOwnerDeletion`
    /// set, as controller-runtime's `SetControllerReference` does (kube's
    /// `controller_owner_ref` leaves `blockOwnerDeletion` unset, so a foreground
    /// deletion of the owner would not wait for the child). `None` if `owner` has no
    /// name or uid (it was not read from the API server). A child carrying it is
    /// mapped back to `owner` by [`owns`](super::Controller::owns) and found by
    /// [`owned`](Self::owned).
    pub fn controller_reference(&self, owner: &K) -> Option<OwnerReference> {
        let mut reference = owner.controller_owner_ref(&())?;
        reference.block_owner_deletion = Some(true);
        Some(reference)
    }

    /// The controller's event recorder (reporting as the controller's name), fenced
    /// like every write through the context: under leader election or sharding, an
    /// event is recorded only while this replica may act for the key
    /// ([`EventError::Fenced`](crate::events::EventError::Fenced) otherwise), and its writer sends it, and the series
    /// counts it adds to, only while that still holds: what is left when the term or
    /// shard ends is dropped and counted
    /// ([`RecorderStats::fenced`](crate::events::RecorderStats::fenced)).
    pub fn recorder(&self) -> &Recorder {
        self.recorder
            .get_or_init(|| self.state.recorder.fenced(self.fence.clone()))
    }

    /// Publishes an `events.k8s.io/v1` Event about `object` (usually the one being
    /// reconciled) through the context's [`recorder`](Self::recorder). Never waits
    /// for the API server; identical events fold into a series and a hot loop is
    /// held back by the spam filter (see [`crate::events`]). Fenced like every
    /// write: once this replica may no longer act for the key, the event is not
    /// recorded ([`EventError::Fenced`](crate::events::EventError::Fenced)), and one recorded before is not sent after.
    pub fn publish(&self, object: &K, event: EventSpec) -> Published {
        self.recorder().publish(&object_reference(object), event)
    }
}

/// The name used in messages for the primary type `K`.
pub(crate) fn primary_name<K: 'static>() -> &'static str {
    short_type_name::<K>()
}
