//! Replica processes the driver talks to while they run: scenario 11's sharded
//! controller ([`crate::shard_worker`]) and scenario 14's fleet sharded by cluster
//! ([`crate::fleet_worker`]).
//!
//! Each replica is a `bench-worker` process that prints a `state` line whenever what
//! it covers changes, answers `report` on stdin with a JSON [`ShardSample`], and
//! stops cleanly (deleting its Lease) on `stop`. A state line reads
//! `state <covered> <members> [<clusters>]`: the keys it reconciled since they became
//! its own, the members of its shard group as it last read them, and (fleet replicas)
//! the clusters it engaged, both lists comma-separated.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use informer::shard::GROUP_LABEL;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::api::ListParams;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::process::parse_report;
use crate::report::{ShardSample, WorkerReport};

/// How long starting, syncing and covering every object may take (a debug build on
/// a loaded machine included).
pub(super) const SETTLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a clean stop may take: the member lets reconciles end (up to its
/// hand-off timeout) and deletes its Lease.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// A replica's last `state` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    /// Keys it reconciled since they became its own.
    pub(super) covered: usize,
    /// The members of its group, as it last read them (sorted).
    pub(super) members: Vec<String>,
    /// The clusters it engaged (fleet replicas; empty for scenario 11's).
    pub(super) clusters: Vec<String>,
}

/// What a replica said on stdout.
#[derive(Debug)]
enum Said {
    /// A `state` line.
    State(State),
    /// A JSON report.
    Report(ShardSample),
    /// Its stdout closed.
    Exited,
}

/// One replica process and what the driver knows of it.
pub(super) struct Replica {
    /// Its identity in the shard group (`replica-{i}`).
    pub(super) identity: String,
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    /// Its last `state` line.
    pub(super) state: Option<State>,
    /// Reports received and not yet taken.
    reports: Vec<ShardSample>,
    /// Killed on purpose.
    killed: bool,
    /// Its stdout closed.
    exited: bool,
}

/// The replicas of one run.
pub(super) struct Replicas {
    /// Every replica started, killed ones included.
    pub(super) replicas: Vec<Replica>,
    said: mpsc::UnboundedReceiver<(usize, Said)>,
}

impl Replicas {
    /// Starts `count` replicas at once, `replica-0` to `replica-{count - 1}`, each
    /// `worker` with the arguments `args` gives for its identity.
    pub(super) fn start(
        worker: &Path,
        kubeconfig: &Path,
        count: usize,
        args: impl Fn(&str) -> Vec<String>,
    ) -> anyhow::Result<Self> {
        Self::start_each(worker, &vec![kubeconfig.to_path_buf(); count], args)
    }

    /// [`start`](Self::start), replica `i` with the kubeconfig `kubeconfigs[i]` (one
    /// replica each).
    pub(super) fn start_each(
        worker: &Path,
        kubeconfigs: &[std::path::PathBuf],
        args: impl Fn(&str) -> Vec<String>,
    ) -> anyhow::Result<Self> {
        let count = kubeconfigs.len();
        let (tell, said) = mpsc::unbounded_channel();
        let mut replicas = Vec::with_capacity(count);
        for (i, kubeconfig) in kubeconfigs.iter().enumerate() {
            let identity = format!("replica-{i}");
            let mut child = tokio::process::Command::new(worker)
                .args(args(&identity))
                .env("KUBECONFIG", kubeconfig)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()?;
            let stdin = child.stdin.take().context("worker stdin")?;
            let stdout = child.stdout.take().context("worker stdout")?;
            tokio::spawn(relay(i, stdout, tell.clone()));
            replicas.push(Replica {
                identity,
                child,
                stdin,
                state: None,
                reports: Vec::new(),
                killed: false,
                exited: false,
            });
        }
        Ok(Self { replicas, said })
    }

    /// The replicas not killed.
    fn running(&mut self) -> impl Iterator<Item = &mut Replica> {
        self.replicas.iter_mut().filter(|r| !r.killed)
    }

    /// Records what the next replica says, waiting until `deadline`.
    async fn receive(&mut self, deadline: Instant) -> anyhow::Result<()> {
        let (i, said) = tokio::time::timeout_at(deadline, self.said.recv())
            .await
            .context("timed out")?
            .context("no replica left to read")?;
        let replica = &mut self.replicas[i];
        match said {
            Said::State(state) => replica.state = Some(state),
            Said::Report(sample) => replica.reports.push(sample),
            Said::Exited => replica.exited = true,
        }
        if replica.exited && !replica.killed {
            let status = replica.child.wait().await?;
            bail!(
                "{} exited before it was stopped: {status}",
                replica.identity
            );
        }
        Ok(())
    }

    /// Whether the running replicas are [`settled`].
    fn settled(&self, objects: usize, clusters: usize) -> bool {
        let running = self.replicas.iter().filter(|r| !r.killed);
        settled(
            running.map(|r| (r.identity.as_str(), r.state.as_ref())),
            objects,
            clusters,
        )
    }

