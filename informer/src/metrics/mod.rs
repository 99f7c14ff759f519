//! Prometheus metrics (feature `metrics`), built on the
//! [`prometheus-client`](prometheus_client) crate: what a controller's `/metrics`
//! endpoint serves.
//!
//! [`Metrics::new`] registers every family below into your
//! [`Registry`]. Hand the [`Metrics`] to a
//! factory with [`FactoryConfig::metrics`](crate::factory::FactoryConfig::metrics)
//! and its informers are observed, and every [`Controller`](crate::controller::Controller)
//! built on that factory reports its queue and its reconciles. Then encode the registry
//! on each scrape (`prometheus_client::encoding::text::encode`), from whichever HTTP
//! server you already run.
//!
//! **Workqueue**, labelled `name` (a controller's queue is named after the
//! controller), with client-go's names, meaning and buckets:
//! `workqueue_depth`, `workqueue_adds_total`, `workqueue_queue_duration_seconds`,
//! `workqueue_work_duration_seconds`, `workqueue_unfinished_work_seconds`,
//! `workqueue_longest_running_processor_seconds`, `workqueue_retries_total`. A queue
//! of your own reports them once given [`Metrics::workqueue`]'s series through
//! [`QueueConfig::metrics`](crate::workqueue::QueueConfig::metrics).
//!
//! **Controller**, labelled `controller`, named as controller-runtime names them:
//! `controller_runtime_reconcile_total` (by `result`: `success`, `requeue_after`,
//! `error`), `controller_runtime_reconcile_errors_total`,
//! `controller_runtime_reconcile_panics_total`,
//! `controller_runtime_reconcile_time_seconds`, `controller_runtime_active_workers`,
//! `controller_runtime_max_concurrent_reconciles`, `controller_runtime_reconcile_timeouts_total`
//! (reconciles cancelled by [`Controller::reconcile_timeout`](crate::controller::Controller::reconcile_timeout)).
//! A reconcile whose error the error policy answers with a delay still counts as an
//! `error`. Ours beside them: `informer_controller_read_your_writes_waits_total` (by
//! `result`: `caught_up`, `timed_out`), the reconciles that first waited for the
//! cache to show the controller's own earlier writes of the key
//! ([read-your-writes](crate::controller#read-your-writes)): where KEP-5647's
//! controllers skip a sync on a stale cache and count it in `stale_sync_skips_total`,
//! ours waits, and counts the wait.
//!
//! **Informers and their reflectors**, labelled `informer` (the factory's name for it:
//! `ConfigMap in default`, named by the resource; an informer of a
//! [projection](crate::projection) has a `projection` label too, its Rust type, so
//! that two informers of Pods stay apart): `informer_cached_objects`,
//! `informer_cache_objects` and `informer_cache_bytes` (the objects, and the bytes
//! they are estimated to hold: see
//! [`SharedIndexInformer::cache_size`](crate::shared_informer::SharedIndexInformer::cache_size);
//! the [shared values](crate::projection::Shared) of the whole process, counted once
//! each, are the unlabelled `informer_shared_values` and
//! `informer_shared_values_bytes`), `informer_synced`,
//! `informer_store_resource_version` (client-go 1.36's name and meaning, keyed by our
//! `informer` label where client-go's are `name`, `group`, `version`, `resource`: see
//! [`SharedIndexInformer::store_resource_version`](crate::shared_informer::SharedIndexInformer::store_resource_version)),
//! `informer_queued_items` (what the queue holds for the process loop: changes for the
//! in-order queue, keys for the per-key one, as client-go counts its two queues) and
//! `informer_processing_latency_seconds` (client-go's buckets; one observation per
//! popped batch, as client-go's batch processing observes, of the time to write it to
//! the cache and hand it to the handlers' buffers, which never wait for a handler: a
//! slow handler shows in `informer_handler_pending`, not here), both with client-go
//! 1.36's names and meaning under our labels,
//! `informer_handlers`, `informer_handler_pending` (notifications buffered, summed over
//! handlers), `informer_handler_pending_peak`, `informer_handler_panics_total`;
//! `informer_reflector_lists_total`, `informer_reflector_list_items_total`,
//! `informer_reflector_watches_total`, `informer_reflector_short_watches_total`,
//! `informer_reflector_watch_events_total`, `informer_reflector_errors_total`,
//! `informer_reflector_relists_after_expired_total` (410 Gone),
//! `informer_reflector_filtered_out_total` and
//! `informer_reflector_relists_after_filter_change_total` (a
//! [`KeyFilter`](crate::reflector::KeyFilter) skipped objects, or changed),
//! `informer_reflector_sync_failures` (failed lists in a row) and
//! `informer_reflector_last_resource_version_age_seconds`; for an informer with
//! [consistency checks](crate::consistency), `informer_consistency_checks_total` (by
//! `result`: `consistent`, `inconsistent`, `skipped`, `error`),
//! `informer_consistency_differences_total` (each difference counted once),
//! `informer_consistency_heals_total` and `informer_staleness_seconds`. These are read from the
//! counters every informer keeps anyway, at scrape time: observing an informer costs
//! nothing between scrapes, and does not keep a dropped informer alive.
//!
//! **Leader election**, labelled `name` (the Lease's name), with client-go's names:
//! `leader_election_master_status` (1 while this replica leads) and
//! `leader_election_slowpath_total` (renewals that had to read the Lease first), and
//! ours, `informer_leader_dropped_reconciles_total` and
//! `informer_leader_refused_writes_total` (see [replicas and
//! fencing](crate::controller#replicas-and-fencing)).
//! **Shard membership**, labelled `group`: `informer_shard_members`,
//! `informer_shard_active`, `informer_shard_membership_changes_total`,
//! `informer_shard_fenced_members_total`, `informer_shard_rejoins_total`,
//! `informer_shard_dropped_reconciles_total`, `informer_shard_refused_writes_total` and
//! `informer_shard_request_errors_total` (see
//! [`ShardStats`](crate::shard::ShardStats)). A controller with metrics reports its
//! election or its shard member; others are reported once given to
//! [`Metrics::observe_leader_election`] or [`Metrics::observe_shard`]. They too are
//! read at scrape time, and forgotten once the elector or member has stopped.
//!
//! **Fleets**: a handle from [`Metrics::for_cluster`] adds `cluster="<name>"` to every
//! workqueue, controller and informer series reported through it; a
//! [`ClusterSet`](crate::fleet::ClusterSet) gives one to each member's factory.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use informer::factory::{FactoryConfig, SharedInformerFactory};
//! use informer::metrics::Metrics;
//! use informer::metrics::prometheus_client::{encoding::text::encode, registry::Registry};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let mut registry = Registry::default();
//! let metrics = Metrics::new(&mut registry);
//! let factory = SharedInformerFactory::new(client, FactoryConfig::default().metrics(&metrics));
//! let _configmaps = factory.informer::<ConfigMap>();
//! factory.start();
//!
//! // On each scrape of /metrics:
//! let mut body = String::new();
//! encode(&mut body, &registry)?;
//! assert!(body.contains("informer_cached_objects{informer=\"ConfigMap\"}"));
//! # Ok(())
//! # }
//! ```

