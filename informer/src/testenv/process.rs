//! A child process that cannot outlive the process that started it.
//!
//! Test binaries share one control plane through a `static`, and statics are never
//! dropped, so `Drop` alone cannot promise that etcd and kube-apiserver stop. Each
//! server therefore runs under a tiny `sh` supervisor whose stdin is a pipe from us:
//! when the pipe closes (an explicit stop, or our process ending for any reason, even
//! a crash) the supervisor terminates the server, waits for it, and exits.
//!
//! A graceful kube-apiserver waits for its open watches to end (a controller
//! manager's stay open for minutes) before it exits; a second SIGTERM makes a
//! Kubernetes server exit at once, so the supervisor sends one after a moment. A
//! server that ignores SIGTERM (kube-apiserver can hang in its shutdown once etcd is
//! gone, as when both lose their parent at once) is killed after a grace period.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use super::TestEnvError;

/// `$1` log file, `$2` directory to remove once the server has exited (or empty), `$3`
/// tenths of a second the server may take to exit after SIGTERM (a second SIGTERM
/// follows after two seconds), the rest is the server's command line. The server
/// counts as exited once it is a zombie: it is only reaped by the final `wait`, so its
/// pid cannot be reused before the `kill -KILL`.
const SUPERVISOR: &str = r#"
log=$1; cleanup=$2; grace=$3; shift 3
exec 2>>"$log"
"$@" </dev/null >>"$log" 2>&1 &
child=$!
echo "$child"
while read -r _; do :; done
kill -TERM "$child" 2>/dev/null
alive() { [ -r "/proc/$1/stat" ] && ! grep -q ') Z' "/proc/$1/stat" 2>/dev/null; }
ticks=0
while alive "$child" && [ "$ticks" -lt "$grace" ]; do
  sleep 0.1
  ticks=$((ticks + 1))
  [ "$ticks" -eq 20 ] && kill -TERM "$child" 2>/dev/null
done
kill -KILL "$child" 2>/dev/null
wait "$child"
[ -n "$cleanup" ] && rm -rf "$cleanup"
exit 0
"#;

/// How long a server may take to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(20);

/// A server process under its supervisor.
#[derive(Debug)]
pub(crate) struct Supervised {
    name: &'static str,
    supervisor: Child,
    stdin: Option<ChildStdin>,
    pid: u32,
    log: PathBuf,
    stop_grace: Duration,
}

impl Supervised {
    /// Starts `program args..` with its output appended to `log`. When the server
    /// exits under supervision, `cleanup` (if any) is removed.
    pub(crate) fn spawn(
        name: &'static str,
        program: &Path,
        args: &[String],
        log: &Path,
        cleanup: Option<&Path>,
    ) -> Result<Self, TestEnvError> {
        Self::spawn_with_grace(name, program, args, log, cleanup, STOP_GRACE)
    }

