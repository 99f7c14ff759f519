//! client-go's own unit tests, ported to this crate's public API: each test names the
//! Go test (and table row) whose rule it checks. CONFORMANCE.md at the repository root
//! lists every Go test with its status.

mod common;

#[path = "client_go/support.rs"]
mod support;

#[path = "client_go/controller.rs"]
mod controller;
#[path = "client_go/delta_fifo.rs"]
mod delta_fifo;
#[path = "client_go/index.rs"]
mod index;
#[path = "client_go/listers.rs"]
mod listers;
#[path = "client_go/object_names.rs"]
mod object_names;
#[path = "client_go/reflector.rs"]
mod reflector;
#[path = "client_go/shared_informer.rs"]
mod shared_informer;
#[path = "client_go/store.rs"]
mod store;
#[path = "client_go/thread_safe_store.rs"]
mod thread_safe_store;
#[path = "client_go/wait.rs"]
mod wait;
#[path = "client_go/workqueue_delaying.rs"]
mod workqueue_delaying;
#[path = "client_go/workqueue_queue.rs"]
mod workqueue_queue;
#[path = "client_go/workqueue_rate_limiters.rs"]
mod workqueue_rate_limiters;
#[path = "client_go/workqueue_rate_limiting.rs"]
mod workqueue_rate_limiting;