use std::sync::Arc;

pub use prometheus_client;
use prometheus_client::registry::Registry;

mod consistency;
mod controller;
mod coordination;
mod encode;
mod informers;
mod workqueue;

pub(crate) use controller::{ControllerMetrics, Outcome};
pub(crate) use informers::{InformerSample, InformerSource};
pub use workqueue::WorkqueueMetrics;

use crate::leader::LeadershipHandle;
use crate::lock::MutexExt;
use crate::shard::ShardHandle;
use crate::shared_informer::SharedIndexInformer;
use controller::ControllerFamilies;
use coordination::{Coordination, CoordinationCollector};
use informers::{InformerCollector, SingleInformer, Sources};
use workqueue::WorkqueueFamilies;

/// The informer crate's metric families, registered in one
/// [`Registry`]; see the
/// [module docs](self). Cloning gives another handle to the same families.
#[derive(Clone)]
pub struct Metrics {
    workqueue: WorkqueueFamilies,
    controller: ControllerFamilies,
    informers: Sources,
    coordination: Coordination,
    /// The fleet cluster this handle's series are labelled with (`cluster`).
    cluster: Option<Arc<str>>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("observed", &self.informers.locked().len())
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// Registers every family into `registry`. Call it once per registry: a second
    /// call would register the names twice. (For a prefix, pass
    /// `registry.sub_registry_with_prefix("myapp")`.)
    pub fn new(registry: &mut Registry) -> Self {
        let informers = Sources::default();
        registry.register_collector(Box::new(InformerCollector {
            sources: Arc::clone(&informers),
        }));
        let coordination = Coordination::default();
        registry.register_collector(Box::new(CoordinationCollector {
            observed: Arc::clone(&coordination),
        }));
        Self {
            workqueue: WorkqueueFamilies::register(registry),
            controller: ControllerFamilies::register(registry),
            informers,
            coordination,
            cluster: None,
        }
    }