    /// [`spawn`](Self::spawn), with the time the server may take to exit after SIGTERM.
    fn spawn_with_grace(
        name: &'static str,
        program: &Path,
        args: &[String],
        log: &Path,
        cleanup: Option<&Path>,
        stop_grace: Duration,
    ) -> Result<Self, TestEnvError> {
        let spawn_error = |source| TestEnvError::Spawn {
            program: program.to_path_buf(),
            source,
        };
        let mut supervisor = Command::new("sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("informer-testenv-supervisor")
            .arg(log)
            .arg(cleanup.map(Path::as_os_str).unwrap_or_default())
            .arg((stop_grace.as_millis() / 100).to_string())
            .arg(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(spawn_error)?;
        let stdin = supervisor.stdin.take();
        let mut line = String::new();
        let stdout = supervisor.stdout.take().expect("stdout is piped");
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(spawn_error)?;
        let pid = line.trim().parse().map_err(|_| TestEnvError::Spawn {
            program: program.to_path_buf(),
            source: std::io::Error::other(format!("supervisor printed {line:?}, not a pid")),
        })?;
        Ok(Self {
            name,
            supervisor,
            stdin,
            pid,
            log: log.to_path_buf(),
            stop_grace,
        })
    }

    /// Whether the server is still running (not exited, not a zombie).
    pub(crate) fn is_running(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            // The state is the first field after the parenthesised command name.
            Ok(stat) => stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X"),
            Err(_) => false,
        }
    }

    /// The last lines of the server's log, to explain a failure.
    pub(crate) fn log_tail(&self) -> String {
        log_tail(&self.log, 4096)
    }

    /// Terminates the server and waits for it; kills it if it ignores SIGTERM.
    pub(crate) fn stop(&mut self) {
        // Closing the pipe is the stop signal; the supervisor kills the server after
        // the grace period. A second later, this side kills both.
        drop(self.stdin.take());
        let deadline = Instant::now() + self.stop_grace + Duration::from_secs(1);
        loop {
            match self.supervisor.try_wait() {
                Ok(Some(_)) | Err(_) => return,
                Ok(None) if Instant::now() >= deadline => {
                    tracing::warn!(
                        name = self.name,
                        pid = self.pid,
                        "did not stop in time; killing"
                    );
                    let _ = Command::new("kill")
                        .args(["-KILL", &self.pid.to_string()])
                        .status();
                    let _ = self.supervisor.kill();
                    let _ = self.supervisor.wait();
                    return;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last `max` bytes of a file, lossily decoded.
pub(crate) fn log_tail(path: &Path, max: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A "server" that ignores SIGTERM, returned once it does.
    fn stubborn(dir: &Path, grace: Duration) -> Supervised {
        let script = "trap '' TERM; echo ready; while :; do sleep 1; done".to_owned();
        let server = Supervised::spawn_with_grace(
            "stubborn",
            Path::new("sh"),
            &["-c".to_owned(), script],
            &dir.join("log"),
            None,
            grace,
        )
        .unwrap();
        assert!(within(Duration::from_secs(5), || server
            .log_tail()
            .contains("ready")));
        server
    }

    /// Whether `done` holds within `time`.
    fn within(time: Duration, done: impl Fn() -> bool) -> bool {
        let deadline = Instant::now() + time;
        while Instant::now() < deadline {
            if done() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_server_that_ignores_sigterm_is_killed_when_its_parent_goes_away() {
        let dir = tempfile::tempdir().unwrap();
        let mut server = stubborn(dir.path(), Duration::from_millis(300));
        assert!(server.is_running());
        // What our process ending does: the pipe closes, nobody calls `stop`.
        drop(server.stdin.take());
        std::thread::sleep(Duration::from_millis(150));
        assert!(server.is_running(), "SIGTERM alone does not stop it");
        assert!(
            within(Duration::from_secs(5), || !server.is_running()),
            "the supervisor killed it after the grace period"
        );
        assert!(server.supervisor.wait().unwrap().success());
    }

    #[test]
    fn a_server_that_exits_on_a_second_sigterm_gets_one() {
        // As a Kubernetes server: the first SIGTERM starts a graceful shutdown that
        // would wait on long requests, the second one exits at once.
        let dir = tempfile::tempdir().unwrap();
        let script = "terms=0; trap 'terms=$((terms + 1)); \
                      if [ $terms -ge 2 ]; then echo second-term; exit 0; fi' TERM; \
                      echo ready; while :; do sleep 0.1; done"
            .to_owned();
        // A grace period far beyond the second SIGTERM, so that only it ends the server.
        let mut server = Supervised::spawn_with_grace(
            "graceful",
            Path::new("sh"),
            &["-c".to_owned(), script],
            &dir.path().join("log"),
            None,
            Duration::from_secs(60),
        )
        .unwrap();
        assert!(within(Duration::from_secs(5), || server
            .log_tail()
            .contains("ready")));
        server.stop();
        assert!(!server.is_running());
        assert!(
            server.log_tail().contains("second-term"),
            "{}",
            server.log_tail()
        );
    }

    #[test]
    fn stop_returns_once_the_server_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let mut server = stubborn(dir.path(), Duration::from_millis(200));
        let started = Instant::now();
        server.stop();
        assert!(!server.is_running());
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
