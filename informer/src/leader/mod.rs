//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's
//! `tools/leaderelection`: several replicas of a controller run, one of them works.
//!
//! The API server is the referee. Every replica runs a [`LeaderElector`] on the same
//! Lease; the Lease's spec is the election record (`holderIdentity`,
//! `leaseDurationSeconds`, `acquireTime`, `renewTime`, `leaseTransitions`).
//!
//! # The protocol
//!
//! - **Acquire.** A candidate reads the Lease every retry period (2 s, plus up to
//!   [`JITTER_FACTOR`] times as much again, so candidates do not move in step). It
//!   takes the lease if nobody holds it, or if the record has not changed for the
//!   holder's lease duration (15 s) *as this candidate observed it*; taking over
//!   counts one more transition. A Lease that does not exist yet is created.
//! - **Renew.** The leader rewrites the record (a new `renewTime`) every retry
//!   period. If no renewal succeeds within the renew deadline (10 s) of the last
//!   successful one, it stops leading; if a read shows another holder, at once.
//! - **Optimistic concurrency.** Every update carries the resourceVersion of the
//!   Lease as last read or written: of two candidates racing for an expired lease,
//!   the API server lets one write and answers the other 409 Conflict.
//! - **Release.** On a clean shutdown the leader waits until the work under its
//!   [`Term`] has stopped, then writes a record with no holder (keeping the
//!   transitions, client-go's `ReleaseOnCancel`), so a standby takes over at its
//!   next try instead of after a full lease duration.
//!
//! # Why the leader stops in time
//!
//! Nothing may run as leader on two replicas at once. Time is measured the safe way
//! round on both sides. The leader counts its renew deadline from the moment it
//! *sent* its last successful renewal; a standby counts the lease duration from the
//! moment it *received* the record carrying that renewal, which is later. With
//! `renew_deadline < lease_duration`, the leader's term ends (and
//! [`Term::lost`] resolves) before any standby may take over, and work still in
//! flight gets until [`Term::lost`]'s instant (sent + lease duration), then must be
//! dropped. The [`Controller`](crate::controller::Controller) does exactly that.
//!
//! # Failure cases
//!
//! - **Clock skew.** The timestamps in the Lease come from other machines' clocks
//!   and are never compared with ours: a candidate only notices whether the record
//!   *changed*, and times the lease on its own monotonic clock from when it saw the
//!   change. Skew of any size is harmless; a difference in clock *rate* is not (a
//!   leader whose clock runs slow renews late). A controller's work under a term
//!   stops at the drop deadline, halfway from the renew deadline to the lease's
//!   expiry, so the rate difference tolerated is `lease_duration` over that (15 s /
//!   12.5 s = 1.2 with the defaults).
//! - **Partition.** A leader cut off from the API server cannot renew: its term ends
//!   at the renew deadline, before the others (which still see the server) observe
//!   the lease expire. Each request is bounded (`max(1 s, renew_deadline / 2)`, as
//!   client-go's lock clients are), so a silent connection cannot hold the leader
//!   past its deadline.
//! - **Paused process.** A leader stopped for longer than the lease (a debugger,
//!   SIGSTOP, a suspended VM) may resume after a standby took over. When it resumes,
//!   its deadline has passed: [`Term::is_leading`] checks the clock and
//!   [`Term::lost`] fires at once, but a step already past those checks runs to its
//!   next await. The monotonic clock does not count a suspended VM's time: the checks
//!   add what `CLOCK_BOOTTIME` and the wall clock counted beyond it since the last
//!   renewal. A controller checks before every step of a reconcile and every write
//!   ([`Controller::leader_election`](crate::controller::Controller::leader_election));
//!   a write already sent can still land late, so make writes that must never come
//!   from a deposed leader conditional (a resourceVersion precondition).
//! - **Crash.** A killed leader releases nothing: a standby takes over once the
//!   lease duration has passed since it saw the last renewal, within one retry.
//!
//! With the `metrics` feature, `Metrics::observe_leader_election` (or a controller
//! with metrics) exports client-go's `leader_election_master_status` and
//! `leader_election_slowpath_total` ([`LeadershipHandle::slow_path_renewals`]).
//!
//! ```no_run
//! use informer::leader::{LeaderElectionConfig, LeaderElector};
//!
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let elector = LeaderElector::new(
//!     client,
//!     LeaderElectionConfig::default().lease("default", "backup-operator"),
//! )?;
//! let mut handle = elector.handle();
//! let election = tokio::spawn(elector.run(informer::shutdown_signal()));
//! while let Some(leadership) = handle.changed().await {
//!     println!("now: {leadership:?}");
//! }
//! election.await?;
//! # Ok(())
//! # }
//! ```

mod config;
mod elector;
mod error;
mod leadership;
mod lease_lock;
mod record;
mod state;
mod term_claim;
mod timings;

pub use config::LeaderElectionConfig;
pub use elector::LeaderElector;
pub use error::LeaderError;
#[cfg(test)]
pub(crate) use leadership::tests as leadership_tests;
pub use leadership::{LeadershipHandle, Term};
pub(crate) use record::wall_now;
pub use state::Leadership;
#[cfg(test)]
pub(crate) use state::State;
pub(crate) use timings::drop_deadline;
pub use timings::{JITTER_FACTOR, LeaseTimings};
