//! Scenario 11: a controller sharded across 1, 2 and 3 replica processes (ours only:
//! kube-runtime has no sharding, so its rows have no peer column).
//!
//! For each replica count N (the order rotating from round to round), the driver
//! starts N `bench-worker shard` processes at once ([`crate::shard_worker`]), members
//! of a group of their own (`bench-r{round}-n{N}`, so no Lease of an earlier run
//! counts) on the large collection's namespace, and waits until they are *settled*:
//! every one reads the same N members and their covered keys add up to every object.
//! It then asks each for its report (peak RSS, CPU since start).
//!
//! With 3 replicas it then SIGKILLs one (another one each round) and measures the
//! time until the two survivors read each other as the only members and cover every
//! object again, i.e. the killed one's keys were reconciled by them. A survivor
//! fences the killed member once it has not seen its Lease change for a lease
//! duration, sees a change up to a retry period after it was made and reads again
//! when that lease expires: from the kill, the takeover is bound by the lease
//! duration plus one retry period (plus requests), as `tests/tests/sharding.rs`
//! bounds it. Every run ends with a clean
//! stop (a line `stop`), in which each replica deletes its Lease.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use informer::shard::{GROUP_LABEL, ShardConfig};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::ListParams;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::process::parse_report;
use super::{Bench, LARGE_NAMESPACE, MIB, Samples, rotated, thousands};
use crate::report::{Row, ShardSample, WorkerReport, median};

/// The replica counts compared.
const REPLICA_COUNTS: [usize; 3] = [1, 2, 3];

/// How long starting, syncing and covering every object may take (a debug build on
/// a loaded machine included).
const SETTLE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long a clean stop may take: the member lets reconciles end (up to its
/// hand-off timeout) and deletes its Lease.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

/// What the table says of scenario 11's empty peer columns.
pub(super) const NOTE: &str = "Scenario 11 is ours only (kube-runtime has no sharding): \
     its kube-runtime and ratio columns stay empty, and its rows compare replica counts \
     with each other. Per-replica rows give the largest replica.";

/// One run with `replicas` replicas.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct ShardRun {
    /// The round (0-based).
    round: usize,
    /// Replicas started.
    replicas: usize,
    /// Seconds from starting the replicas until every object was covered.
    covered_seconds: f64,
    /// Each replica's report once every object was covered.
    settled: Vec<ShardSample>,
    /// The identity of the replica killed (with 3 replicas).
    killed: Option<String>,
    /// Seconds from its SIGKILL until the survivors covered every object again.
    takeover_seconds: Option<f64>,
    /// The final reports of the replicas stopped cleanly (the survivors, after a
    /// takeover).
    stopped: Vec<ShardSample>,
}

/// Scenario 11: `--pairs` rounds of 1, 2 and 3 replicas on the large collection.
pub(super) async fn run(
    bench: &Bench<'_>,
    rows: &mut Vec<Row>,
    samples: &mut Samples,
) -> anyhow::Result<()> {
    let client = bench.client.context("no control plane")?;
    let kubeconfig = bench.kubeconfig.context("no control plane")?;
    let objects = Api::<ConfigMap>::namespaced(client.clone(), LARGE_NAMESPACE)
        .list_metadata(&ListParams::default())
        .await?
        .items
        .len();
    let label = format!(
        "11. ConfigMap controller sharded across replicas, {} objects",
        thousands(objects)
    );
    let mut runs = Vec::new();
    for round in 0..bench.options.pairs {
        for i in rotated(round, REPLICA_COUNTS.len()) {
            let replicas = REPLICA_COUNTS[i];
            let run =
                sharded_run(bench.worker, kubeconfig, client, objects, round, replicas).await?;
            let largest = |f: &dyn Fn(&ShardSample) -> f64| largest(&run.settled, f);
            eprintln!(
                "[{label}] round {}: {replicas} replica(s) covered every object in {:.2} s; \
                 largest peak RSS {:.1} MiB, largest CPU {:.2} s; covered {:?}{}",
                round + 1,
                run.covered_seconds,
                largest(&|s| s.peak_rss_kib as f64 / MIB),
                largest(&|s| s.cpu_seconds),
                run.settled.iter().map(|s| s.covered).collect::<Vec<_>>(),
                run.takeover_seconds
                    .map(|s| format!("; takeover after SIGKILL {s:.2} s"))
                    .unwrap_or_default()
            );
            runs.push(run);
        }
    }
    rows.extend(shard_rows(&label, &runs));
    samples.shard = runs;
    Ok(())
}

