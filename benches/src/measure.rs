//! What a worker measures about itself: CPU time and resident memory.
//!
//! - CPU: `getrusage(RUSAGE_SELF)`, the user and system time of every thread of the
//!   process, alive or exited, in microseconds.
//! - Memory: `VmRSS` (resident now) and `VmHWM` (the peak resident size so far) from
//!   `/proc/self/status`.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeVal;

/// User and system CPU time used by this process so far.
pub fn user_sys() -> (Duration, Duration) {
    let to_duration = |t: TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(usage) => (
            to_duration(usage.user_time()),
            to_duration(usage.system_time()),
        ),
        Err(_) => (Duration::ZERO, Duration::ZERO),
    }
}

/// User + system CPU time used by this process so far.
pub fn cpu_time() -> Duration {
    let (user, sys) = user_sys();
    user + sys
}

/// Resident memory, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the peak resident size so far.
    pub peak_kib: u64,
}

/// Reads [`Memory`] from `/proc/self/status`.
pub fn memory() -> Memory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Memory {
        rss_kib: field("VmRSS:"),
        peak_kib: field("VmHWM:"),
    }
}

/// The process's thread count (`Threads:` in `/proc/self/status`); 0 if unreadable.
pub fn thread_count() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or(0)
}

/// The names of the process's threads (`/proc/self/task/*/comm`), sorted.
pub fn thread_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .collect();
    names.sort();
    names
}

/// The resident memory split by kind, in KiB: `RssAnon` (heap, stacks) and
/// `RssFile` (mapped files: the binary's code and data, shared libraries), from
/// `/proc/self/status`; 0 where unreadable.
pub fn rss_anon_file() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    (field("RssAnon:"), field("RssFile:"))
}

/// The CPU time (user + system) used so far by the processes whose command line holds
/// `marker` (the control plane's: etcd and the API server name their data directory),
/// from `/proc/<pid>/stat`; zero where unreadable.
pub fn processes_cpu(marker: &str) -> Duration {
    // Clock ticks per second: 100 on every Linux this runs on.
    const TICKS: u64 = 100;
    let mut ticks = 0u64;
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let path = entry.path();
        let Ok(cmdline) = std::fs::read(path.join("cmdline")) else {
            continue;
        };
        if !String::from_utf8_lossy(&cmdline).contains(marker) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(path.join("stat")) else {
            continue;
        };
        // Fields 14 and 15 (utime, stime), counted after the command's closing paren.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let field = |i: usize| {
            fields
                .get(i)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0)
        };
        ticks += field(11) + field(12);
    }
    Duration::from_millis(ticks * 1000 / TICKS)
}

/// Resets `VmHWM` to the current RSS (Linux 4.0 and later: `5` to `clear_refs`), so
/// that a later [`memory`] gives the peak since now.
pub fn reset_peak() -> std::io::Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
}

/// A moment in a worker's life: wall clock and CPU.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    wall: std::time::Instant,
    user_sys: (Duration, Duration),
}

impl Mark {
    /// Now.
    pub fn now() -> Self {
        Self {
            wall: std::time::Instant::now(),
            user_sys: user_sys(),
        }
    }

    /// Wall-clock seconds since this mark.
    pub fn wall_seconds(&self) -> f64 {
        self.wall.elapsed().as_secs_f64()
    }

    /// CPU seconds (user + system) since this mark.
    pub fn cpu_seconds(&self) -> f64 {
        let (user, sys) = self.user_sys_seconds();
        user + sys
    }

    /// User and system CPU seconds since this mark.
    pub fn user_sys_seconds(&self) -> (f64, f64) {
        let (user, sys) = user_sys();
        (
            user.saturating_sub(self.user_sys.0).as_secs_f64(),
            sys.saturating_sub(self.user_sys.1).as_secs_f64(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_its_own_figures() {
        let mark = Mark::now();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(mark.cpu_seconds() > 0.0);
        let memory = memory();
        assert!(memory.rss_kib > 0 && memory.peak_kib >= memory.rss_kib);
        // Other tests' threads come and go meanwhile: no exact comparison.
        assert!(thread_count() >= 1);
        assert!(!thread_names().is_empty());
    }
}