    /// Waits until [`settled`](Self::settled): the running replicas read each other
    /// as the members, cover `objects` between them and (with `clusters` above 0)
    /// split that many clusters among them.
    pub(super) async fn wait_settled(
        &mut self,
        objects: usize,
        clusters: usize,
        deadline: Instant,
    ) -> anyhow::Result<()> {
        while !self.settled(objects, clusters) {
            self.receive(deadline).await.with_context(|| {
                let states: Vec<String> = self
                    .replicas
                    .iter()
                    .filter(|r| !r.killed)
                    .map(|r| format!("{}: {:?}", r.identity, r.state))
                    .collect();
                format!("waiting for {objects} objects covered; last states {states:?}")
            })?;
        }
        Ok(())
    }

    /// Waits until settled on `objects` (see [`wait_settled`](Self::wait_settled)), at
    /// most [`SETTLE_TIMEOUT`] after `started`; the seconds since `started`.
    pub(super) async fn settle(
        &mut self,
        objects: usize,
        started: Instant,
        what: &str,
    ) -> anyhow::Result<f64> {
        self.wait_settled(objects, 0, started + SETTLE_TIMEOUT)
            .await
            .with_context(|| format!("{what} settling"))?;
        Ok(started.elapsed().as_secs_f64())
    }

    /// Asks every running replica for its report and returns them.
    pub(super) async fn reports(&mut self) -> anyhow::Result<Vec<ShardSample>> {
        for replica in self.running() {
            replica.reports.clear();
            replica.stdin.write_all(b"report\n").await?;
            replica.stdin.flush().await?;
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while self.running().any(|r| r.reports.is_empty()) {
            self.receive(deadline)
                .await
                .context("waiting for reports")?;
        }
        Ok(self.running().map(|r| r.reports.remove(0)).collect())
    }

    /// SIGKILLs replica `i`; returns when the signal was sent.
    pub(super) async fn kill(&mut self, i: usize) -> anyhow::Result<Instant> {
        let replica = &mut self.replicas[i];
        replica.killed = true;
        let at = Instant::now();
        replica.child.start_kill()?;
        replica.child.wait().await?;
        Ok(at)
    }

    /// Stops the running replicas cleanly (each deletes its Lease) and returns their
    /// final reports.
    pub(super) async fn stop(mut self) -> anyhow::Result<Vec<ShardSample>> {
        for replica in self.running() {
            replica.reports.clear();
            replica.stdin.write_all(b"stop\n").await?;
            replica.stdin.flush().await?;
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while self.running().any(|r| !r.exited) {
            // An exit is what is waited for here, not an error.
            let (i, said) = tokio::time::timeout_at(deadline, self.said.recv())
                .await
                .context("timed out stopping the replicas")?
                .context("no replica left to read")?;
            let replica = &mut self.replicas[i];
            match said {
                Said::Report(sample) => replica.reports.push(sample),
                Said::Exited => replica.exited = true,
                Said::State(_) => {}
            }
        }
        let mut reports = Vec::new();
        for replica in self.running() {
            let status = replica.child.wait().await?;
            if !status.success() {
                bail!("{} failed: {status}", replica.identity);
            }
            reports.push(
                replica
                    .reports
                    .pop()
                    .with_context(|| format!("{} stopped without a report", replica.identity))?,
            );
        }
        Ok(reports)
    }
}

/// Says on stderr if Leases of `group` are left in `namespace` once its replicas
/// stopped (each clean stop deletes its own; survivors fence a killed one's).
pub(super) async fn check_leases_gone(
    client: &kube::Client,
    namespace: &str,
    group: &str,
) -> anyhow::Result<()> {
    let left = Api::<Lease>::namespaced(client.clone(), namespace)
        .list_metadata(&ListParams::default().labels(&format!("{GROUP_LABEL}={group}")))
        .await?
        .items;
    if !left.is_empty() {
        eprintln!(
            "[bench] {} Lease(s) of group {group} left after the replicas stopped",
            left.len()
        );
    }
    Ok(())
}

/// Passes replica `i`'s lines on as [`Said`]s until its stdout closes.
async fn relay(
    i: usize,
    stdout: tokio::process::ChildStdout,
    tell: mpsc::UnboundedSender<(usize, Said)>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match parse_line(&line) {
            Ok(said) => {
                let _ = tell.send((i, said));
            }
            Err(error) => eprintln!("[bench] replica-{i}: {error:#}"),
        }
    }
    let _ = tell.send((i, Said::Exited));
}

/// Reads a `state` line or a JSON report.
fn parse_line(line: &str) -> anyhow::Result<Said> {
    if let Some(state) = line.strip_prefix("state ") {
        let mut fields = state.splitn(3, ' ');
        let covered = fields.next().unwrap_or_default();
        let list = |field: Option<&str>| -> Vec<String> {
            field
                .unwrap_or_default()
                .split(',')
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect()
        };
        return Ok(Said::State(State {
            covered: covered
                .parse()
                .with_context(|| format!("a state line {line:?}"))?,
            members: list(fields.next()),
            clusters: list(fields.next()),
        }));
    }
    match parse_report(line)? {
        WorkerReport::Shard(sample) => Ok(Said::Report(sample)),
        other => bail!("a report of another mode: {other:?}"),
    }
}

/// Whether the replicas (identity, last state) all read exactly themselves as the
/// members, cover `objects` between them and, with `clusters` above 0, engaged
/// clusters that split that many among them (each engaged by exactly one). Under the
/// same members their shards are disjoint, so the sum counts no key twice.
fn settled<'a>(
    replicas: impl Iterator<Item = (&'a str, Option<&'a State>)> + Clone,
    objects: usize,
    clusters: usize,
) -> bool {
    let mut live: Vec<&str> = replicas.clone().map(|(identity, _)| identity).collect();
    live.sort_unstable();
    let (mut covered, mut engaged) = (0, Vec::new());
    for (_, state) in replicas {
        match state {
            Some(state) if state.members == live => {
                covered += state.covered;
                engaged.extend(state.clusters.iter().map(String::as_str));
            }
            _ => return false,
        }
    }
    let engaged_count = engaged.len();
    engaged.sort_unstable();
    engaged.dedup();
    covered == objects && engaged_count == clusters && engaged.len() == clusters
}