/// One run: `replicas` replicas until settled, their reports, the takeover after a
/// SIGKILL when there are 3, and a clean stop.
async fn sharded_run(
    worker: &Path,
    kubeconfig: &Path,
    client: &kube::Client,
    objects: usize,
    round: usize,
    replicas: usize,
) -> anyhow::Result<ShardRun> {
    let group = format!("bench-r{round}-n{replicas}");
    let started = Instant::now();
    let mut fleet = Fleet::start(worker, kubeconfig, &group, replicas)?;
    fleet
        .wait_settled(objects, started + SETTLE_TIMEOUT)
        .await
        .with_context(|| format!("{replicas} replica(s) settling"))?;
    let covered_seconds = started.elapsed().as_secs_f64();
    let settled = fleet.reports().await?;
    let (mut killed, mut takeover_seconds) = (None, None);
    if replicas == 3 {
        let victim = round % replicas;
        killed = Some(fleet.replicas[victim].identity.clone());
        let at = fleet.kill(victim).await?;
        fleet
            .wait_settled(objects, at + SETTLE_TIMEOUT)
            .await
            .context("the survivors taking over")?;
        takeover_seconds = Some(at.elapsed().as_secs_f64());
    }
    let stopped = fleet.stop().await?;
    // The clean stops deleted their Leases, the survivors fenced the killed one's.
    let left = Api::<Lease>::namespaced(client.clone(), LARGE_NAMESPACE)
        .list_metadata(&ListParams::default().labels(&format!("{GROUP_LABEL}={group}")))
        .await?
        .items;
    if !left.is_empty() {
        eprintln!(
            "[bench] {} Lease(s) of group {group} left after the replicas stopped",
            left.len()
        );
    }
    Ok(ShardRun {
        round,
        replicas,
        covered_seconds,
        settled,
        killed,
        takeover_seconds,
        stopped,
    })
}

/// A replica's last `state` line: covered keys and members.
type State = (usize, Vec<String>);

/// What a replica said on stdout.
#[derive(Debug)]
enum Said {
    /// `state <covered> <members>`.
    State {
        covered: usize,
        members: Vec<String>,
    },
    /// A JSON report.
    Report(ShardSample),
    /// Its stdout closed.
    Exited,
}

/// One replica process and what the driver knows of it.
struct Replica {
    identity: String,
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    /// Its last `state` line: covered keys and members.
    state: Option<State>,
    /// Reports received and not yet taken.
    reports: Vec<ShardSample>,
    /// Killed on purpose.
    killed: bool,
    /// Its stdout closed.
    exited: bool,
}

/// The replicas of one run.
struct Fleet {
    replicas: Vec<Replica>,
    said: mpsc::UnboundedReceiver<(usize, Said)>,
}

