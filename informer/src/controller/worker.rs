//! One reconcile of one key: wait for our own writes, look the object up, run the
//! finalizer steps, the reconcile or the cleanup, and apply the error policy.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::Retry;
use super::context::{Context, Shared};
use super::finalizer::{self, has_finalizer};
use super::reasons;
use super::replication::Fence;
use super::tombstones::SharedTombstones;
use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::scope::FactoryScope;
use crate::store::Indexer;
use crate::workqueue::Action;

/// A user's cleanup, its error erased to its message.
pub(crate) type Cleanup<K> = Arc<
    dyn Fn(Arc<K>, Context<K>) -> BoxFuture<'static, Result<(), Box<dyn fmt::Display + Send>>>
        + Send
        + Sync,
>;

/// Why one reconcile of a key failed (the runner logs it and retries with backoff).
pub(crate) enum Failure<E> {
    /// The user's reconcile failed, and the error policy asked for backoff.
    Reconcile(E),
    /// The user's cleanup failed.
    Cleanup(Box<dyn fmt::Display + Send>),
    /// Adding or removing the controller's finalizer failed.
    Finalizer(kube::Error),
}

impl<E: fmt::Display> fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Reconcile(error) => error.fmt(f),
            Failure::Cleanup(error) => write!(f, "cleanup failed: {error}"),
            Failure::Finalizer(error) => write!(f, "could not update the finalizer: {error}"),
        }
    }
}

/// Everything a worker needs for any key of one controller.
pub(crate) struct Worker<K, R, P> {
    pub(crate) shared: Arc<Shared>,
    pub(crate) primary: Indexer<K>,
    pub(crate) reconcile: R,
    pub(crate) error_policy: P,
    pub(crate) finalizer: Option<String>,
    pub(crate) cleanup: Option<Cleanup<K>>,
    pub(crate) tombstones: SharedTombstones<K>,
    /// UIDs whose cleanup ran and whose finalizer this controller removed: their
    /// deletion event needs no second cleanup.
    pub(crate) finalized: Mutex<HashSet<String>>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::ControllerMetrics>,
}

