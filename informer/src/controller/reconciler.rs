//! [`Reconciler`]: one reconcile of one key: wait for our own writes, look the object
//! up, run the finalizer steps, the reconcile or the cleanup, and apply the error
//! policy. The user's closures arrive here erased to one type each ([`ReconcileFn`],
//! [`CleanupFn`]), so nothing below the builder is generic over them.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::ResourceExt;
use tracing::Instrument;

use super::Retry;
use super::context::{Context, ControllerState};
use super::finalizer::{self, has_finalizer};
use super::primary::Primary;
use super::reasons;
use super::tombstones::SharedTombstones;
use crate::claim::Fence;
use crate::key::ObjectKey;
use crate::lock::MutexExt;
use crate::store::Indexer;
use crate::workqueue::Action;

/// An error erased to its message.
pub(crate) type ErasedError = Box<dyn fmt::Display + Send>;

/// A user's cleanup, its error erased to its message.
pub(crate) type CleanupFn<K> =
    Arc<dyn Fn(Arc<K>, Context<K>) -> BoxFuture<'static, Result<(), ErasedError>> + Send + Sync>;

/// A user's reconcile with their error policy applied to its failures, its error
/// erased to its message.
pub(crate) type ReconcileFn<K> =
    Arc<dyn Fn(Arc<K>, Context<K>) -> BoxFuture<'static, Result<Action, Failed>> + Send + Sync>;

/// A failed reconcile: what the error policy chose, and the error.
pub(crate) struct Failed {
    pub(crate) retry: Retry,
    pub(crate) error: ErasedError,
}

/// One key reconciled under a fence, as the workers run it.
pub(crate) type KeyWork =
    Arc<dyn Fn(ObjectKey, Fence) -> BoxFuture<'static, Result<Action, Failure>> + Send + Sync>;

/// `cleanup`, erased.
pub(crate) fn erase_cleanup<K, F, Fut, E>(cleanup: F) -> CleanupFn<K>
where
    K: Send + Sync + 'static,
    F: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    let cleanup = Arc::new(cleanup);
    Arc::new(move |object, context| {
        let cleanup = Arc::clone(&cleanup);
        async move {
            cleanup(object, context)
                .await
                .map_err(|error| Box::new(error) as ErasedError)
        }
        .boxed()
    })
}

/// `reconcile` with `error_policy` applied to its failures, erased.
pub(crate) fn erase_reconcile<K, F, Fut, E, P>(reconcile: F, error_policy: P) -> ReconcileFn<K>
where
    K: Send + Sync + 'static,
    F: Fn(Arc<K>, Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
    P: Fn(&K, &E, &Context<K>) -> Retry + Send + Sync + 'static,
{
    let reconcile = Arc::new(reconcile);
    let error_policy = Arc::new(error_policy);
    Arc::new(move |object: Arc<K>, context: Context<K>| {
        let reconcile = Arc::clone(&reconcile);
        let error_policy = Arc::clone(&error_policy);
        async move {
            match reconcile(Arc::clone(&object), context.clone()).await {
                Ok(action) => Ok(action),
                Err(error) => Err(Failed {
                    retry: error_policy(&object, &error, &context),
                    error: Box::new(error),
                }),
            }
        }
        .boxed()
    })
}

/// Why one reconcile of a key failed (the runner logs it and retries with backoff).
pub(crate) enum Failure {
    /// The user's reconcile failed, and the error policy asked for backoff.
    Reconcile(ErasedError),
    /// The user's cleanup failed.
    Cleanup(ErasedError),
    /// Adding or removing the controller's finalizer failed.
    Finalizer(kube::Error),
    /// The reconcile ran past the controller's
    /// [`reconcile_timeout`](super::Controller::reconcile_timeout) and was cancelled.
    TimedOut(std::time::Duration),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Reconcile(error) => error.fmt(f),
            Failure::Cleanup(error) => write!(f, "cleanup failed: {error}"),
            Failure::Finalizer(error) => write!(f, "could not update the finalizer: {error}"),
            Failure::TimedOut(timeout) => {
                write!(f, "cancelled after the reconcile timeout of {timeout:?}")
            }
        }
    }
}

