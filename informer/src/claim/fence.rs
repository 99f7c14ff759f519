//! [`Fence`]: whether this replica may still act for the key it works, checked against
//! its [`Claim`] by the clock before every step of the work and before every write
//! sent for it (a reconcile's, through its [`Context`](crate::controller::Context), and
//! the Events it publishes).
//!
//! A process that was paused (a long GC or allocator stall, a frozen VM, a throttled
//! container, SIGSTOP) for longer than its lease resumes with every timer due at once:
//! a reconcile that was waiting between its read and its write would send the write
//! before anything else on the runtime had the chance to say the term was over. So
//! the check does not wait for anyone to say so: the deadlines are instants of the
//! monotonic clock, compared with `now` in the task that is about to act.
//!
//! - [`Fence::guard`] checks before each poll of the reconcile: once the fence no
//!   longer holds, the reconcile is dropped where it stands and its next step never
//!   runs.
//! - [`Fence::check_write`] checks just before a write through the context leaves
//!   (the [`TrackedApi`](crate::controller::TrackedApi), and the client of
//!   [`Context::client`](crate::controller::Context::client), see [`fenced_client`]):
//!   a refused write fails with [`Fenced`].
//!
//! A write let through is held until it is answered (a `Hold` on the claim's
//! [`writes`](Claim::writes)): a write that passed the check a moment before the
//! replica stepped down is still on its way, and were the Lease deleted then, another
//! replica could take the key and the old write land after it. So a shard member
//! stepping down, or a leader releasing its lease, ends its claims and then waits for
//! the writes held before it lets the others take the keys; a write held later finds
//! the claim ended and is refused.
//!
//! What no client-side check can stop is a request that was already handed to the
//! connection when the process froze: it reaches the server on resume. A write made
//! conditional on the state it was computed from (`resourceVersion` preconditions,
//! [`TrackedApi::if_unchanged`](crate::controller::TrackedApi::if_unchanged)) is
//! refused by the server instead, with 409 Conflict, once anyone else has written.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::client::Body;

use super::Claim;
use crate::hold::{Hold, Holds};
use crate::key::ObjectKey;

/// A write not sent because the replica that would have sent it may no longer act for
/// its key: its leadership term ended, or (sharded) the key is no longer its own or
/// its lease may have expired for the other members. Another replica may be
/// reconciling the key now; the write would have overwritten newer state with an old
/// view.
///
/// Writes through a [`Context`](crate::controller::Context) fail with it inside
/// [`kube::Error::Service`]; [`Fenced::find`] tells it apart. It is counted in
/// [`LeadershipHandle::refused_writes`](crate::leader::LeadershipHandle::refused_writes) or
/// [`ShardStats::refused_writes`](crate::shard::ShardStats::refused_writes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("write to the API server not sent: {reason}")]
#[non_exhaustive]
pub struct Fenced {
    /// Why this replica may no longer act, in words.
    pub reason: String,
}

impl Fenced {
    /// The [`Fenced`] that `error` carries, if it is one (a write through a
    /// [`Context`](crate::controller::Context) refused before it was sent).
    pub fn find(error: &kube::Error) -> Option<&Fenced> {
        match error {
            kube::Error::Service(inner) => inner.downcast_ref::<Fenced>(),
            _ => None,
        }
    }

    fn into_kube_error(self) -> kube::Error {
        kube::Error::Service(Box::new(self))
    }
}

/// Whether this replica may still act for one key: open (a controller that runs
/// alone), or as long as a [`Claim`] holds.
#[derive(Clone)]
pub(crate) struct Fence(Option<Arc<dyn Claim>>);

impl fmt::Debug for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("Fence(open)"),
            Some(claim) => f
                .debug_tuple("Fence")
                .field(&claim.describe_loss())
                .finish(),
        }
    }
}

impl Fence {
    /// The fence of a controller that runs alone: it always holds.
    pub(crate) fn open() -> Self {
        Self(None)
    }

    /// A fence that holds while `claim` does.
    pub(crate) fn claimed(claim: impl Claim + 'static) -> Self {
        Self(Some(Arc::new(claim)))
    }

    /// Whether the fence holds now, by the clock.
    pub(crate) fn holds(&self) -> bool {
        self.0.as_ref().is_none_or(|claim| claim.holds())
    }

    /// Whether this fence never breaks (a controller that runs alone): what it guards
    /// need not be wrapped at all.
    pub(crate) fn is_open(&self) -> bool {
        self.0.is_none()
    }

    /// `Ok` if a write may be sent now; else counts the refusal and says why.
    pub(crate) fn check_write(&self) -> Result<(), Fenced> {
        match &self.0 {
            Some(claim) if !claim.holds() => {
                claim.count_refused_write();
                Err(Fenced {
                    reason: claim.describe_loss(),
                })
            }
            _ => Ok(()),
        }
    }

