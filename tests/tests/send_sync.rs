//! Which public types of `informer` are `Send` and `Sync`: one table, checked at
//! compile time (after tokio's `tests/async_send_sync.rs`).
//!
//! **Why.** Users keep informers, listers, queues and handles in `tokio::spawn`ed tasks
//! and in `Arc`s shared by worker threads, and `.await` the futures of their methods in
//! such tasks. A type that stops being `Send` (or `Sync`) after an innocent change to a
//! private field (an `Rc`, a `Cell`, a `Box<dyn Fn>` without `+ Send`, a guard held
//! across an `.await`) breaks those users' programs, far from the change and with an
//! error that names the library's private types. Here it breaks this file instead.
//!
//! **What is in it.** Every public struct, enum and type alias of the crate, the
//! `testenv` and `metrics` features included (this crate turns both on), and so the
//! derives' `#[doc(hidden)]` `__private` helpers too; then the trait objects the API
//! takes and hands out (`dyn KeyFilter`: what the trait's supertraits promise); then,
//! in each group, the futures of the public async functions and methods, checked by
//! value since they have no name. Grouped by module in the order of
//! `informer/src/lib.rs`. Generic types are checked at one concrete type:
//! [`ConfigMap`] for a resource, [`ObjectKey`] for a queue's item, `std::io::Error` for
//! a caller's error, `std::future::pending()` for a shutdown signal (itself
//! `Send + Sync`, so that a future is what the library makes it). Traits, functions and
//! constants are not in the table: they are neither `Send` nor not (a trait's
//! supertraits are, through its `dyn` line). The test `every_public_type_is_in_the_table`
//! reads the library's source as `tests/structure.rs` does and fails when a public
//! struct, enum or type alias has no line, or a line names none.
//!
//! **Reading a line.** Each line says what the type is, and both halves are checked:
//! `Send + Sync`, `Send + !Sync` (`Send` only), `!Send + Sync`, or `!Send + !Sync`
//! (neither). A negative is checked with the auto-trait "ambiguity" trick:
//! [`AmbiguousIfSync`] is implemented for every type, and a second time for every
//! `Sync` type, so `not_sync::<T, _>()` cannot infer its second parameter exactly when
//! `T` is `Sync` (the error is "type annotations needed", E0283, at the line). So a
//! type that gains `Sync` fails here too: harmless, update its line. A type that loses
//! `Send` or `Sync` breaks users: fix the type, or make it a decision in review and
//! change the line. A future being `Send + !Sync` is ordinary (kube's request futures
//! are not `Sync`, and nothing shares a future between threads); a future that is not
//! `Send` cannot be spawned.
//!
//! **Adding a type.** One line in its module's group, alphabetically, with what you
//! expect it to be (the compiler says so if you are wrong):
//! `assert_type!(module::Type<ConfigMap>: Send + Sync);`. A new async method: a line
//! in its group's `const _: fn(..) = |..| { .. };` block (the closure's parameters
//! stand in for values: it is type-checked, never called):
//! `assert_value!(handle.method(args) => Send + Sync);`.

#[allow(dead_code)] // Only its module tree and public paths are used here.
mod shape;

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::future::{pending, ready};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use informer::controller::{Action, LeaderElected, Sharded};
use informer::key::ObjectKey;
use informer::{
    consistency, controller, dynamic, events, factory, fifo, fleet, informable, key, leader,
    lister, metrics, projection, reflector, shard, shared_informer, store, testenv, workqueue,
};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;

// ---------------------------------------------------------------------------------------
// The checks

/// `assert_type!(T: Send + Sync)`: `T` is exactly what the line says (see the module
/// docs).
macro_rules! assert_type {
    ($ty:ty: Send + Sync) => {
        const _: () = {
            send::<$ty>();
            sync::<$ty>();
        };
    };
    ($ty:ty: Send + !Sync) => {
        const _: () = {
            send::<$ty>();
            not_sync::<$ty, _>();
        };
    };
    ($ty:ty: !Send + Sync) => {
        const _: () = {
            not_send::<$ty, _>();
            sync::<$ty>();
        };
    };
    ($ty:ty: !Send + !Sync) => {
        const _: () = {
            not_send::<$ty, _>();
            not_sync::<$ty, _>();
        };
    };
}

