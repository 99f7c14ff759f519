//! Running a controller's workers only while this replica leads.
//!
//! The informers run on every replica, so a standby's caches are warm when it takes
//! over. The queue is filled on every replica too (it only holds keys, deduplicated),
//! but workers take keys only during a [`Term`]: when one starts, every cached
//! primary is queued (a new leader must look at everything: the old one may have
//! left work half done); when it is lost, workers take no more keys, reconciles in
//! hand may finish until the lease could expire for the others, and are dropped
//! then. The controller then waits to lead again, its caches kept warm.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;

use tokio::time::sleep_until;

use crate::key::ObjectKey;
use crate::leader::{LeadershipHandle, Term};
use crate::store::Indexer;
use crate::workqueue::{Action, Runner};

/// Runs `runner`'s workers during each term of `leadership` until `shutdown`
/// completes, the elector stops, or the queue is shut down; then shuts the queue down.
pub(crate) async fn run_while_leading<K, F, Fut, E, S>(
    runner: Runner<ObjectKey>,
    reconcile: F,
    leadership: &LeadershipHandle,
    primaries: &Indexer<K>,
    controller: &str,
    shutdown: S,
) where
    K: Send + Sync + 'static,
    F: Fn(ObjectKey) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
    S: Future<Output = ()> + Send,
{
    let mut shutdown = pin!(shutdown);
    loop {
        let term = tokio::select! {
            term = leadership.leading() => match term {
                Some(term) => Arc::new(term),
                None => {
                    tracing::info!(controller, "the leader elector stopped; the controller stops");
                    break;
                }
            },
            () = shutdown.as_mut() => break,
        };
        let queue = runner.queue();
        if queue.is_shutting_down() {
            break;
        }
        let primaries_now = primaries.list_keys();
        tracing::info!(
            controller,
            primaries = primaries_now.len(),
            "leading: reconciling every cached object"
        );
        for key in primaries_now {
            queue.add(ObjectKey::clone(&key));
        }

        let mut shut_down = false;
        let stop = async {
            tokio::select! {
                _ = term.lost() => {}
                () = shutdown.as_mut() => shut_down = true,
            }
        };
        // In-flight reconciles end by the time the lease could expire for the
        // others; a controller shut down while still leading lets them finish.
        let abandon = {
            let term = Arc::clone(&term);
            async move { sleep_until(term.lost().await).await }
        };
        runner
            .run_until(gated(reconcile.clone(), Arc::clone(&term)), stop, abandon)
            .await;
        drop(term);
        if shut_down || runner.queue().is_shutting_down() {
            break;
        }
        tracing::info!(
            controller,
            "no longer leading: workers stopped; waiting to lead again"
        );
    }
    runner.queue().shutdown();
}

/// `reconcile`, skipped (the key is left for the next term) once `term` is over: a
/// worker that took a key just as the term ended does not act on it.
fn gated<F, Fut, E>(
    reconcile: F,
    term: Arc<Term>,
) -> impl Fn(ObjectKey) -> futures::future::Either<Fut, std::future::Ready<Result<Action, E>>>
+ Send
+ Sync
+ 'static
where
    F: Fn(ObjectKey) -> Fut + Send + Sync + 'static,
{
    move |key| {
        if term.is_leading() {
            futures::future::Either::Left(reconcile(key))
        } else {
            futures::future::Either::Right(std::future::ready(Ok(Action::Done)))
        }
    }
}