    /// [`check_write`](Self::check_write) for a write that is then sent: counted as on
    /// its way (where the claim's grantor waits for its writes) before it is checked,
    /// so that a grantor that ends the claim and then waits for the writes counted
    /// either waits for this one or has it refused. Keep the guard until the write
    /// is answered.
    pub(crate) fn start_write(&self) -> Result<Option<Hold>, Fenced> {
        let write = self
            .0
            .as_ref()
            .and_then(|claim| claim.writes())
            .map(Holds::hold);
        self.check_write()?;
        Ok(write)
    }

    /// Runs `work` of `key` under the fence: checked before each poll, and watched
    /// while the work waits, so that once the fence no longer holds the work is
    /// dropped where it stands (its next step never runs), at the latest at the drop
    /// deadline. Its output, or `None` when it was dropped (counted and logged).
    pub(crate) async fn run<T>(&self, key: &ObjectKey, work: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            // The fence first: a process resuming from a pause finds both ready.
            biased;
            () = self.broken() => {
                self.dropped(key);
                None
            }
            output = self.guard(key, work) => output,
        }
    }

    /// Resolves once the fence no longer holds, at the latest at its drop deadline;
    /// never for an open fence.
    async fn broken(&self) {
        match &self.0 {
            None => std::future::pending().await,
            Some(claim) => claim.ended().await,
        }
    }

    /// `work`, polled only while the fence holds; dropped (and counted) at the first
    /// poll that finds it broken.
    async fn guard<T>(&self, key: &ObjectKey, work: impl Future<Output = T>) -> Option<T> {
        let mut work = pin!(work);
        let stepped = poll_fn(|cx| {
            if self.holds() {
                work.as_mut().poll(cx).map(Some)
            } else {
                Poll::Ready(None)
            }
        })
        .await;
        if stepped.is_none() {
            self.dropped(key);
        }
        stepped
    }

    /// Counts and logs a reconcile of `key` dropped because the fence broke.
    pub(crate) fn dropped(&self, key: &ObjectKey) {
        if let Some(claim) = &self.0 {
            claim.count_dropped_reconcile();
            tracing::warn!(%key, reason = %claim.describe_loss(), "reconcile dropped before its next step");
        }
    }
}

/// A client whose writes (every method but GET, HEAD and OPTIONS, and the GETs that
/// act: `exec`, `attach`, `portforward`, `proxy`, connection upgrades) are sent only
/// while `fence` holds, checked as each request is handed on; reads always go
/// through. `client` itself for an open fence.
/// `Client::new` gives it kube's own request buffer, a task that ends with the last
/// clone of the client.
pub(crate) fn fenced_client(client: &kube::Client, fence: Fence) -> kube::Client {
    if fence.is_open() {
        return client.clone();
    }
    let namespace = client.default_namespace().to_owned();
    kube::Client::new(
        FencedService {
            client: client.clone(),
            fence,
        },
        namespace,
    )
}

/// The service under [`fenced_client`].
#[derive(Clone)]
struct FencedService {
    client: kube::Client,
    fence: Fence,
}

impl tower_service::Service<http::Request<Body>> for FencedService {
    type Response = http::Response<Body>;
    type Error = kube::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let reads = matches!(
            *request.method(),
            http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
        ) && !connects(&request);
        let write = if reads {
            None
        } else {
            match self.fence.start_write() {
                Ok(write) => write,
                Err(fenced) => {
                    return Box::pin(std::future::ready(Err(fenced.into_kube_error())));
                }
            }
        };
        let client = self.client.clone();
        Box::pin(async move {
            let answer = client.send(request).await;
            drop(write);
            answer
        })
    }
}