/// `assert_value!(expression => Send + Sync)`: the type of the expression (a future) is
/// exactly what the line says. Used in closures that are type-checked, never called.
macro_rules! assert_value {
    ($value:expr => Send + Sync) => {
        value_is_send_sync(&$value)
    };
    ($value:expr => Send + !Sync) => {
        value_is_send_not_sync(&$value)
    };
    ($value:expr => !Send + Sync) => {
        value_is_not_send_sync(&$value)
    };
    ($value:expr => !Send + !Sync) => {
        value_is_neither(&$value)
    };
}

/// Implemented for every type, and a second time (`A = Yes`) for the `Send` ones: naming
/// it with `A` left to inference is ambiguous, a compile error, exactly when the type
/// is `Send`.
trait AmbiguousIfSend<A> {}
impl<T: ?Sized> AmbiguousIfSend<()> for T {}
impl<T: ?Sized + Send> AmbiguousIfSend<Yes> for T {}

/// [`AmbiguousIfSend`] for `Sync`.
trait AmbiguousIfSync<A> {}
impl<T: ?Sized> AmbiguousIfSync<()> for T {}
impl<T: ?Sized + Sync> AmbiguousIfSync<Yes> for T {}

/// The second implementation's marker.
struct Yes;

const fn send<T: ?Sized + Send>() {}
const fn sync<T: ?Sized + Sync>() {}
const fn not_send<T: ?Sized + AmbiguousIfSend<A>, A>() {}
const fn not_sync<T: ?Sized + AmbiguousIfSync<A>, A>() {}

fn value_is_send_sync<T: ?Sized + Send + Sync>(_: &T) {}
fn value_is_send_not_sync<T: ?Sized + Send + AmbiguousIfSync<A>, A>(_: &T) {}
fn value_is_not_send_sync<T: ?Sized + AmbiguousIfSend<A> + Sync, A>(_: &T) {}
fn value_is_neither<T: ?Sized + AmbiguousIfSend<A> + AmbiguousIfSync<B>, A, B>(_: &T) {}

// The checks checked: a line of each kind, on types of `std` known to be that.
assert_type!(std::sync::Arc<()>: Send + Sync);
assert_type!(std::cell::Cell<()>: Send + !Sync);
assert_type!(std::sync::MutexGuard<'static, ()>: !Send + Sync);
assert_type!(std::rc::Rc<()>: !Send + !Sync);

const _: fn(&std::sync::Mutex<()>) = |mutex| {
    assert_value!(ready(()) => Send + Sync);
    assert_value!(ready(std::cell::Cell::new(())) => Send + !Sync);
    assert_value!(mutex.lock().unwrap() => !Send + Sync);
    assert_value!(ready(std::rc::Rc::new(())) => !Send + !Sync);
};

/// A reconcile function of a queue's runner.
fn reconcile_key(_: ObjectKey) -> std::future::Ready<Result<Action, Infallible>> {
    ready(Ok(Action::Done))
}

/// A controller's reconcile function.
fn reconcile(
    _: Arc<ConfigMap>,
    _: controller::Context<ConfigMap>,
) -> std::future::Ready<Result<Action, Infallible>> {
    ready(Ok(Action::Done))
}

/// A typed index of `ConfigMap`s, for [`store::TypedIndex`].
struct ByName;

impl store::Index<ConfigMap> for ByName {
    const NAME: &'static str = "by-name";
    type Value = String;

    fn encode(value: &String) -> std::borrow::Cow<'_, str> {
        value.into()
    }

    fn index_values(object: &ConfigMap, emit: &mut dyn FnMut(&str)) {
        if let Some(name) = &object.metadata.name {
            emit(name);
        }
    }
}

