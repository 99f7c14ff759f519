//! The queues between the reflector and the informer's process loop, with client-go's
//! typed deltas.
//!
//! The reflector is the producer: it turns list and watch results into `add`, `update`,
//! `delete` and `replace` calls, and the resync timer into `resync` calls. The
//! informer's process loop is the consumer: it pops [`Deltas`], writes them to the
//! cache, and notifies the handlers. Two queues follow client-go's two:
//!
//! - [`RealFifo`] (client-go's `RealFIFO`, behind its `InOrderInformers`, the
//!   informers' default since 1.36; ours too): **every change in the order it
//!   happened**, one delta per pop. After a relist, the deletions of objects that
//!   vanished come before the listed objects, and no two changes to different keys are
//!   reordered, so a handler that correlates keys (an IP freed by one Pod and taken by
//!   another) sees the world as it was.
//! - [`DeltaFifo`] (client-go's `DeltaFIFO`, what informers used before): **one entry
//!   per key**: the changes to an object accumulate behind its first pending change and
//!   are popped together, so a busy object is handled once for many changes but keys
//!   overtake each other. Select it with
//!   [`InformerConfig::queue`](crate::shared_informer::InformerConfig::queue).
//!
//! Both hand out the same typed [`Delta`]s: client-go's
//! `Delta{Type, Object interface{}}` becomes an enum whose every variant carries the
//! object as an `Arc<K>`, and only [`Delta::Deleted`] carries a [`DeletedObject`]: the
//! final state, or a [`DeletedFinalStateUnknown`] tombstone when a relist found the
//! object gone. A handler matches on a type instead of type-switching on `interface{}`.

mod delta;
mod delta_fifo;
mod known;
mod pop;
mod queue_state;
mod real_fifo;

pub use delta::{DeletedFinalStateUnknown, DeletedObject, Delta, DeltaType, Deltas};
pub use delta_fifo::{DeltaFifo, DeltaFifoConfig};
pub use known::KnownObjects;
pub(crate) use pop::DeltaBatch;
pub use pop::{PopError, ProcessError};
pub use real_fifo::{RealFifo, RealFifoConfig};