impl<K, R, Fut, E, P> Worker<K, R, P>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + fmt::Debug,
    K: Send + Sync + 'static,
    K::Scope: FactoryScope,
    R: Fn(Arc<K>, Context<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
    E: fmt::Display,
    P: Fn(&K, &E, &Context<K>) -> Retry,
{
    /// Reconciles `key` once, acting only while `fence` holds.
    ///
    /// Runs in a span `reconcile` naming the controller, the object (`kind` and
    /// `object`, its key) and why it was queued (`reason`), so every log line of the
    /// reconcile, the cleanup and the controller's own says what it is about.
    pub(crate) async fn process(&self, key: ObjectKey, fence: Fence) -> Result<Action, Failure<E>> {
        let reason = self.shared.reasons.take(&key);
        let span = tracing::info_span!(
            "reconcile",
            controller = %self.shared.name,
            kind = %K::kind(&()),
            object = %key,
            reason = %reasons::describe(reason.as_ref()),
            cluster = tracing::field::Empty,
        );
        if let Some(cluster) = &self.shared.cluster {
            span.record("cluster", &**cluster);
        }
        async move {
            #[cfg(feature = "metrics")]
            if let Some(metrics) = &self.metrics {
                let timer = metrics.start();
                let mut failed = false;
                let result = self.reconcile_key(key, fence, &mut failed).await;
                timer.finish(outcome(&result, failed));
                return result;
            }
            self.reconcile_key(key, fence, &mut false).await
        }
        .instrument(span)
        .await
    }

    /// Reconciles `key` once; sets `failed` when the reconcile failed but the error
    /// policy turned the failure into a delay or into giving up.
    async fn reconcile_key(
        &self,
        key: ObjectKey,
        fence: Fence,
        failed: &mut bool,
    ) -> Result<Action, Failure<E>> {
        self.shared.read_your_writes.wait(&key).await;
        let context = Context::new(Arc::clone(&self.shared), key.clone(), fence);
        let Some(mut object) = self.primary.get(&key) else {
            return self.deleted(&key, context).await;
        };
        self.tombstones.take(&key);

        if let Some(name) = &self.finalizer {
            let api = context.api::<K>();
            if object.meta().deletion_timestamp.is_some() {
                if has_finalizer(object.meta(), name) {
                    if let Some(cleanup) = &self.cleanup {
                        cleanup(Arc::clone(&object), context.clone())
                            .instrument(tracing::info_span!("cleanup"))
                            .await
                            .map_err(Failure::Cleanup)?;
                    }
                    ignore_gone(finalizer::remove(&api, &object, name).await)?;
                    if let Some(uid) = object.uid() {
                        self.finalized.locked().insert(uid);
                    }
                    tracing::debug!(%key, finalizer = name, "cleaned up; finalizer removed");
                }
                // Being deleted: nothing to reconcile.
                return Ok(Action::Done);
            }
            if !has_finalizer(object.meta(), name) {
                match ignore_gone(finalizer::add(&api, &object, name).await)? {
                    Some(patched) => object = Arc::new(patched),
                    None => return Ok(Action::Done),
                }
            }
        }

        match (self.reconcile)(Arc::clone(&object), context.clone()).await {
            Ok(action) => Ok(action),
            Err(error) => {
                *failed = true;
                match (self.error_policy)(&object, &error, &context) {
                    Retry::Backoff => Err(Failure::Reconcile(error)),
                    Retry::After(delay) => {
                        tracing::warn!(%key, %error, ?delay, "reconcile failed; retrying after the error policy's delay");
                        Ok(Action::RequeueAfter(delay))
                    }
                    Retry::Never => {
                        tracing::error!(%key, %error, "reconcile failed; the error policy gave up on it");
                        Ok(Action::Done)
                    }
                }
            }
        }
    }

    /// The key is not in the cache: run the cleanup for its last known state, if the
    /// informer reported the deletion and the cleanup is still due.
    async fn deleted(&self, key: &ObjectKey, context: Context<K>) -> Result<Action, Failure<E>> {
        let Some(cleanup) = &self.cleanup else {
            return Ok(Action::Done);
        };
        let Some(last_known) = self.tombstones.take(key) else {
            return Ok(Action::Done);
        };
        if let Some(name) = &self.finalizer {
            // With a finalizer the cleanup ran while the object was being deleted
            // (then its UID is in `finalized`), or the object never carried the
            // finalizer and was never reconciled. Otherwise someone removed our
            // finalizer without us: clean up now. (The deletion event's object is the
            // last stored state, which still lists the finalizer either way.)
            let uid = last_known.uid().unwrap_or_default();
            if self.finalized.locked().remove(&uid) || !has_finalizer(last_known.meta(), name) {
                return Ok(Action::Done);
            }
        }
        match cleanup(Arc::clone(&last_known), context)
            .instrument(tracing::info_span!("cleanup"))
            .await
        {
            Ok(()) => {
                tracing::debug!(%key, name = last_known.name_any(), "cleaned up after deletion");
                Ok(Action::Done)
            }
            Err(error) => {
                self.tombstones.insert(key.clone(), last_known);
                Err(Failure::Cleanup(error))
            }
        }
    }
}

/// The `result` label of a reconcile that ended with `result` (`failed`: the error
/// policy turned a failed reconcile into a delay or into giving up).
#[cfg(feature = "metrics")]
fn outcome<E>(result: &Result<Action, Failure<E>>, failed: bool) -> crate::metrics::Outcome {
    use crate::metrics::Outcome;
    match result {
        Err(_) => Outcome::Error,
        Ok(_) if failed => Outcome::Error,
        Ok(Action::RequeueAfter(_) | Action::RequeueAfterWithPriority(..)) => Outcome::RequeueAfter,
        Ok(Action::Done) => Outcome::Success,
    }
}

/// A write to an object that is gone meanwhile is no failure: its deletion event is
/// on the way.
fn ignore_gone<T, E>(result: kube::Result<T>) -> Result<Option<T>, Failure<E>> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(Failure::Finalizer(error)),
    }
}
