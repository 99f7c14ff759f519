//! The background writer: one task per recorder that sends Events to the API server
//! (client-go's `recordingWorker`s, `finishSeries` and `refreshExistingEventSeries`).
//!
//! It takes the ids of cached Events from the recorder's bounded queue and writes up
//! to `workers` of them at once, each with retries on connection and server errors
//! (a jittered backoff, a bounded number of tries, as client-go's `attemptRecording`).
//! Every `flush_interval` it writes the series counts that changed and forgets
//! finished Events. When the recorder shuts down, or its last handle is dropped, it
//! drains the queue, writes every pending count once more and ends.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use k8s_openapi::api::events::v1::Event;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rand::Rng;
use tokio::sync::{mpsc, watch};
use tokio::time::{Instant, MissedTickBehavior};

use super::error::EventError;
use super::series::Write;
use super::shared::Shared;
use super::stats::bump;
use crate::lock::MutexExt;

/// The recorder's writer task; [`run`](Writer::run) it once.
pub(super) struct Writer {
    pub(super) client: Client,
    pub(super) shared: Arc<Shared>,
    pub(super) jobs: mpsc::Receiver<u64>,
    pub(super) closing: watch::Receiver<bool>,
}

/// Sets `running` to false when the writer ends, panic or not.
struct RunningGuard(Arc<Shared>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0
            .running
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Writer {
    /// Writes until the recorder closes and everything pending is written.
    pub(super) async fn run(mut self) {
        let _running = RunningGuard(Arc::clone(&self.shared));
        let config = &self.shared.config;
        let workers = config.workers.max(1);
        let flush = config.flush_interval.max(Duration::from_millis(1));
        let mut ticker = tokio::time::interval_at(Instant::now() + flush, flush);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut in_flight: FuturesUnordered<BoxFuture<'static, Option<u64>>> =
            FuturesUnordered::new();
        let mut ready: VecDeque<u64> = VecDeque::new();
        let mut closing = is_closing(&self.closing);
        let mut jobs_open = true;
        if closing {
            self.jobs.close();
        }
        loop {
            while in_flight.len() < workers {
                let next = match ready.pop_front() {
                    Some(id) => id,
                    None if jobs_open => match self.jobs.try_recv() {
                        Ok(id) => id,
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        Err(mpsc::error::TryRecvError::Disconnected) => {
                            jobs_open = false;
                            break;
                        }
                    },
                    None => break,
                };
                in_flight.push(self.write(next));
            }
            if closing && !jobs_open && ready.is_empty() && in_flight.is_empty() {
                let mut state = self.shared.state.locked();
                let dirty = state.series.take_dirty();
                if dirty.is_empty() {
                    state.closed = true;
                    break;
                }
                ready.extend(dirty);
                continue;
            }
            tokio::select! {
                Some(again) = in_flight.next(), if !in_flight.is_empty() => ready.extend(again),
                job = self.jobs.recv(), if jobs_open && in_flight.len() < workers => match job {
                    Some(id) => ready.push_back(id),
                    None => jobs_open = false,
                },
                _ = ticker.tick(), if !closing => {
                    let mut state = self.shared.state.locked();
                    ready.extend(state.series.take_dirty());
                    state.series.sweep(Instant::now());
                }
                _ = self.closing.changed(), if !closing => {
                    closing = true;
                    self.jobs.close();
                }
            }
        }
        tracing::debug!(
            controller = %self.shared.reporter.controller,
            "event recorder stopped"
        );
    }

    /// The write of Event `id`, with its retries; yields `id` when it must be written
    /// again at once.
    fn write(&self, id: u64) -> BoxFuture<'static, Option<u64>> {
        let client = self.client.clone();
        let shared = Arc::clone(&self.shared);
        let closing = self.closing.clone();
        Box::pin(async move { write_event(&client, &shared, closing, id).await })
    }
}

/// Whether the recorder is shutting down: asked to, or every handle is gone.
fn is_closing(closing: &watch::Receiver<bool>) -> bool {
    *closing.borrow() || closing.has_changed().is_err()
}

/// How a failed write goes on.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// A patch found no Event: create it again.
    Gone,
    /// A create found the Event there: patch it instead.
    Exists,
    /// The connection or the server failed: try again after a backoff.
    Retry,
    /// The server refused the write (invalid, forbidden, namespace gone): give up.
    Permanent,
}

/// Sorts a write's error as client-go's `recordEvent` does, but retries server errors
/// (5xx) and throttling (429) too, since they say nothing about the Event.
fn classify(write: &Write, error: &kube::Error) -> Failure {
    match error {
        kube::Error::Api(status) => {
            let is_patch = matches!(write, Write::Patch { .. });
            if is_patch && (status.is_not_found() || status.code == 404) {
                Failure::Gone
            } else if !is_patch && status.is_already_exists() {
                Failure::Exists
            } else if status.code == 429 || status.code >= 500 {
                Failure::Retry
            } else {
                Failure::Permanent
            }
        }
        kube::Error::BuildRequest(_) | kube::Error::HttpError(_) | kube::Error::SerdeError(_) => {
            Failure::Permanent
        }
        _ => Failure::Retry,
    }
}