    /// The same families, with every workqueue, controller and informer series
    /// reported through the returned handle labelled `cluster="{cluster}"`: what a
    /// [`ClusterSet`](crate::fleet::ClusterSet) gives each member's factory when its
    /// options carry metrics, so that members' series stay apart and an unreachable
    /// cluster shows by name (its reflector's errors, its `informer_synced`). Leader
    /// election and shard series carry no cluster label: a fleet's replicas share them.
    pub fn for_cluster(&self, cluster: &str) -> Metrics {
        Metrics {
            cluster: Some(Arc::from(cluster)),
            ..self.clone()
        }
    }

    /// The fleet cluster this handle labels its series with, if any.
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    /// The workqueue series of the queue called `name`, for
    /// [`QueueConfig::metrics`](crate::workqueue::QueueConfig::metrics).
    ///
    /// ```
    /// use informer::metrics::{Metrics, prometheus_client::registry::Registry};
    /// use informer::workqueue::{QueueConfig, WorkQueue, default_controller_rate_limiter};
    ///
    /// let mut registry = Registry::default();
    /// let metrics = Metrics::new(&mut registry);
    /// let queue: WorkQueue<String> = WorkQueue::with_config(
    ///     QueueConfig::default().name("pods").metrics(metrics.workqueue("pods")),
    ///     default_controller_rate_limiter(),
    /// );
    /// queue.add("default/web".to_owned());
    /// ```
    pub fn workqueue(&self, name: &str) -> WorkqueueMetrics {
        self.workqueue.queue(name, self.cluster.as_deref())
    }

    /// Reports `informer` (one not made by an observed factory) under the label
    /// `informer="{name}"`, for as long as it exists.
    pub fn observe_informer<K: crate::object::Object + Send + Sync + 'static>(
        &self,
        name: impl Into<String>,
        informer: &SharedIndexInformer<K>,
    ) {
        self.observe(Box::new(SingleInformer {
            name: name.into(),
            informer: informer.downgrade(),
        }));
    }

    /// Reports the leader election `leadership` watches, labelled with its Lease's
    /// name (`name`), until its elector stops. Observing another election on a
    /// Lease of the same name replaces this one. A
    /// [`Controller`](crate::controller::Controller) with metrics and
    /// [`leader_election`](crate::controller::Controller::leader_election) observes
    /// its election itself.
    pub fn observe_leader_election(&self, leadership: &LeadershipHandle) {
        self.coordination.locked().election(leadership);
    }

    /// Reports the shard member `shard` views, labelled with its group (`group`),
    /// until the member stops. Observing another member of the same group replaces
    /// this one. A [`sharded`](crate::controller::Controller::sharded) controller
    /// with metrics observes its member itself.
    pub fn observe_shard(&self, shard: &ShardHandle) {
        self.coordination.locked().shard(shard);
    }

    /// Reports every informer `source` holds, on each scrape, until it is gone.
    pub(crate) fn observe(&self, source: Box<dyn InformerSource>) {
        self.informers.locked().push((self.cluster.clone(), source));
    }

    /// The reconcile series of the controller called `name`.
    pub(crate) fn controller(&self, name: &str) -> ControllerMetrics {
        self.controller.controller(name, self.cluster.as_deref())
    }
}

#[cfg(test)]
mod tests;