/// Whether `request` is a GET with side effects: a connection to a container or a
/// proxied service (`exec`, `attach`, `portforward`, `proxy` subresources, and any
/// request upgrading the connection), which acts as much as a write does.
fn connects(request: &http::Request<Body>) -> bool {
    if request.headers().contains_key(http::header::UPGRADE) {
        return true;
    }
    let mut segments = request.uri().path().split('/').filter(|s| !s.is_empty());
    let skip = match segments.next() {
        Some("api") => 1,
        Some("apis") => 2,
        _ => return false,
    };
    let mut rest: Vec<&str> = segments.skip(skip).collect();
    if rest.first() == Some(&"namespaces") && rest.len() > 2 {
        rest.drain(..2);
    }
    // {resource}/{name}/{subresource}...
    matches!(
        rest.get(2),
        Some(&("exec" | "attach" | "portforward" | "proxy"))
    )
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use tokio::sync::watch;
    use tokio::time::{Instant, sleep};

    use super::*;
    use crate::clock::ClockSource;
    use crate::leader::{LeadershipHandle, State, leadership_tests};

    const SECOND: Duration = Duration::from_secs(1);

    /// A term fence on a state the test drives; the term's drop deadline is 3.5 s
    /// away (renew deadline 3 s, lease expiry 4 s).
    async fn leading() -> (watch::Sender<State>, Fence, LeadershipHandle) {
        let (state, handle) = leadership_tests::handle();
        leadership_tests::lead(&state);
        let term = handle.leading().await.unwrap();
        let fence = Fence::claimed(term.claim());
        (state, fence, handle)
    }

    /// A reconcile that reads, waits `pause`, then "writes" (counts a write).
    async fn read_wait_write(pause: Duration, writes: Arc<AtomicUsize>) -> &'static str {
        sleep(pause).await;
        writes.fetch_add(1, Ordering::SeqCst);
        "done"
    }

    #[tokio::test(start_paused = true)]
    async fn a_step_due_after_the_drop_deadline_never_runs() {
        let (_state, fence, handle) = leading().await;
        let writes = Arc::new(AtomicUsize::new(0));
        // Only the reconcile's own timer: the guard alone decides, at the poll that
        // would run the write, as in a process resuming from a pause.
        let key = ObjectKey::new(None, "a");
        let result = fence
            .guard(&key, read_wait_write(10 * SECOND, Arc::clone(&writes)))
            .await;
        assert_eq!(result, None, "dropped");
        assert_eq!(writes.load(Ordering::SeqCst), 0, "the write ran");
        assert_eq!(handle.dropped_reconciles(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_reconcile_is_dropped_at_the_drop_deadline() {
        let (_state, fence, handle) = leading().await;
        let writes = Arc::new(AtomicUsize::new(0));
        let start = Instant::now();
        let key = ObjectKey::new(None, "a");
        let result = fence
            .run(&key, read_wait_write(60 * SECOND, Arc::clone(&writes)))
            .await;
        assert_eq!(result, None, "dropped");
        assert_eq!(start.elapsed(), 3 * SECOND + SECOND / 2);
        assert_eq!(writes.load(Ordering::SeqCst), 0);
        assert_eq!(handle.dropped_reconciles(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn renewals_keep_a_long_reconcile_going_and_a_new_term_stops_it() {
        let (state, fence, handle) = leading().await;
        let renewing = tokio::spawn({
            let state = state.clone();
            async move {
                loop {
                    sleep(SECOND).await;
                    let now = Instant::now();
                    state.send_modify(|s| {
                        s.renew_deadline = now + 3 * SECOND;
                        s.lease_expiry = now + 4 * SECOND;
                    });
                }
            }
        });
        let writes = Arc::new(AtomicUsize::new(0));
        let key = ObjectKey::new(None, "a");
        let result = fence
            .run(&key, read_wait_write(10 * SECOND, Arc::clone(&writes)))
            .await;
        assert_eq!(result, Some("done"));
        assert_eq!(writes.load(Ordering::SeqCst), 1, "renewed: the write ran");
        assert!(fence.check_write().is_ok());
        // Lost and taken again: a work of the old term may not go on, even though
        // the lease is this replica's again.
        leadership_tests::lead(&state);
        assert!(!fence.holds());
        let result = fence
            .run(&key, read_wait_write(SECOND, Arc::clone(&writes)))
            .await;
        assert_eq!(result, None, "dropped");
        assert_eq!(writes.load(Ordering::SeqCst), 1);
        assert_eq!(handle.dropped_reconciles(), 1);
        renewing.abort();
    }

    /// A service that records the methods it was asked to send and answers 200.
    #[derive(Clone, Default)]
    struct Recording(Arc<Mutex<Vec<http::Method>>>);

    impl tower_service::Service<http::Request<Body>> for Recording {
        type Response = http::Response<Body>;
        type Error = std::convert::Infallible;
        type Future = std::future::Ready<Result<Self::Response, Self::Error>>;

        fn poll_ready(&mut self, _: &mut std::task::Context<'_>) -> Poll<Result<(), Self::Error>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, request: http::Request<Body>) -> Self::Future {
            self.0.lock().unwrap().push(request.method().clone());
            std::future::ready(Ok(http::Response::new(Body::empty())))
        }
    }

    fn request(method: http::Method) -> http::Request<Body> {
        http::Request::builder()
            .method(method)
            .uri("/api/v1/namespaces/default/configmaps/a")
            .body(Body::empty())
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_fenced_client_refuses_writes_past_the_deadline_and_lets_reads_through() {
        let (_state, fence, handle) = leading().await;
        let sent = Recording::default();
        let client = fenced_client(&kube::Client::new(sent.clone(), "default"), fence);
        client.send(request(http::Method::PATCH)).await.unwrap();
        tokio::time::advance(4 * SECOND).await;
        let refused = client.send(request(http::Method::PATCH)).await.unwrap_err();
        let fenced = Fenced::find(&refused).expect("a Fenced error");
        assert!(
            fenced
                .to_string()
                .contains("leadership term 1 of me on Lease lease"),
            "{fenced}"
        );
        assert!(client.send(request(http::Method::DELETE)).await.is_err());
        client.send(request(http::Method::GET)).await.unwrap();
        assert_eq!(
            *sent.0.lock().unwrap(),
            [http::Method::PATCH, http::Method::GET],
            "only the write before the deadline and the read were sent"
        );
        assert_eq!(handle.refused_writes(), 2);
    }

    /// A machine suspended (or a process checkpointed and restored) resumes with its
    /// monotonic clock where it stood: the deadlines seem far. The boot-time and wall
    /// clocks moved on, and the time they missed counts: the term is over.
    #[tokio::test(start_paused = true)]
    async fn a_suspended_machine_finds_its_term_over_by_the_boot_and_wall_clocks() {
        let clocks = crate::clock::TestClocks::new();
        let (state, handle) = leadership_tests::handle_with_clocks(clocks.clone());
        leadership_tests::lead(&state);
        state.send_modify(|s| s.renewed_clocks = Some(clocks.read()));
        let term = handle.leading().await.unwrap();
        let fence = Fence::claimed(term.claim());
        // Suspended for less than the drop deadline (3.5 s after the renewal): still
        // the leader's.
        clocks.suspend(3 * SECOND);
        assert!(fence.holds());
        // Suspended past it, with no tokio time passing at all.
        clocks.suspend(SECOND);
        assert!(!fence.holds(), "the missed time counts toward the deadline");
        assert!(!term.is_leading() && !handle.is_leading());
        assert!(fence.check_write().is_err());
        assert_eq!(handle.refused_writes(), 1);
        let key = ObjectKey::new(None, "a");
        let writes = Arc::new(AtomicUsize::new(0));
        let result = fence
            .run(&key, read_wait_write(Duration::ZERO, Arc::clone(&writes)))
            .await;
        assert_eq!(result, None, "dropped");
        assert_eq!(writes.load(Ordering::SeqCst), 0, "dropped before its write");
        assert_eq!(handle.dropped_reconciles(), 1);
        // A renewal reads the clocks afresh: the term would go on from there.
        state.send_modify(|s| s.renewed_clocks = Some(clocks.read()));
        assert!(fence.holds());
    }

    #[test]
    fn connections_to_containers_and_proxies_are_told_from_reads() {
        let get = |path: &str| {
            http::Request::builder()
                .method(http::Method::GET)
                .uri(path)
                .body(Body::empty())
                .unwrap()
        };
        for path in [
            "/api/v1/namespaces/default/pods/web/exec?command=sh",
            "/api/v1/namespaces/default/pods/web/attach",
            "/api/v1/namespaces/default/pods/web/portforward?ports=80",
            "/api/v1/namespaces/default/pods/web/proxy/healthz",
            "/api/v1/namespaces/default/services/web:80/proxy/",
            "/api/v1/nodes/node-1/proxy/metrics",
            "/apis/example.com/v1/namespaces/default/widgets/w/proxy",
        ] {
            assert!(connects(&get(path)), "{path}");
        }
        for path in [
            "/api/v1/namespaces/default/pods/web",
            "/api/v1/namespaces/default/pods/web/log",
            "/api/v1/namespaces/default/configmaps/exec",
            "/api/v1/namespaces/proxy",
            "/api/v1/namespaces/default/pods?watch=true",
            "/apis/apps/v1/namespaces/default/deployments/proxy/status",
            "/version",
        ] {
            assert!(!connects(&get(path)), "{path}");
        }
        let mut upgrading = get("/api/v1/namespaces/default/pods/web");
        upgrading
            .headers_mut()
            .insert(http::header::UPGRADE, "websocket".parse().unwrap());
        assert!(connects(&upgrading));
    }

    #[tokio::test(start_paused = true)]
    async fn the_fenced_client_refuses_an_exec_past_the_deadline() {
        let (_state, fence, handle) = leading().await;
        let sent = Recording::default();
        let client = fenced_client(&kube::Client::new(sent.clone(), "default"), fence);
        tokio::time::advance(4 * SECOND).await;
        let exec = http::Request::builder()
            .method(http::Method::GET)
            .uri("/api/v1/namespaces/default/pods/web/exec?command=rm")
            .body(Body::empty())
            .unwrap();
        let refused = client.send(exec).await.unwrap_err();
        assert!(Fenced::find(&refused).is_some(), "{refused}");
        assert!(sent.0.lock().unwrap().is_empty(), "nothing was sent");
        assert_eq!(handle.refused_writes(), 1);
    }
}