// ---------------------------------------------------------------------------------------
// testenv

assert_type!(testenv::FaultProxy: Send + Sync);
assert_type!(testenv::FaultyWatches<reflector::source::ApiListerWatcher<ConfigMap>>: Send + Sync);
assert_type!(testenv::Kubernetes: Send + Sync);
assert_type!(testenv::TestEnv: Send + Sync);
assert_type!(testenv::TestEnvBuilder: Send + Sync);
assert_type!(testenv::TestEnvError: Send + Sync);

const _: fn(testenv::TestEnvBuilder, &testenv::TestEnv, &testenv::FaultProxy) =
    |builder, env, proxy| {
        assert_value!(builder.start() => Send + !Sync);
        assert_value!(testenv::TestEnv::start() => Send + !Sync);
        assert_value!(testenv::TestEnv::shared() => Send + !Sync);
        assert_value!(env.create_namespace("ns") => Send + !Sync);
        assert_value!(env.delete_namespace("ns") => Send + !Sync);
        assert_value!(env.allow_restricted("ns", "", "configmaps", &["get"]) => Send + !Sync);
        assert_value!(env.install_crd(&CustomResourceDefinition::default()) => Send + !Sync);
        assert_value!(env.fault_proxy() => Send + Sync);
        assert_value!(env.stop_apiserver() => Send + Sync);
        assert_value!(env.start_apiserver() => Send + !Sync);
        assert_value!(env.restart_apiserver() => Send + !Sync);
        assert_value!(env.compact_etcd() => Send + Sync);
        assert_value!(proxy.disconnect() => Send + Sync);
        assert_value!(proxy.reconnect() => Send + Sync);
    };

// ---------------------------------------------------------------------------------------
// consistency

assert_type!(consistency::CheckResult: Send + Sync);
assert_type!(consistency::ConsistencyConfig: Send + Sync);
assert_type!(consistency::ConsistencyReport: Send + Sync);
assert_type!(consistency::ConsistencyStats: Send + Sync);
assert_type!(consistency::Difference: Send + Sync);
assert_type!(consistency::DifferenceKind: Send + Sync);
assert_type!(consistency::Health: Send + Sync);
assert_type!(consistency::HealthProblem: Send + Sync);
assert_type!(consistency::LastCheck: Send + Sync);
assert_type!(consistency::VerifyError: Send + Sync);

// ---------------------------------------------------------------------------------------
// controller