/// Everything needed to reconcile any key of one controller.
pub(crate) struct Reconciler<K> {
    pub(crate) state: Arc<ControllerState>,
    pub(crate) primary: Indexer<K>,
    pub(crate) reconcile: ReconcileFn<K>,
    pub(crate) finalizer: Option<String>,
    pub(crate) cleanup: Option<CleanupFn<K>>,
    /// Cancels a reconcile that runs longer (see `Controller::reconcile_timeout`).
    pub(crate) timeout: Option<std::time::Duration>,
    pub(crate) tombstones: SharedTombstones<K>,
    /// UIDs whose cleanup ran and whose finalizer this controller removed: their
    /// deletion event needs no second cleanup.
    pub(crate) finalized: Mutex<HashSet<String>>,
    #[cfg(feature = "metrics")]
    pub(crate) metrics: Option<crate::metrics::ControllerMetrics>,
}

impl<K: Primary> Reconciler<K> {
    /// Reconciles `key` once, acting only while `fence` holds.
    ///
    /// Runs in a span `reconcile` naming the controller, the object (`kind` and
    /// `object`, its key) and why it was queued (`reason`), so every log line of the
    /// reconcile, the cleanup and the controller's own says what it is about.
    pub(crate) async fn process(&self, key: ObjectKey, fence: Fence) -> Result<Action, Failure> {
        let reason = self.state.reasons.take(&key);
        let span = tracing::info_span!(
            parent: self.state.parent_span.as_ref().and_then(tracing::Span::id),
            "reconcile",
            controller = %self.state.name,
            kind = %K::kind(&()),
            object = %key,
            reason = %reasons::describe(reason.as_ref()),
        );
        async move {
            #[cfg(feature = "metrics")]
            if let Some(metrics) = &self.metrics {
                let timer = metrics.start();
                let mut failed = false;
                let result = self.within_timeout(key, fence, &mut failed).await;
                if matches!(result, Err(Failure::TimedOut(_))) {
                    metrics.timed_out();
                }
                timer.finish(outcome(&result, failed));
                return result;
            }
            self.within_timeout(key, fence, &mut false).await
        }
        .instrument(span)
        .await
    }

    /// [`reconcile_key`](Self::reconcile_key), cancelled (dropped where it stands)
    /// once it has run for the controller's timeout, if it has one.
    async fn within_timeout(
        &self,
        key: ObjectKey,
        fence: Fence,
        failed: &mut bool,
    ) -> Result<Action, Failure> {
        let Some(timeout) = self.timeout else {
            return self.reconcile_key(key, fence, failed).await;
        };
        let reconciling = self.reconcile_key(key.clone(), fence, failed);
        match tokio::time::timeout(timeout, reconciling).await {
            Ok(result) => result,
            Err(_) => {
                tracing::warn!(%key, ?timeout, "reconcile cancelled: it ran past the reconcile timeout; retrying with backoff");
                Err(Failure::TimedOut(timeout))
            }
        }
    }

    /// Reconciles `key` once; sets `failed` when the reconcile failed but the error
    /// policy turned the failure into a delay or into giving up.
    async fn reconcile_key(
        &self,
        key: ObjectKey,
        fence: Fence,
        failed: &mut bool,
    ) -> Result<Action, Failure> {
        let _waited = self.state.read_your_writes.wait(&key).await;
        #[cfg(feature = "metrics")]
        if let Some(metrics) = &self.metrics {
            use super::read_your_writes::WaitOutcome;
            match _waited {
                WaitOutcome::NothingPending => {}
                WaitOutcome::CaughtUp => metrics.waited_for_own_writes(true),
                WaitOutcome::TimedOut => metrics.waited_for_own_writes(false),
            }
        }
        let context = Context::new(Arc::clone(&self.state), key.clone(), fence);
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

        match (self.reconcile)(object, context).await {
            Ok(action) => Ok(action),
            Err(Failed { retry, error }) => {
                *failed = true;
                match retry {
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
    async fn deleted(&self, key: &ObjectKey, context: Context<K>) -> Result<Action, Failure> {
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
fn outcome(result: &Result<Action, Failure>, failed: bool) -> crate::metrics::Outcome {
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
fn ignore_gone<T>(result: kube::Result<T>) -> Result<Option<T>, Failure> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(error) => Err(Failure::Finalizer(error)),
    }
}
