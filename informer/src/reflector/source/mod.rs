//! Where a [`Reflector`](crate::reflector::Reflector) reads from: the [`ListerWatcher`] seam
//! (client-go's `ListerWatcher`), what crosses it, and the sources that serve it.
//!
//! The reflector asks a lister-watcher for list pages ([`ListRequest`] answered by a
//! [`ListPage`]) and watch streams ([`WatchRequest`] answered by [`WatchEvent`]s),
//! and reads what it can do beyond that from one value, its [`Capabilities`]
//! (streaming lists, key filters applied before decoding, where consistency checks
//! read, decoded sizes). Three sources serve it here:
//!
//! - [`ApiListerWatcher`], the API server through a [`kube::Api`], decoding each
//!   object on its own ([`ManagedFields`], [`decode_measured`], [`DecodedSizes`]);
//! - [`ListWatch`], two closures (client-go's `cache.ListWatch`);
//! - [`FakeSource`], an in-memory collection that lists and watches like a server, for
//!   unit tests (client-go's `FakeControllerSource`).
//!
//! Consistency checks read the server's versions of the same collection through a
//! [`VersionSource`] a source offers ([`Capabilities::versions`](Capabilities#structfield.versions)).

mod api;
mod api_versions;
mod capabilities;
mod decode;
mod decoded_sizes;
mod fake_source;
mod list_watch;
mod lister_watcher;
mod managed_fields_opt_out;
mod query;
mod requests;
mod server_shards;
mod versions;

pub use api::ApiListerWatcher;
pub use capabilities::Capabilities;
pub(crate) use decode::KeyText;
pub use decode::{ManagedFields, decode_measured};
pub(crate) use decoded_sizes::Budget;
pub use decoded_sizes::DecodedSizes;
pub use fake_source::FakeSource;
pub use list_watch::ListWatch;
pub use lister_watcher::ListerWatcher;
pub use requests::{ListOptions, ListPage, ListRequest, WatchEvent, WatchRequest, WatchStream};
pub use versions::{ObjectVersion, VersionSource};
