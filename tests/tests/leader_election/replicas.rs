//! Replica processes of a leader-elected controller (`elector_replica`), and what
//! their logs show.
#![allow(unreachable_pub)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The timings every replica runs with: short, so a test takes seconds, and
/// valid for client-go's rules (lease > renew > retry * 1.2).
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

/// The replicas of one test, on one Lease in one namespace.
pub struct Replicas {
    namespace: String,
    kubeconfig: PathBuf,
    logs_dir: PathBuf,
    lines: Arc<Mutex<Vec<Line>>>,
    children: HashMap<String, Child>,
    /// When each killed replica died: its reconciles in flight ended then.
    killed: HashMap<String, Micros>,
}

impl Replicas {
    pub fn new(namespace: &str, kubeconfig: &Path) -> Self {
        let logs_dir = std::env::temp_dir().join(format!("informer-leader-{namespace}"));
        std::fs::create_dir_all(&logs_dir).unwrap();
        Self {
            namespace: namespace.to_owned(),
            kubeconfig: kubeconfig.to_owned(),
            logs_dir,
            lines: Arc::default(),
            children: HashMap::new(),
            killed: HashMap::new(),
        }
    }

    /// Starts replica `identity`, talking to `server` if given (a fault proxy),
    /// else to the kubeconfig's server.
    pub fn spawn(&mut self, identity: &str, server: Option<&str>) {
        let stderr = std::fs::File::create(self.logs_dir.join(format!("{identity}.log"))).unwrap();
        let ms = |d: Duration| d.as_millis().to_string();
        let mut command = Command::new(env!("CARGO_BIN_EXE_elector_replica"));
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .arg(format!("namespace={}", self.namespace))
            .arg("lease=replicas")
            .arg(format!("identity={identity}"))
            .arg(format!("lease-ms={}", ms(LEASE)))
            .arg(format!("renew-ms={}", ms(RENEW)))
            .arg(format!("retry-ms={}", ms(RETRY)))
            .arg(format!("reconcile-ms={}", ms(RECONCILE)))
            .stdout(Stdio::piped())
            .stderr(stderr);
        if let Some(server) = server {
            command.arg(format!("server={server}"));
        }
        let mut child = command.spawn().expect("the replica binary starts");
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::clone(&self.lines);
        std::thread::spawn(move || {
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
        let pid = self.children[identity].id();
        let at = now_micros();
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        at
    }

    /// Waits (blocking, at most `limit`) for a terminated replica to exit.
    pub async fn wait_exit(&mut self, identity: &str, limit: Duration) -> ExitStatus {
        let mut child = self.children.remove(identity).unwrap();
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(status) = child.try_wait().unwrap() {
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

    /// Asserts that no two replicas ever reconciled at overlapping times: each
    /// `reconcile-start`..`reconcile-end` of one replica is disjoint from every one
    /// of the others. A reconcile cut short by a kill ended at the kill.
    pub fn assert_no_overlapping_reconciles(&self) {
        let end_of_test = now_micros();
        let mut open: HashMap<(String, String), Micros> = HashMap::new();
        let mut spans: Vec<(Micros, Micros, String)> = Vec::new();
        for line in self.lines() {
            let slot = (line.identity.clone(), line.detail.clone());
            match line.event.as_str() {
                "reconcile-start" => {
                    open.insert(slot, line.at);
                }
                "reconcile-end" => {
                    let start = open.remove(&slot).expect("an end follows a start");
                    spans.push((start, line.at, line.identity));
                }
                _ => {}
            }
        }
        for ((identity, _), start) in open {
            let end = self.killed.get(&identity).copied().unwrap_or(end_of_test);
            spans.push((start, end, identity));
        }
        spans.sort();
        for (i, (start, end, identity)) in spans.iter().enumerate() {
            for (other_start, other_end, other) in &spans[i + 1..] {
                if other_start >= end {
                    break;
                }
                assert!(
                    other == identity,
                    "{identity} reconciled {start}..{end} while {other} reconciled \
                     {other_start}..{other_end}; {}",
                    self.describe()
                );
                let _ = other_end;
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

    /// The leadership lines and where the replicas' logs are, for failure messages.
    pub fn describe(&self) -> String {
        let story: Vec<String> = self
            .lines()
            .iter()
            .filter(|l| !l.event.starts_with("reconcile"))
            .map(|l| format!("{} {} {} {}", l.at, l.identity, l.event, l.detail))
            .collect();
        format!(
            "leadership lines:\n{}\nreplica logs in {}",
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