impl Fleet {
    /// Starts `count` replicas of `group` at once.
    fn start(worker: &Path, kubeconfig: &Path, group: &str, count: usize) -> anyhow::Result<Self> {
        let (tell, said) = mpsc::unbounded_channel();
        let mut replicas = Vec::with_capacity(count);
        for i in 0..count {
            let identity = format!("replica-{i}");
            let mut child = tokio::process::Command::new(worker)
                .args(["shard", LARGE_NAMESPACE, group, &identity])
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
            Said::State { covered, members } => replica.state = Some((covered, members)),
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
    fn settled(&self, objects: usize) -> bool {
        let running = self.replicas.iter().filter(|r| !r.killed);
        settled(
            running.map(|r| (r.identity.as_str(), r.state.as_ref())),
            objects,
        )
    }

    /// Waits until [`settled`](Self::settled).
    async fn wait_settled(&mut self, objects: usize, deadline: Instant) -> anyhow::Result<()> {
        while !self.settled(objects) {
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

    /// Asks every running replica for its report and returns them.
    async fn reports(&mut self) -> anyhow::Result<Vec<ShardSample>> {
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
    async fn kill(&mut self, i: usize) -> anyhow::Result<Instant> {
        let replica = &mut self.replicas[i];
        replica.killed = true;
        let at = Instant::now();
        replica.child.start_kill()?;
        replica.child.wait().await?;
        Ok(at)
    }

    /// Stops the running replicas cleanly (each deletes its Lease) and returns their
    /// final reports.
    async fn stop(mut self) -> anyhow::Result<Vec<ShardSample>> {
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
                Said::State { .. } => {}
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
        let (covered, members) = state.split_once(' ').unwrap_or((state, ""));
        return Ok(Said::State {
            covered: covered
                .parse()
                .with_context(|| format!("a state line {line:?}"))?,
            members: members
                .split(',')
                .filter(|m| !m.is_empty())
                .map(str::to_owned)
                .collect(),
        });
    }
    match parse_report(line)? {
        WorkerReport::Shard(sample) => Ok(Said::Report(sample)),
        other => bail!("a report of another mode: {other:?}"),
    }
}

/// Whether the replicas (identity, last state) all read exactly themselves as the
/// members and cover `objects` between them. Under the same members their shards are
/// disjoint, so the sum counts no key twice.
fn settled<'a>(
    replicas: impl Iterator<Item = (&'a str, Option<&'a State>)> + Clone,
    objects: usize,
) -> bool {
    let mut live: Vec<&str> = replicas.clone().map(|(identity, _)| identity).collect();
    live.sort_unstable();
    let mut covered = 0;
    for (_, state) in replicas {
        match state {
            Some((count, members)) if *members == live => covered += count,
            _ => return false,
        }
    }
    covered == objects
}

/// The largest of `f` over `samples`.
fn largest(samples: &[ShardSample], f: &dyn Fn(&ShardSample) -> f64) -> f64 {
    samples.iter().map(f).fold(f64::NAN, f64::max)
}

fn shard_rows(label: &str, runs: &[ShardRun]) -> Vec<Row> {
    let row = |metric: String, ours: f64| Row {
        scenario: label.to_owned(),
        metric,
        ours,
        theirs: None,
        ..Row::default()
    };
    let with = |replicas: usize| runs.iter().filter(move |r| r.replicas == replicas);
    let replicas_text = |n: usize| match n {
        1 => "1 replica".to_owned(),
        n => format!("{n} replicas"),
    };
    let peak = |run: &ShardRun| largest(&run.settled, &|s| s.peak_rss_kib as f64 / MIB);
    let mut rows = Vec::new();
    for n in REPLICA_COUNTS {
        rows.push(row(
            format!("peak RSS per replica, {} (MiB)", replicas_text(n)),
            median(with(n).map(peak)),
        ));
    }
    for n in REPLICA_COUNTS.into_iter().filter(|&n| n > 1) {
        // Within each round, against that round's single replica.
        let ratios = runs.iter().filter(|r| r.replicas == n).filter_map(|run| {
            let alone = runs
                .iter()
                .find(|r| r.round == run.round && r.replicas == 1)?;
            Some(peak(run) / peak(alone))
        });
        rows.push(row(
            format!(
                "peak RSS per replica, {} / 1 replica (goal: about 1/{n})",
                replicas_text(n)
            ),
            median(ratios),
        ));
    }
    for n in REPLICA_COUNTS {
        rows.push(row(
            format!("start to every object reconciled, {} (s)", replicas_text(n)),
            median(with(n).map(|r| r.covered_seconds)),
        ));
    }
    for n in REPLICA_COUNTS {
        rows.push(row(
            format!(
                "CPU per replica, start to every object reconciled, {} (s)",
                replicas_text(n)
            ),
            median(with(n).map(|r| largest(&r.settled, &|s| s.cpu_seconds))),
        ));
    }
    let config = ShardConfig::new(LARGE_NAMESPACE, "bench");
    let (lease, retry) = (config.lease_duration, config.retry_period);
    rows.push(row(
        format!(
            "takeover after SIGKILL, 3 replicas to 2 (s; bound {} s: lease {} s + a retry \
             period of {} s, plus requests)",
            (lease + retry).as_secs_f64(),
            lease.as_secs_f64(),
            retry.as_secs_f64()
        ),
        median(with(3).filter_map(|r| r.takeover_seconds)),
    ));
    rows.push(row(
        "peak RSS per survivor after the takeover (MiB)".to_owned(),
        median(with(3).map(|r| largest(&r.stopped, &|s| s.peak_rss_kib as f64 / MIB))),
    ));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(covered: usize, members: &str) -> Option<State> {
        let said = parse_line(&format!("state {covered} {members}")).unwrap();
        let Said::State { covered, members } = said else {
            panic!("not a state: {said:?}");
        };
        Some((covered, members))
    }

    fn is_settled(replicas: &[(&str, Option<State>)], objects: usize) -> bool {
        settled(replicas.iter().map(|(id, s)| (*id, s.as_ref())), objects)
    }

    #[test]
    fn settled_when_all_read_the_live_members_and_cover_everything() {
        let both = "replica-0,replica-1";
        let settled_pair = [
            ("replica-1", state(60, both)),
            ("replica-0", state(40, both)),
        ];
        assert!(is_settled(&settled_pair, 100));
        // Short of the collection.
        assert!(!is_settled(&settled_pair, 101));
        // One has not said anything yet.
        assert!(!is_settled(
            &[("replica-0", state(100, "replica-0")), ("replica-1", None)],
            100
        ));
        // Counts adding up under members that differ (one still alone) do not count.
        assert!(!is_settled(
            &[
                ("replica-0", state(100, "replica-0")),
                ("replica-1", state(0, both)),
            ],
            100
        ));
        // A survivor still reading the killed member waits on.
        let three = "replica-0,replica-1,replica-2";
        assert!(!is_settled(
            &[
                ("replica-1", state(50, three)),
                ("replica-2", state(50, "replica-1,replica-2")),
            ],
            100
        ));
        // Empty members before the first read.
        assert_eq!(state(0, ""), Some((0, Vec::new())));
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
