//! Replica processes (`elector_replica`, `shard_replica`) of the multi-process tests,
//! and what their logs show. Included by those test binaries with `#[path]`, not
//! through `common`.
// Each test binary uses part of it.
#![allow(unreachable_pub, dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The timings every replica runs with: short, so a test takes seconds, and
/// valid for client-go's rules (lease > renew > retry * 1.2). The bounds tests assert
/// come from these.
pub const LEASE: Duration = Duration::from_secs(4);
pub const RENEW: Duration = Duration::from_secs(3);
pub const RETRY: Duration = Duration::from_millis(500);
/// How long one reconcile takes.
pub const RECONCILE: Duration = Duration::from_millis(300);
/// The jitter a candidate adds to its retry period (client-go's JitterFactor).
pub const JITTER: f64 = informer::leader::JITTER_FACTOR;
/// Room for what the bounds do not count: starting requests, scheduling processes
/// on a loaded machine.
pub const SLACK: Duration = Duration::from_secs(1);

/// Microseconds since the Unix epoch: the replicas' and the test's common clock.
pub type Micros = u128;

pub fn now_micros() -> Micros {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

pub fn micros(duration: Duration) -> Micros {
    duration.as_micros()
}

/// One line a replica printed.
#[derive(Debug, Clone)]
pub struct Line {
    pub at: Micros,
    pub identity: String,
    pub event: String,
    pub detail: String,
}

/// The replicas of one test, in one namespace.
pub struct Replicas {
    binary: &'static str,
    /// Arguments every replica gets (besides `identity` and `server`).
    args: Vec<String>,
    kubeconfig: PathBuf,
    logs_dir: PathBuf,
    lines: Arc<Mutex<Vec<Line>>>,
    children: HashMap<String, Child>,
    /// The thread reading each replica's stdout into `lines`: done once the replica
    /// exited and its last lines (its `stats`) were read.
    readers: HashMap<String, std::thread::JoinHandle<()>>,
    /// When each killed replica died: its reconciles in flight ended then.
    killed: HashMap<String, Micros>,
}

impl Replicas {
    /// Replicas of leader-elected controllers (`elector_replica`) on the Lease
    /// `replicas` in `namespace`.
    pub fn elected(namespace: &str, kubeconfig: &Path) -> Self {
        Self::new(
            env!("CARGO_BIN_EXE_elector_replica"),
            namespace,
            kubeconfig,
            RECONCILE,
            vec!["lease=replicas".to_owned()],
        )
    }

    /// Replicas of sharded controllers (`shard_replica`) of group `replicas` in
    /// `namespace`, with `workers` workers each taking `reconcile` per key, and
    /// `handoff` as hand-off timeout.
    pub fn sharded(
        namespace: &str,
        kubeconfig: &Path,
        workers: usize,
        reconcile: Duration,
        handoff: Duration,
    ) -> Self {
        Self::new(
            env!("CARGO_BIN_EXE_shard_replica"),
            namespace,
            kubeconfig,
            reconcile,
            vec![
                "group=replicas".to_owned(),
                format!("workers={workers}"),
                format!("handoff-ms={}", handoff.as_millis()),
            ],
        )
    }

    /// Replicas of a fleet controller sharded by cluster (`fleet_replica`) of group
    /// `replicas` in `namespace`, over `clusters` (each the kubeconfig's cluster, its
    /// ConfigMaps in `<namespace>-<cluster>`), with `workers` workers per cluster
    /// taking `reconcile` per key, and `handoff` as hand-off timeout.
    pub fn fleet(
        namespace: &str,
        kubeconfig: &Path,
        clusters: &[&str],
        workers: usize,
        reconcile: Duration,
        handoff: Duration,
    ) -> Self {
        Self::new(
            env!("CARGO_BIN_EXE_fleet_replica"),
            namespace,
            kubeconfig,
            reconcile,
            vec![
                "group=replicas".to_owned(),
                format!("workers={workers}"),
                format!("handoff-ms={}", handoff.as_millis()),
                format!("clusters={}", clusters.join(",")),
            ],
        )
    }

    fn new(
        binary: &'static str,
        namespace: &str,
        kubeconfig: &Path,
        reconcile: Duration,
        mut args: Vec<String>,
    ) -> Self {
        let logs_dir = std::env::temp_dir().join(format!("informer-replicas-{namespace}"));
        std::fs::create_dir_all(&logs_dir).unwrap();
        let ms = |d: Duration| d.as_millis().to_string();
        args.extend([
            format!("namespace={namespace}"),
            format!("lease-ms={}", ms(LEASE)),
            format!("renew-ms={}", ms(RENEW)),
            format!("retry-ms={}", ms(RETRY)),
            format!("reconcile-ms={}", ms(reconcile)),
        ]);
        Self {
            binary,
            args,
            kubeconfig: kubeconfig.to_owned(),
            logs_dir,
            lines: Arc::default(),
            children: HashMap::new(),
            readers: HashMap::new(),
            killed: HashMap::new(),
        }
    }

    /// Gives every replica started from now on the argument `arg` (`name=value`).
    pub fn with_arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_owned());
        self
    }

    /// SIGSTOP: the process freezes as a paused VM or a stalled runtime would, its
    /// clocks running on. Returns when it was sent.
    pub fn pause(&mut self, identity: &str) -> Micros {
        self.signal(identity, "-STOP")
    }

    /// SIGCONT: a paused process resumes. Returns when it was sent.
    pub fn resume(&mut self, identity: &str) -> Micros {
        self.signal(identity, "-CONT")
    }

    fn signal(&mut self, identity: &str, signal: &str) -> Micros {
        let pid = self.children[identity].id();
        let at = now_micros();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal} {identity}");
        at
    }

    /// Starts replica `identity`, talking to `server` if given (a fault proxy),
    /// else to the kubeconfig's server.
    pub fn spawn(&mut self, identity: &str, server: Option<&str>) {
        let stderr = std::fs::File::create(self.logs_dir.join(format!("{identity}.log"))).unwrap();
        let mut command = Command::new(self.binary);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .args(&self.args)
            .arg(format!("identity={identity}"))
            .stdout(Stdio::piped())
            .stderr(stderr);
        if let Some(server) = server {
            command.arg(format!("server={server}"));
        }
        let mut child = command.spawn().expect("the replica binary starts");
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::clone(&self.lines);
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let mut parts = line.splitn(4, ' ');
                let (Some(at), Some(identity), Some(event)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                lines.lock().unwrap().push(Line {
                    at: at.parse().unwrap(),
                    identity: identity.to_owned(),
                    event: event.to_owned(),
                    detail: parts.next().unwrap_or_default().to_owned(),
                });
            }
        });
        self.children.insert(identity.to_owned(), child);
        self.readers.insert(identity.to_owned(), reader);
    }

    /// SIGKILL: no chance to release. Returns when it died.
    pub fn kill(&mut self, identity: &str) -> Micros {
        let mut child = self.children.remove(identity).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let at = now_micros();
        self.killed.insert(identity.to_owned(), at);
        at
    }

    /// SIGTERM: a clean shutdown. Returns when it was sent.
    pub fn terminate(&mut self, identity: &str) -> Micros {
        self.signal(identity, "-TERM")
    }

    /// Waits (blocking, at most `limit`) for a terminated replica to exit.
    pub async fn wait_exit(&mut self, identity: &str, limit: Duration) -> ExitStatus {
        let mut child = self.children.remove(identity).unwrap();
        let deadline = tokio::time::Instant::now() + limit;
        // Exited, and its output read to the end: a process gone is not yet a line
        // read, and its last lines are what the caller asks about.
        let reader = self.readers.remove(identity);
        loop {
            if let Some(status) = child.try_wait().unwrap()
                && reader.as_ref().is_none_or(|reader| reader.is_finished())
            {
                return status;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{identity} did not exit within {limit:?}; {}",
                self.describe()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops each of `identities` cleanly (SIGTERM) and waits for it to exit with
    /// success; returns when the first was told to stop.
    pub async fn stop_all(&mut self, identities: &[&str]) -> Micros {
        let stopping = now_micros();
        for identity in identities {
            self.terminate(identity);
        }
        for identity in identities {
            let status = self.wait_exit(identity, Duration::from_secs(20)).await;
            assert!(status.success(), "{identity} exited with {status}");
        }
        stopping
    }

    /// The `stats ...` lines the replicas printed at exit after `after`, as
    /// `identity detail`.
    pub fn exit_stats(&self, after: Micros) -> Vec<String> {
        self.lines()
            .iter()
            .filter(|l| l.at >= after && l.event == "stats")
            .map(|l| format!("{} {}", l.identity, l.detail))
            .collect()
    }

    /// The counter `name` (`dropped`, `refused`, `events-fenced`) of `identity`'s
    /// `stats` lines printed after `after`, added up (a replica restarted prints
    /// several); 0 without one.
    pub fn exit_count(&self, after: Micros, identity: &str, name: &str) -> u64 {
        self.lines()
            .iter()
            .filter(|l| l.at >= after && l.event == "stats" && l.identity == identity)
            .flat_map(|l| {
                l.detail
                    .split_whitespace()
                    .filter_map(|pair| pair.split_once('='))
                    .filter(|(key, _)| *key == name)
                    .filter_map(|(_, value)| value.parse::<u64>().ok())
                    .collect::<Vec<_>>()
            })
            .sum()
    }

    /// Asserts that `identity`, paused past its lease, resumed with work of its
    /// claim in hand and was fenced: by its `stats` lines printed after `after`, it
    /// dropped reconciles or had writes refused (so that a fence test cannot pass
    /// because the fault never happened).
    pub fn assert_fenced_after_pause(&self, after: Micros, identity: &str) {
        let fenced = self.exit_count(after, identity, "dropped")
            + self.exit_count(after, identity, "refused");
        assert!(
            fenced > 0,
            "{identity} was paused past its lease, yet dropped no reconcile and had no write refused; {}",
            self.describe()
        );
    }

    /// How many `event` lines the replicas printed.
    pub fn count(&self, event: &str) -> usize {
        self.lines().iter().filter(|l| l.event == event).count()
    }

    pub fn lines(&self) -> Vec<Line> {
        self.lines.lock().unwrap().clone()
    }

    /// The first line after `after` matching `matches`.
    pub fn find(&self, after: Micros, matches: impl Fn(&Line) -> bool) -> Option<Line> {
        self.lines()
            .into_iter()
            .find(|line| line.at >= after && matches(line))
    }

    /// Waits until a line after `after` matches, and returns it.
    pub async fn wait_for(
        &self,
        what: &str,
        after: Micros,
        limit: Duration,
        matches: impl Fn(&Line) -> bool,
    ) -> Line {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(line) = self.find(after, &matches) {
                return line;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out after {limit:?} waiting for {what}; {}",
                self.describe()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Each running replica's last leadership event: `leading`, `following`,
    /// `stopped` (or `started` before any).
    pub fn standing(&self) -> HashMap<String, String> {
        let mut standing = HashMap::new();
        for line in self.lines() {
            if self.children.contains_key(&line.identity)
                && ["started", "leading", "following", "stopped"].contains(&line.event.as_str())
            {
                standing.insert(line.identity.clone(), line.event.clone());
            }
        }
        standing
    }

    /// The running replicas that say they lead.
    pub fn leaders(&self) -> Vec<String> {
        let mut leaders: Vec<String> = self
            .standing()
            .into_iter()
            .filter(|(_, event)| event == "leading")
            .map(|(identity, _)| identity)
            .collect();
        leaders.sort();
        leaders
    }

    /// Every reconcile as `(start, end, identity, key)`, sorted: from
    /// `reconcile-start <key> ...` to the same replica's `reconcile-end <key>`. A
    /// reconcile cut short by a kill ended at the kill; one still running, now.
    pub fn spans(&self) -> Vec<(Micros, Micros, String, String)> {
        let end_of_test = now_micros();
        let mut open: HashMap<(String, String), Micros> = HashMap::new();
        let mut spans = Vec::new();
        for line in self.lines() {
            let key = line.detail.split(' ').next().unwrap_or_default().to_owned();
            let slot = (line.identity.clone(), key);
            match line.event.as_str() {
                "reconcile-start" => {
                    open.insert(slot, line.at);
                }
                "reconcile-end" => {
                    let start = open.remove(&slot).expect("an end follows a start");
                    spans.push((start, line.at, slot.0, slot.1));
                }
                _ => {}
            }
        }
        for ((identity, key), start) in open {
            let end = self.killed.get(&identity).copied().unwrap_or(end_of_test);
            spans.push((start, end, identity, key));
        }
        spans.sort();
        spans
    }

    /// Asserts that no two replicas ever reconciled at overlapping times: each
    /// reconcile of one replica is disjoint from every one of the others.
    pub fn assert_no_overlapping_reconciles(&self) {
        Self::assert_disjoint(&self.spans(), "", &self.describe());
    }

    /// Asserts that no key was ever reconciled by two replicas at overlapping times.
    pub fn assert_no_key_reconciled_twice_at_once(&self) {
        let mut by_key: HashMap<String, Vec<(Micros, Micros, String, String)>> = HashMap::new();
        for span in self.spans() {
            by_key.entry(span.3.clone()).or_default().push(span);
        }
        for (key, spans) in by_key {
            Self::assert_disjoint(&spans, &key, "");
        }
    }

    /// For each key, the time from one replica's reconcile end to the next replica's
    /// start, in µs, every time the key changed hands (negative: they overlapped).
    pub fn handoff_gaps(&self) -> Vec<i128> {
        let mut by_key: HashMap<String, Vec<(Micros, Micros, String)>> = HashMap::new();
        for (start, end, identity, key) in self.spans() {
            by_key.entry(key).or_default().push((start, end, identity));
        }
        let mut gaps = Vec::new();
        for spans in by_key.values() {
            for pair in spans.windows(2) {
                if pair[0].2 != pair[1].2 {
                    gaps.push(pair[1].0 as i128 - pair[0].1 as i128);
                }
            }
        }
        gaps
    }

    /// Asserts that spans of different replicas in `spans` (sorted) do not overlap.
    fn assert_disjoint(spans: &[(Micros, Micros, String, String)], what: &str, story: &str) {
        for (i, (start, end, identity, _)) in spans.iter().enumerate() {
            for (other_start, other_end, other, _) in &spans[i + 1..] {
                if other_start >= end {
                    break;
                }
                assert!(
                    other == identity,
                    "{what}: {identity} reconciled {start}..{end} while {other} reconciled \
                     {other_start}..{other_end}; {story}"
                );
            }
        }
        assert!(!spans.is_empty(), "somebody reconciled");
    }

    /// How many reconciles `identity` started after `after`.
    pub fn reconciles_of(&self, identity: &str, after: Micros) -> usize {
        self.lines()
            .iter()
            .filter(|l| l.at >= after && l.identity == identity && l.event == "reconcile-start")
            .count()
    }

    /// The lines other than reconciles (leadership, members) and where the replicas'
    /// logs are, for failure messages.
    pub fn describe(&self) -> String {
        let story: Vec<String> = self
            .lines()
            .iter()
            .filter(|l| !l.event.starts_with("reconcile"))
            .map(|l| format!("{} {} {} {}", l.at, l.identity, l.event, l.detail))
            .collect();
        format!(
            "replica lines:\n{}\nreplica logs in {}",
            story.join("\n"),
            self.logs_dir.display()
        )
    }
}

impl Drop for Replicas {
    fn drop(&mut self) {
        for child in self.children.values_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // The replicas' logs stay for a failed test to be read.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.logs_dir);
        }
    }
}
