//! # informer-benches
//!
//! Benchmarks of the `informer` crate side by side with what a Rust user would pick
//! otherwise: kube-runtime's [`reflector`](kube_runtime::reflector()) over its
//! [`watcher`](kube_runtime::watcher()), with its defaults and tuned as its docs say;
//! and with what a Go user would: client-go's informer and controller-runtime's cache
//! and controller (two Go peers, `benches/client-go` and `benches/controller-runtime`,
//! each a Go module built by `scripts/install-control-plane.sh`). Everything runs on
//! this machine against the embedded control plane ([`informer::testenv`]): one etcd
//! and one kube-apiserver (Kubernetes 1.37) on loopback, started once by the driver.
//!
//! Two binaries (three, counting the worker's mimalloc build):
//! - `bench` (the driver, [`driver`]) starts the control plane, creates the objects,
//!   runs every scenario and prints one table of medians and ratios;
//! - `bench-worker` ([`worker`]) is what the driver starts as a child process for each
//!   measured run, with a mode argument saying what to run and which implementation.
//!
//! Each server scenario runs our `SharedIndexInformer` and kube-runtime as **separate
//! processes**, every side in turn, the first rotating from round to round (three
//! rounds by default), so that memory is measured per process (peak RSS is the kernel's
//! `VmHWM`) and a load change on the machine hits every side alike. Both sides use
//! default settings, as a user would: our informer with `InformerConfig::default()`,
//! kube-runtime with `watcher::Config::default()` driven through `reflector(writer,
//! watcher(api, config))`, and the same `kube::Client` (from `KUBECONFIG`, the same TLS
//! stack, the same tokio multi-threaded runtime).
//!
//! ## The other sides
//!
//! - **kube-runtime tuned as its docs say** (scenarios 1, 2, 6, 7; rows of their own,
//!   labelled `kube-runtime tuned (streaming_lists(), managedFields cleared by
//!   .modify())`): `watcher::Config::default().streaming_lists()` (a sync is one watch
//!   whose initial events are the list, so the page size does not apply) and
//!   `managedFields` cleared by `.modify()` before the store, on every watcher (in the
//!   controller, the parents' through `Controller::for_stream`).
//! - **client-go** (scenarios 1, 2, 3, 6, 8 as two columns, JSON and protobuf; 15 as a
//!   variant): the peer `benches/client-go`, client-go 0.37.2's `SharedInformerFactory`
//!   with its defaults (streaming lists, the RealFIFO), a `SetTransform` cut in 15.
//! - **controller-runtime** (scenarios 1, 2, 7, 12, 13 as a column): the peer
//!   `benches/controller-runtime`, controller-runtime 0.25.3's cache (1, 2) and manager
//!   with a controller (7, 12, 13: the same `Parent` controller as ours, in Go), its
//!   defaults (the priority queue, streaming lists) and
//!   `cache.TransformStripManagedFields()` as the cache's transform, as its docs
//!   suggest.
//!
//! The Go peers speak the worker's protocol (its arguments, its `synced` and `go`
//! lines, its JSON report); a peer that is not built is left out, with a message.
//!
//! ## Scenarios
//! 1. **Initial sync, 10,000 ConfigMaps** (about 1 KiB of data, two labels each): time
//!    from starting the informer to "synced" (ours: `wait_for_cache_sync`; theirs:
//!    `Store::wait_until_ready`), client CPU (user + sys) spent in that time, peak RSS
//!    and RSS right after sync. The worker also records its RSS before starting, so the
//!    cost per object (`(peak - baseline) / objects`, CPU per object) is reported.
//! 2. **Initial sync, 50,000 ConfigMaps**: the same, five times the objects, to show that
//!    the cost per object stays flat as the collection grows.
//! 3. **Watch throughput**: after the initial sync of the 10,000, the driver applies
//!    5,000 updates to the server (32 in flight, each to a different object) and then
//!    one last update to a marker object; the worker measures the time from "go" until
//!    its cache holds the marker's new value (watch events arrive in order, so by then
//!    every earlier update is in the cache) and the CPU it spent meanwhile.
//! 4. **Cache queries on 10,000 objects**, in one process, no server: both caches are
//!    filled with the same synthetic ConfigMaps (ten namespaces), then each query runs
//!    in alternating rounds: get by key, list a namespace, list by a label selector,
//!    list by a secondary index. Ours answers from the `Lister`/`Indexer` (namespace
//!    index, a label index on `app`, a custom index on the `owner` data field);
//!    kube-runtime's `Store` answers with `get` and its filters (`state_filter`,
//!    `state_filter_selector`: the cheapest way it offers, cheaper than
//!    `state().into_iter().filter(..)`). The label query also runs on an informer of
//!    ours without the label index, a scan like kube-runtime's, to show what the index
//!    buys and what our scan costs.
//! 5. **In-process pipeline**, no server: synthetic deltas through our reflector ->
//!    DeltaFIFO -> indexer -> 1 and 8 handlers, in deltas per second, to find our own
//!    ceiling ([`synthetic`] serves the list and the watch events from memory). Each
//!    run is made twice, alternately: with the system allocator (glibc, as every other
//!    scenario) and with `bench-worker-mimalloc`, the same worker with mimalloc as its
//!    global allocator, since the handler thread's work is mostly freeing the objects
//!    that updates replace.
//! 6. **Relist after 410 Gone**: on a second control plane without the watch cache
//!    (so that etcd compaction makes a watch answer 410 Gone), each side (with client-go
//!    and kube-runtime tuned, a relist is a streaming list) syncs the
//!    10,000 objects with 2-second watches; the driver then writes elsewhere and
//!    compacts etcd, so the next watch fails and the side relists the unchanged
//!    collection. The worker reports its RSS after the sync, the peak RSS from then
//!    until the relist was applied (`VmHWM`, reset after the sync through
//!    `/proc/self/clear_refs`), and the CPU in that time.
//! 7. **Controller throughput**: 10,000 `Parent`s (a CRD with a status subresource),
//!    each owning one ConfigMap child; the reconcile reads the child from the cache and
//!    patches the parent's status when it differs. Ours is the `Controller` builder with
//!    `owns::<ConfigMap>()`; kube-runtime's is its `Controller` with `owns_stream` fed by
//!    a reflector over the children (so its reconcile reads a cache too), and
//!    controller-runtime's with `For(&Parent{}).Owns(&corev1.ConfigMap{})`, each with 16
//!    reconciles at once. Measured: reconciles per second to converge after start and
//!    after the driver changes 5,000 children (32 writes in flight: that phase follows
//!    the driver's pace), CPU, peak RSS, and p50/p99 from a child's change (stamped in
//!    its data) to the reconcile of its owner that saw it ([`controller`]).
//! 8. **Initial sync, 100,000 ConfigMaps**: scenario 2 at twice the size, so that
//!    the per-object rows of scenarios 1, 2 and 8 show whether the cost stays flat.
//! 9. **Initial sync, 10,000 Pods** as a cluster holds them (two containers with env,
//!    probes, resources and mounts, four volumes, tolerations, conditions and container
//!    statuses: about 5 KiB each), since deeper objects weigh decoding and map overhead
//!    differently from flat ConfigMaps.
//! 10. **Metadata-only sync, 50,000 ConfigMaps** (scenario 2's objects): ours as
//!     `SharedIndexInformer<PartialObjectMeta<ConfigMap>>` (asking the server for
//!     `PartialObjectMetadata`) against kube-runtime's metadata watcher (`reflector` over
//!     `watcher(Api::<PartialObjectMeta<ConfigMap>>, ..)`), in rounds with both sides'
//!     full syncs of the same objects: time, CPU and memory side by side, and for each
//!     side its metadata-only figure as a share of its full one.
//! 11. **A controller sharded across replicas** (ours only: kube-runtime has no
//!     sharding): our `Controller::<ConfigMap>::sharded` with a trivial reconcile on
//!     the 50,000 objects of scenario 2, in 1, 2 and 3 replica processes (each a
//!     `ShardMember` with the default timings: 15 s lease, 10 s renew deadline, 2 s
//!     retry period). Measured: each replica's peak RSS and CPU until every object was
//!     reconciled by the replica it belongs to, the ratio of 2 and 3 replicas' peak RSS
//!     to one replica's (the goal: about 1/N, once the primary cache holds only the
//!     replica's shard), the time from start until every object was reconciled, and the
//!     takeover after a SIGKILL of one of 3 replicas: the time until the two survivors
//!     reconciled the killed one's keys ([`shard_worker`]).
//! 12. **Edits made while a controller's startup backlog drains**: scenario 7's
//!     parents and controller, three sides: ours with its priority queue (the
//!     default: keys of the initial list, resyncs and take-overs at `Priority::LOW`,
//!     real changes at `Priority::NORMAL`), ours with `.priority_queue(false)`
//!     (client-go's FIFO), and kube-runtime's (and controller-runtime's, with its
//!     priority queue, its default). Each run starts with a new tag, so every
//!     parent needs a reconcile (the startup backlog); once the worker has made its
//!     first status patches, the driver changes 200 children (`--backlog-edits`),
//!     spread over 4 seconds, each stamped. Measured: p50/p99 from an edit to its
//!     owner's first reconcile that saw it, and the time from start until every parent
//!     converged (the backlog still drains), per side ([`backlog`]).
//! 13. **A small operator's footprint**: scenario 7's two-informer controller on 20
//!     parents owning a ConfigMap each (`--footprint-objects`, a namespace of their
//!     own), ours and kube-runtime's, each in a worker process on the default
//!     multi-threaded tokio runtime (and controller-runtime's, a Go process): idle RSS (`VmRSS` after converging and 3 s idle),
//!     peak RSS (`VmHWM`) and threads (`Threads:` in `/proc/self/status`) then
//!     ([`footprint`]).
//! 14. **A fleet of clusters** (ours only: kube-runtime has no fleet): 10 clusters
//!     (`--fleet-clusters`), each a namespace of the one bench control plane reached
//!     with the same kubeconfig and confined to its namespace (a client, factory,
//!     informer, queue and workers per cluster), with 5,000 ConfigMaps each
//!     (`--fleet-objects`, scenario 2's objects), and a `FleetController::<ConfigMap>`
//!     with a trivial reconcile that records the key. Measured: time, CPU, peak RSS
//!     and RSS until every object was reconciled, in total and per cluster, beside one
//!     cluster of as many objects in one namespace (scenario 2's); the time from a
//!     cluster joining the running fleet (a `ClusterProvider` fed through a channel)
//!     until it synced and its objects were reconciled; and the fleet sharded by
//!     cluster (`ClusterSet::sharded`) over 1, 2 and 3 replica processes: peak RSS
//!     and CPU per replica, the clusters each engaged, and the time until every
//!     object was reconciled ([`fleet_worker`]).
//! 15. **Caching only what a controller reads**: 30,000 Pods synced as the full type,
//!     as our projections and as hand-written partial types of kube-rs: bytes per
//!     cached Pod, CPU and time to sync ([`projection_types`]); at counts above
//!     50,000 (`--projection-pods 30000,150000`) only our projection and our
//!     metadata-only informer. Then a churn: half the Pods deleted, the rest
//!     relabelled, our caches' RSS above start against a fresh sync of the survivors.
//! 16. **Consistency checks** (ours only: neither kube-runtime nor client-go checks
//!     its cache against the server), on scenario 2's 50,000 ConfigMaps: the cost of
//!     one check of a settled cache (wall time, CPU, requests, peak memory) and of one
//!     that finds and names a lost update; a long run (`--consistency-minutes`,
//!     default 10) of checks every `--consistency-interval` seconds (default 15) under
//!     churn, with etcd compacted every minute and the API server restarted halfway,
//!     in which `--consistency-drifts` lost updates are made (default 5): detection
//!     times and false alarms; and the staleness probes' lag against a watch delayed
//!     by a known time, on a small collection ([`consistency`]).
//! 17. **Server-side shards** (ours only), on control planes of their own with
//!     `ShardedListAndWatch` on and off: 50,000 custom resources over 1, 2 and 3
//!     replicas sharded by uid; bytes received, objects decoded and dropped, CPU and
//!     peak RSS per replica, the server's CPU, and the shard selector's length.
//! 18. **managedFields on the wire**: scenario 1's collection synced by two of our
//!     informers, one asking the server to leave managedFields out (KEP-5958, the
//!     default), one not: the bytes each received, through a counting proxy.
//!
//! In every round the side that runs first rotates.
//!
//! The figures are printed, never asserted: there are no timed assertions in tests.

#![deny(missing_docs)]

pub mod backlog;
mod churn;
pub mod consistency;
pub mod controller;
pub mod driver;
mod fifo_push;
pub mod fleet_worker;
pub mod footprint;
mod handshake;
mod in_process;
pub mod measure;
pub mod objects;
pub mod plot;
pub mod projection_types;
pub mod report;
pub mod shard_item;
pub mod shard_worker;
pub mod synthetic;
pub mod worker;