/// Writes Event `id` until it succeeds or is given up.
async fn write_event(
    client: &Client,
    shared: &Shared,
    mut closing: watch::Receiver<bool>,
    id: u64,
) -> Option<u64> {
    let max_tries = shared.config.max_tries.max(1);
    let mut tries = 0;
    let mut recreating = false;
    loop {
        let pending = shared.state.locked().series.next_write(id)?;
        tries += 1;
        // The fenced client checks the publisher's claim as the request is handed on,
        // and counts the write as in flight so that a replica stepping down waits for
        // it: a check before building the request would leave the building between it
        // and the wire, where a paused replica resumes after its term and sends anyway.
        let fenced = crate::claim::fenced_client(client, pending.fence.clone());
        let Err(error) = send(&fenced, &pending.write).await else {
            match pending.write {
                Write::Create(_) => {
                    bump(&shared.stats.created);
                    if recreating {
                        bump(&shared.stats.recreated);
                    }
                }
                Write::Patch { .. } => {
                    bump(&shared.stats.patched);
                }
            }
            return shared.state.locked().series.written(id, pending.count);
        };
        if let Some(fenced) = crate::claim::Fenced::find(&error) {
            // The publisher may no longer act for the object (its term or shard
            // ended): another replica may be the one speaking for it now.
            bump(&shared.stats.fenced);
            let (namespace, name) = pending.write.event_name();
            tracing::debug!(%namespace, %name, reason = %fenced.reason, "event not written: the claim it was published under ended");
            shared.state.locked().series.failed(id);
            return None;
        }
        let (namespace, name) = pending.write.event_name();
        let failure = classify(&pending.write, &error);
        match failure {
            Failure::Gone if tries < max_tries => {
                tracing::debug!(%namespace, %name, "event gone (TTL?): creating it again");
                shared.state.locked().series.mark_absent(id);
                recreating = true;
                continue;
            }
            Failure::Exists if tries < max_tries => {
                shared.state.locked().series.mark_present(id);
                continue;
            }
            Failure::Retry if tries < max_tries && !is_closing(&closing) => {
                tracing::warn!(%namespace, %name, %error, "writing event failed; will retry");
                let backoff = shared.config.retry_backoff;
                let delay = backoff.mul_f64(1.0 + 0.25 * rand::rng().random::<f64>());
                tokio::select! {
                    () = tokio::time::sleep(delay) => continue,
                    _ = closing.wait_for(|closing| *closing) => {}
                }
            }
            _ => {}
        }
        let error = EventError::Write {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            source: error,
        };
        tracing::warn!(
            error = &error as &dyn std::error::Error,
            tries,
            "giving up on event"
        );
        bump(&shared.stats.failed);
        shared.state.locked().series.failed(id);
        return None;
    }
}

/// Sends one write.
async fn send(client: &Client, write: &Write) -> Result<(), kube::Error> {
    let (namespace, name) = write.event_name();
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    match write {
        Write::Create(event) => api.create(&PostParams::default(), event).await.map(drop),
        Write::Patch { series, .. } => {
            let patch = serde_json::json!({ "series": series });
            let params = PatchParams::default();
            api.patch(name, &params, &Patch::Merge(&patch))
                .await
                .map(drop)
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::events::v1::EventSeries;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
    use kube::core::Status;

    use super::*;

    fn api_error(code: u16, reason: &str) -> kube::Error {
        kube::Error::Api(Box::new(Status {
            code,
            reason: reason.to_owned(),
            ..Status::failure("", reason)
        }))
    }

    #[test]
    fn errors_are_sorted_as_client_go_sorts_them() {
        let create = Write::Create(Box::default());
        let patch = Write::Patch {
            namespace: "ns".into(),
            name: "e".into(),
            series: EventSeries {
                count: 2,
                last_observed_time: MicroTime(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            },
        };
        let not_found = api_error(404, "NotFound");
        let exists = api_error(409, "AlreadyExists");
        assert_eq!(classify(&patch, &not_found), Failure::Gone);
        assert_eq!(
            classify(&create, &not_found),
            Failure::Permanent,
            "namespace gone"
        );
        assert_eq!(classify(&create, &exists), Failure::Exists);
        assert_eq!(
            classify(&create, &api_error(422, "Invalid")),
            Failure::Permanent
        );
        assert_eq!(
            classify(&create, &api_error(403, "Forbidden")),
            Failure::Permanent
        );
        assert_eq!(
            classify(&patch, &api_error(500, "InternalError")),
            Failure::Retry
        );
        assert_eq!(
            classify(&patch, &api_error(429, "TooManyRequests")),
            Failure::Retry
        );
        let transport = kube::Error::Service("connection refused".into());
        assert_eq!(classify(&create, &transport), Failure::Retry);
        let bad_json = kube::Error::SerdeError(serde_json::from_str::<()>("x").unwrap_err());
        assert_eq!(classify(&create, &bad_json), Failure::Permanent);
    }
}