assert_type!(controller::Action: Send + Sync);
assert_type!(controller::Context<ConfigMap>: Send + Sync);
assert_type!(controller::Controller<ConfigMap>: Send + !Sync);
assert_type!(controller::Controller<ConfigMap, LeaderElected>: Send + !Sync);
assert_type!(controller::Controller<ConfigMap, Sharded>: Send + !Sync);
assert_type!(controller::ControllerError: Send + Sync);
assert_type!(controller::Fenced: Send + Sync);
assert_type!(controller::IfUnchanged<'static, ConfigMap>: Send + Sync);
assert_type!(controller::LeaderElected: Send + Sync);
assert_type!(controller::Predicate<ConfigMap>: Send + Sync);
assert_type!(controller::Retry: Send + Sync);
assert_type!(controller::Sharded: Send + Sync);
assert_type!(controller::Single: Send + Sync);
assert_type!(controller::TrackedApi<ConfigMap>: Send + Sync);

const _: fn(controller::Controller<ConfigMap>) = |controller| {
    let policy = controller::backoff::<ConfigMap, Infallible>;
    assert_value!(controller.run(reconcile, policy, pending::<()>()) => Send + !Sync);
};

const _: fn(controller::Controller<ConfigMap, LeaderElected>) = |controller| {
    let policy = controller::backoff::<ConfigMap, Infallible>;
    assert_value!(controller.run(reconcile, policy, pending::<()>()) => Send + !Sync);
};

const _: fn(controller::Controller<ConfigMap, Sharded>) = |controller| {
    let policy = controller::backoff::<ConfigMap, Infallible>;
    assert_value!(controller.run(reconcile, policy, pending::<()>()) => Send + !Sync);
};

const _: fn(&controller::TrackedApi<ConfigMap>, &ConfigMap) = |api, object| {
    let patch = Patch::Merge(serde_json::Value::Null);
    let (post, patch_params) = (PostParams::default(), PatchParams::default());
    assert_value!(api.create(&post, object) => Send + !Sync);
    assert_value!(api.replace("name", &post, object) => Send + !Sync);
    assert_value!(api.patch("name", &patch_params, &patch) => Send + !Sync);
    assert_value!(api.patch_status("name", &patch_params, &patch) => Send + !Sync);
    assert_value!(api.delete("name", &DeleteParams::default()) => Send + !Sync);
    let unchanged = api.if_unchanged(object);
    assert_value!(unchanged.replace(&post, object) => Send + !Sync);
    assert_value!(unchanged.patch(&patch_params, &patch) => Send + !Sync);
    assert_value!(unchanged.patch_status(&patch_params, &patch) => Send + !Sync);
    assert_value!(unchanged.delete(&DeleteParams::default()) => Send + !Sync);
};

// ---------------------------------------------------------------------------------------
// dynamic

assert_type!(dynamic::DiscoveryError: Send + Sync);
assert_type!(dynamic::DynamicResource: Send + Sync);
assert_type!(dynamic::JsonPathError: Send + Sync);
assert_type!(dynamic::JsonPathIndex: Send + Sync);

const _: fn(&kube::Client, &GroupVersionKind) = |client, gvk| {
    assert_value!(dynamic::DynamicResource::discover(client, gvk) => Send + !Sync);
};

// ---------------------------------------------------------------------------------------
// events

assert_type!(events::EventError: Send + Sync);
assert_type!(events::EventSpec: Send + Sync);
assert_type!(events::EventType: Send + Sync);
assert_type!(events::Published: Send + Sync);
assert_type!(events::Recorder: Send + Sync);
assert_type!(events::RecorderConfig: Send + Sync);
assert_type!(events::RecorderStats: Send + Sync);
assert_type!(events::Reporter: Send + Sync);

const _: fn(&events::Recorder) = |recorder| {
    assert_value!(recorder.shutdown() => Send + Sync);
};

// ---------------------------------------------------------------------------------------
// factory

assert_type!(factory::CacheSyncError: Send + Sync);
assert_type!(factory::FactoryConfig: Send + Sync);
assert_type!(factory::Selection: Send + Sync);
assert_type!(factory::ByObject<k8s_openapi::api::core::v1::ConfigMap>: Send + Sync);

assert_type!(factory::SharedInformerFactory: Send + Sync);
assert_type!(factory::Unsynced: Send + Sync);

const _: fn(&factory::SharedInformerFactory) = |factory| {
    assert_value!(factory.wait_for_cache_sync() => Send + !Sync);
    assert_value!(factory.wait_for_cache_sync_within(Duration::from_secs(1)) => Send + !Sync);
    assert_value!(factory.shutdown() => Send + Sync);
};

// ---------------------------------------------------------------------------------------
// fifo

assert_type!(fifo::DeletedFinalStateUnknown<ConfigMap>: Send + Sync);
assert_type!(fifo::DeletedObject<ConfigMap>: Send + Sync);
assert_type!(fifo::Delta<ConfigMap>: Send + Sync);
assert_type!(fifo::DeltaFifo<ConfigMap>: Send + Sync);
assert_type!(fifo::DeltaFifoConfig<ConfigMap>: Send + Sync);
assert_type!(fifo::DeltaType: Send + Sync);
assert_type!(fifo::Deltas<ConfigMap>: Send + Sync);
assert_type!(fifo::PopError<std::io::Error>: Send + Sync);
assert_type!(fifo::ProcessError<std::io::Error>: Send + Sync);
assert_type!(fifo::RealFifo<ConfigMap>: Send + Sync);
assert_type!(fifo::RealFifoConfig<ConfigMap>: Send + Sync);
assert_type!(dyn fifo::KnownObjects<ConfigMap>: Send + Sync);

const _: fn(&fifo::DeltaFifo<ConfigMap>, &fifo::RealFifo<ConfigMap>) = |delta, real| {
    let process = |_: &fifo::Deltas<ConfigMap>| Ok::<_, fifo::ProcessError<Infallible>>(());
    assert_value!(delta.pop(process) => Send + Sync);
    assert_value!(real.pop(|_| Ok::<_, Infallible>(())) => Send + Sync);
};

// ---------------------------------------------------------------------------------------
// fleet

assert_type!(fleet::Cluster: Send + Sync);
assert_type!(fleet::ClusterConfig: Send + Sync);
assert_type!(fleet::ClusterSet: Send + Sync);
assert_type!(fleet::ClusterSet<fleet::ShardedByCluster>: Send + Sync);
assert_type!(fleet::FleetController<ConfigMap>: Send + Sync);
assert_type!(fleet::FleetError: Send + Sync);
assert_type!(fleet::FleetInformer<ConfigMap>: Send + Sync);
assert_type!(fleet::InCluster<Arc<ConfigMap>>: Send + Sync);
assert_type!(fleet::KubeconfigError: Send + Sync);
assert_type!(fleet::KubeconfigSecrets: Send + Sync);
assert_type!(fleet::Kubeconfigs: Send + Sync);
assert_type!(fleet::Membership: Send + Sync);
assert_type!(fleet::MembershipChanges: Send + Sync);
assert_type!(fleet::Rejected: Send + Sync);
assert_type!(fleet::ShardedByCluster: Send + Sync);
assert_type!(fleet::Unsharded: Send + Sync);
assert_type!(dyn fleet::ClusterProvider: Send + !Sync);

const _: fn(
    &fleet::Cluster,
    &fleet::ClusterSet,
    &fleet::ClusterSet<fleet::ShardedByCluster>,
    &mut fleet::MembershipChanges,
    fleet::FleetController<ConfigMap>,
) = |cluster, set, sharded_set, changes, controller| {
    assert_value!(cluster.retired() => Send + Sync);
    assert_value!(set.run(pending::<()>()) => Send + !Sync);
    assert_value!(sharded_set.run(pending::<()>()) => Send + !Sync);
    assert_value!(set.wait_until(|names| !names.is_empty()) => Send + Sync);
    assert_value!(changes.changed() => Send + Sync);
    let policy = controller::backoff::<ConfigMap, Infallible>;
    assert_value!(controller.run(reconcile, policy, pending::<()>()) => Send + !Sync);
};

// ---------------------------------------------------------------------------------------
// informable (the derive's hidden helpers)

assert_type!(informable::__private::Step<'static, ConfigMap, informable::__private::Keys>: Send + Sync);
assert_type!(informable::__private::Keys: Send + Sync);
assert_type!(informable::__private::Check: Send + Sync);
assert_type!(informable::__private::CompactFields<'static>: Send + Sync);

// ---------------------------------------------------------------------------------------
// key

assert_type!(key::KeyError: Send + Sync);
assert_type!(key::KeyFn<ConfigMap>: Send + Sync);
assert_type!(key::ObjectKey: Send + Sync);
assert_type!(key::ObjectKeyRef<'static>: Send + Sync);

// ---------------------------------------------------------------------------------------
// leader

assert_type!(leader::LeaderElectionConfig: Send + Sync);
assert_type!(leader::LeaderElector: Send + Sync);
assert_type!(leader::LeaderError: Send + Sync);
assert_type!(leader::Leadership: Send + Sync);
assert_type!(leader::LeadershipHandle: Send + Sync);
assert_type!(leader::LeaseTimings: Send + Sync);
assert_type!(leader::Term: Send + Sync);

const _: fn(leader::LeaderElector, &mut leader::LeadershipHandle, &leader::Term) =
    |elector, handle, term| {
        assert_value!(term.lost() => Send + Sync);
        assert_value!(handle.leading() => Send + Sync);
        assert_value!(handle.changed() => Send + Sync);
        assert_value!(elector.run(pending::<()>()) => Send + !Sync);
    };

// ---------------------------------------------------------------------------------------
// lister

assert_type!(lister::Lister<ConfigMap>: Send + Sync);
assert_type!(lister::LookupError: Send + Sync);
assert_type!(lister::NamespaceLister<ConfigMap>: Send + Sync);

// ---------------------------------------------------------------------------------------
// metrics

assert_type!(metrics::Metrics: Send + Sync);
assert_type!(metrics::WorkqueueMetrics: Send + Sync);

// ---------------------------------------------------------------------------------------
// projection (shared values, and the derive's hidden helpers)

assert_type!(projection::Shared<String>: Send + Sync);
assert_type!(projection::SharedSize: Send + Sync);
assert_type!(projection::CompactMeta: Send + Sync);

assert_type!(projection::__private::FieldKey<'static, 1>: Send + Sync);
assert_type!(projection::__private::FieldSpec: Send + Sync);
assert_type!(projection::__private::Layout<1>: Send + Sync);
assert_type!(projection::__private::Leaf<'static, ConfigMap>: Send + Sync);
assert_type!(projection::__private::Read<String>: Send + Sync);
assert_type!(projection::__private::SlimMeta<true>: Send + Sync);

// ---------------------------------------------------------------------------------------
// reflector

assert_type!(reflector::BackoffConfig: Send + Sync);
assert_type!(reflector::Config: Send + Sync);
assert_type!(reflector::ControlledBy<ConfigMap>: Send + Sync);
assert_type!(reflector::DecodeError: Send + Sync);
assert_type!(reflector::FnKeyFilter: Send + Sync);
assert_type!(reflector::ObjectHead<'static>: Send + Sync);
assert_type!(reflector::OwnerHead<'static>: Send + Sync);
assert_type!(reflector::Phase: Send + Sync);
assert_type!(reflector::Reflector<ConfigMap>: Send + Sync);
assert_type!(reflector::ReflectorError: Send + Sync);
assert_type!(reflector::RunError: Send + Sync);
assert_type!(reflector::ShardField: Send + Sync);
assert_type!(reflector::ShardSelector: Send + Sync);
assert_type!(reflector::SharedKeyFilter: Send + Sync);
assert_type!(reflector::ShouldResync: Send + Sync);
assert_type!(reflector::StatsSnapshot: Send + Sync);
assert_type!(reflector::SyncError: Send + Sync);
assert_type!(reflector::WatchErrorHandler: Send + Sync);
assert_type!(dyn reflector::CachedObjects<ConfigMap>: Send + Sync);
assert_type!(dyn reflector::KeyFilter: Send + Sync);
assert_type!(dyn reflector::ReflectorMetrics: Send + Sync);
assert_type!(dyn reflector::ReflectorStore<ConfigMap>: Send + Sync);

const _: fn(&reflector::Reflector<ConfigMap>) = |reflector| {
    assert_value!(reflector.run(pending::<()>()) => Send + !Sync);
};

// ---------------------------------------------------------------------------------------
// reflector::source

assert_type!(reflector::source::ApiListerWatcher<ConfigMap>: Send + Sync);
assert_type!(reflector::source::Capabilities: Send + Sync);
assert_type!(reflector::source::DecodedSizes: Send + Sync);
assert_type!(reflector::source::FakeSource<ConfigMap>: Send + Sync);
assert_type!(reflector::source::ListOptions: Send + Sync);
assert_type!(reflector::source::ListPage<ConfigMap>: Send + Sync);
assert_type!(reflector::source::ListRequest: Send + Sync);
assert_type!(reflector::source::ListWatch<ConfigMap>: Send + Sync);
assert_type!(reflector::source::ManagedFields: Send + Sync);
assert_type!(reflector::source::ObjectVersion: Send + Sync);
assert_type!(reflector::source::WatchEvent<ConfigMap>: Send + Sync);
assert_type!(reflector::source::WatchRequest: Send + Sync);
assert_type!(reflector::source::WatchStream<ConfigMap>: Send + !Sync);
assert_type!(dyn reflector::source::ListerWatcher<ConfigMap>: Send + Sync);
assert_type!(dyn reflector::source::VersionSource: Send + Sync);

// ---------------------------------------------------------------------------------------
// scope: traits only.

// ---------------------------------------------------------------------------------------
// shard

assert_type!(shard::ShardBy: Send + Sync);
assert_type!(shard::ShardConfig: Send + Sync);
assert_type!(shard::ShardError: Send + Sync);
assert_type!(shard::ShardHandle: Send + Sync);
assert_type!(shard::ShardMember: Send + Sync);
assert_type!(shard::ShardStats: Send + Sync);

const _: fn(shard::ShardMember, &mut shard::ShardHandle) = |member, handle| {
    assert_value!(handle.changed() => Send + Sync);
    assert_value!(member.run(pending::<()>()) => Send + !Sync);
};

// ---------------------------------------------------------------------------------------
// shared_informer

assert_type!(shared_informer::CacheSize: Send + Sync);
assert_type!(shared_informer::InformerError: Send + Sync);
assert_type!(shared_informer::InformerConfig<ConfigMap>: Send + Sync);
assert_type!(shared_informer::ListenerStats: Send + Sync);
assert_type!(shared_informer::Notification<ConfigMap>: Send + Sync);
assert_type!(shared_informer::QueueKind: Send + Sync);
assert_type!(shared_informer::Registration<ConfigMap>: Send + Sync);
assert_type!(shared_informer::ResourceEventHandlerFns<ConfigMap>: Send + !Sync);
assert_type!(shared_informer::SharedIndexInformer<ConfigMap>: Send + Sync);
assert_type!(shared_informer::Subscription<ConfigMap>: Send + Sync);
assert_type!(shared_informer::Transform<ConfigMap>: Send + Sync);
assert_type!(dyn shared_informer::HasSynced: Send + Sync);
assert_type!(dyn shared_informer::ResourceEventHandler<ConfigMap>: Send + !Sync);

const _: fn(
    &shared_informer::SharedIndexInformer<ConfigMap>,
    &shared_informer::Registration<ConfigMap>,
) = |informer, registration| {
    assert_value!(informer.run(pending::<()>()) => Send + !Sync);
    assert_value!(informer.verify() => Send + !Sync);
    assert_value!(registration.remove_and_wait() => Send + Sync);
    let both: [&dyn shared_informer::HasSynced; 2] = [informer, registration];
    assert_value!(shared_informer::wait_for_cache_sync(&both) => Send + !Sync);
};

// ---------------------------------------------------------------------------------------
// store

assert_type!(store::IndexedField<'static>: Send + Sync);
assert_type!(store::Indexer<ConfigMap>: Send + Sync);
assert_type!(store::Indexers<ConfigMap>: Send + Sync);
assert_type!(store::Operator: Send + Sync);
assert_type!(store::Requirement: Send + Sync);
assert_type!(store::Selector: Send + Sync);
assert_type!(store::SelectorError: Send + Sync);
assert_type!(store::StoreError: Send + Sync);
assert_type!(store::TypedIndex<ByName>: Send + Sync);
assert_type!(store::Writer<ConfigMap>: Send + Sync);
assert_type!(dyn store::IndexFunc<ConfigMap>: Send + Sync);

// ---------------------------------------------------------------------------------------
// workqueue

assert_type!(workqueue::BucketRateLimiter: Send + Sync);
assert_type!(workqueue::DurationStats: Send + Sync);
assert_type!(workqueue::InMemoryMetrics: Send + Sync);
assert_type!(workqueue::ItemExponentialFailureRateLimiter<ObjectKey>: Send + Sync);
assert_type!(workqueue::ItemFastSlowRateLimiter<ObjectKey>: Send + Sync);
assert_type!(workqueue::MaxOfRateLimiter<ObjectKey>: Send + Sync);
assert_type!(workqueue::MetricsSnapshot: Send + Sync);
assert_type!(workqueue::Priority: Send + Sync);
assert_type!(workqueue::QueueConfig: Send + Sync);
assert_type!(workqueue::Runner<ObjectKey>: Send + Sync);
assert_type!(workqueue::RunnerConfig: Send + Sync);
assert_type!(workqueue::UnfinishedWork: Send + Sync);
assert_type!(workqueue::WorkQueue<ObjectKey>: Send + Sync);
assert_type!(dyn workqueue::QueueMetrics: Send + Sync);
assert_type!(dyn workqueue::RateLimiter<ObjectKey>: Send + Sync);

const _: fn(&workqueue::WorkQueue<ObjectKey>, workqueue::Runner<ObjectKey>) = |queue, runner| {
    assert_value!(queue.get() => Send + Sync);
    assert_value!(queue.get_with_priority() => Send + Sync);
    assert_value!(queue.shutdown_with_drain() => Send + Sync);
    assert_value!(runner.run_until(reconcile_key, pending::<()>(), pending::<()>()) => Send + Sync);
    assert_value!(runner.run(reconcile_key, pending::<()>()) => Send + Sync);
};

// ---------------------------------------------------------------------------------------
// The crate root: `shutdown_signal`, a function.

const _: fn() = || {
    assert_value!(informer::shutdown_signal() => Send + Sync);
};

// ---------------------------------------------------------------------------------------
// The table is complete

/// Every public struct, enum and type alias of the library (read from its source, as
/// `tests/structure.rs` reads it) has a line in the table above, and every line names
/// one of them.
#[test]
fn every_public_type_is_in_the_table() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../informer/src");
    let krate = shape::tree::Crate::read(&src);
    let public = shape::paths::PublicPaths::of(&krate);
    let mut types = BTreeSet::new();
    for (target, paths) in &public.items {
        let shape::tree::Target::Item { module, name } = target else {
            continue;
        };
        let file = &krate.modules[module].items[name].file;
        let source = std::fs::read_to_string(file).expect("the library's source");
        let parsed = syn::parse_file(&source).expect("the library parses");
        if is_type(&parsed.items, name) {
            types.extend(
                paths
                    .iter()
                    .filter(|p| !p.starts_with("prelude::"))
                    .cloned(),
            );
        }
    }
    let table_source = include_str!("send_sync.rs");
    let table: BTreeSet<String> = table_source
        .lines()
        .filter_map(|line| line.strip_prefix("assert_type!("))
        .filter(|rest| !rest.starts_with("dyn ") && !rest.starts_with("std::"))
        .map(|rest| {
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            path.trim_end_matches(':').to_owned()
        })
        .collect();
    let missing: Vec<_> = types.difference(&table).collect();
    let unknown: Vec<_> = table.difference(&types).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "public types without a line in the table: {missing:?}; lines naming no public \
         type: {unknown:?}"
    );
}

/// Whether `name` is a struct, enum or type alias among `items` (or their inline
/// modules).
fn is_type(items: &[syn::Item], name: &str) -> bool {
    items.iter().any(|item| match item {
        syn::Item::Struct(item) => item.ident == name,
        syn::Item::Enum(item) => item.ident == name,
        syn::Item::Type(item) => item.ident == name,
        syn::Item::Mod(module) => module
            .content
            .as_ref()
            .is_some_and(|(_, items)| is_type(items, name)),
        _ => false,
    })
}