/// The largest of `f` over `samples`.
pub(super) fn largest(samples: &[ShardSample], f: &dyn Fn(&ShardSample) -> f64) -> f64 {
    samples.iter().map(f).fold(f64::NAN, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(covered: usize, members: &str) -> Option<State> {
        fleet_state(covered, members, "")
    }

    fn fleet_state(covered: usize, members: &str, clusters: &str) -> Option<State> {
        let said = parse_line(&format!("state {covered} {members} {clusters}")).unwrap();
        let Said::State(state) = said else {
            panic!("not a state: {said:?}");
        };
        Some(state)
    }

    fn is_settled(replicas: &[(&str, Option<State>)], objects: usize, clusters: usize) -> bool {
        settled(
            replicas.iter().map(|(id, s)| (*id, s.as_ref())),
            objects,
            clusters,
        )
    }

    #[test]
    fn settled_when_all_read_the_live_members_and_cover_everything() {
        let both = "replica-0,replica-1";
        let settled_pair = [
            ("replica-1", state(60, both)),
            ("replica-0", state(40, both)),
        ];
        assert!(is_settled(&settled_pair, 100, 0));
        // Short of the collection.
        assert!(!is_settled(&settled_pair, 101, 0));
        // One has not said anything yet.
        assert!(!is_settled(
            &[("replica-0", state(100, "replica-0")), ("replica-1", None)],
            100,
            0
        ));
        // Counts adding up under members that differ (one still alone) do not count.
        assert!(!is_settled(
            &[
                ("replica-0", state(100, "replica-0")),
                ("replica-1", state(0, both)),
            ],
            100,
            0
        ));
        // A survivor still reading the killed member waits on.
        let three = "replica-0,replica-1,replica-2";
        assert!(!is_settled(
            &[
                ("replica-1", state(50, three)),
                ("replica-2", state(50, "replica-1,replica-2")),
            ],
            100,
            0
        ));
        // Empty members before the first read.
        assert_eq!(
            state(0, ""),
            Some(State {
                covered: 0,
                members: Vec::new(),
                clusters: Vec::new()
            })
        );
    }

    #[test]
    fn a_fleet_is_settled_once_its_clusters_are_split_among_the_replicas() {
        let both = "replica-0,replica-1";
        let split = [
            ("replica-0", fleet_state(60, both, "c0,c1,c2")),
            ("replica-1", fleet_state(40, both, "c3,c4")),
        ];
        assert!(is_settled(&split, 100, 5));
        assert!(!is_settled(&split, 100, 6), "a cluster engaged by none");
        // A cluster engaged by both (one of them not yet told it moved).
        let twice = [
            ("replica-0", fleet_state(60, both, "c0,c1,c2")),
            ("replica-1", fleet_state(40, both, "c2,c3,c4")),
        ];
        assert!(!is_settled(&twice, 100, 5));
        // Clusters before members: a state with no members yet.
        assert_eq!(
            fleet_state(0, "", "c0").map(|s| (s.members.len(), s.clusters)),
            Some((0, vec!["c0".to_owned()]))
        );
    }

    #[test]
    fn reads_reports_and_rejects_garbage() {
        let sample = ShardSample {
            identity: "replica-0".into(),
            members: 1,
            covered: 3,
            reconciles: 4,
            seconds: 1.0,
            cpu_seconds: 0.5,
            baseline_rss_kib: 1,
            peak_rss_kib: 2,
            rss_kib: 2,
            bytes_received: 0,
            objects_decoded: 0,
            objects_filtered_out: 0,
            selector_bytes: 0,
        };
        let line = serde_json::to_string(&WorkerReport::Shard(sample)).unwrap();
        assert!(matches!(
            parse_line(&line),
            Ok(Said::Report(ShardSample { covered: 3, .. }))
        ));
        assert!(parse_line("state x replica-0").is_err());
        assert!(parse_line("synced").is_err());
    }
}
