//! Telling a frozen process from a quiet one: [`ClockReading`] and [`jumped`].
//!
//! A claim's deadlines are instants of the monotonic clock. It keeps counting
//! through SIGSTOP and a frozen cgroup, so a process that resumes from those finds
//! its deadlines passed. It does not count through a suspended or stopped virtual
//! machine, nor a checkpoint and restore: on resume the monotonic clock carries on
//! from where it stood, the deadlines seem far away, and the process would act on a
//! lease the others took over long ago. `CLOCK_BOOTTIME` (Linux) counts suspended
//! time, and the wall clock is set right again after a resume (by kvmclock, NTP or
//! the hypervisor's agent). So a claim compares the three: if, since its grantor's
//! last renewal, the boot-time or the wall clock moved on by more than the monotonic
//! clock plus a margin, time passed that the deadlines did not see, and the claim is
//! treated as lost.
//!
//! A wall clock stepped forward (an NTP correction larger than the margin, seconds)
//! looks the same and drops the work in hand once: it is retried in the next term.
//! The check reads the real clocks, not tokio's (which a test may pause).

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The three clocks at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClockReading {
    /// The monotonic clock (what deadlines are measured with).
    pub(crate) monotonic: Instant,
    /// Time since boot, suspended time included; `None` where the system has no such
    /// clock.
    pub(crate) boot: Option<Duration>,
    /// The wall clock.
    pub(crate) wall: SystemTime,
}

/// Where readings come from: the system's clocks, or a test's.
pub(crate) trait ClockSource: Send + Sync + std::fmt::Debug {
    /// The clocks now.
    fn read(&self) -> ClockReading;
}

/// The system's clocks.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SystemClocks;

impl ClockSource for SystemClocks {
    fn read(&self) -> ClockReading {
        ClockReading {
            monotonic: Instant::now(),
            boot: boot_time(),
            wall: SystemTime::now(),
        }
    }
}

/// The clocks a claim checks with by default.
pub(crate) fn system() -> Arc<dyn ClockSource> {
    Arc::new(SystemClocks)
}

#[cfg(target_os = "linux")]
fn boot_time() -> Option<Duration> {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_BOOTTIME).ok()?;
    let seconds = u64::try_from(now.tv_sec()).ok()?;
    let nanos = u32::try_from(now.tv_nsec()).ok()?;
    Some(Duration::new(seconds, nanos))
}

#[cfg(not(target_os = "linux"))]
fn boot_time() -> Option<Duration> {
    None
}

/// How far the boot-time or the wall clock moved past the monotonic clock between
/// `since` and `now`, if by more than `margin`: the time the monotonic clock missed
/// (a suspended or restored machine).
pub(crate) fn jumped(
    since: &ClockReading,
    now: &ClockReading,
    margin: Duration,
) -> Option<Duration> {
    let monotonic = now.monotonic.saturating_duration_since(since.monotonic);
    let boot = match (since.boot, now.boot) {
        (Some(since), Some(now)) => now.saturating_sub(since),
        _ => Duration::ZERO,
    };
    let wall = now.wall.duration_since(since.wall).unwrap_or_default();
    let missed = boot.max(wall).saturating_sub(monotonic);
    (missed > margin).then_some(missed)
}

/// The clocks a claim is checked with, and the time the monotonic clock missed since
/// a grantor's last renewal, warned about once per renewal.
#[derive(Debug)]
pub(crate) struct MissedTime {
    source: Arc<dyn ClockSource>,
    /// The monotonic instant of the renewal last warned about.
    warned_for: std::sync::Mutex<Option<Instant>>,
}

impl MissedTime {
    /// Checks with `source`.
    pub(crate) fn new(source: Arc<dyn ClockSource>) -> Self {
        Self {
            source,
            warned_for: std::sync::Mutex::default(),
        }
    }

    /// The clocks now.
    pub(crate) fn read(&self) -> ClockReading {
        self.source.read()
    }

    /// The time the monotonic clock missed since `renewal` (zero without one): it
    /// counts toward every deadline measured from the renewal.
    pub(crate) fn since(&self, renewal: Option<&ClockReading>) -> Duration {
        renewal
            .and_then(|renewal| jumped(renewal, &self.source.read(), Duration::ZERO))
            .unwrap_or_default()
    }

    /// Logs, once per renewal, that `what` ended because the monotonic clock missed
    /// `missed` since `renewal`.
    pub(crate) fn warn_once(
        &self,
        renewal: &ClockReading,
        missed: Duration,
        what: &dyn std::fmt::Display,
    ) {
        let mut warned = crate::lock::MutexExt::locked(&self.warned_for);
        if *warned != Some(renewal.monotonic) {
            *warned = Some(renewal.monotonic);
            tracing::warn!(
                %what,
                ?missed,
                "the monotonic clock missed time (a suspended or restored machine?): the claim ends"
            );
        }
    }
}

/// A clock source a test sets by hand.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct TestClocks(pub(crate) std::sync::Mutex<ClockReading>);

#[cfg(test)]
impl TestClocks {
    /// Clocks reading the system's now, to be moved by the test.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self(std::sync::Mutex::new(SystemClocks.read())))
    }

    /// Moves the boot-time and wall clocks `by` while the monotonic clock stands
    /// still: a machine suspended for `by`.
    pub(crate) fn suspend(&self, by: Duration) {
        let mut reading = self.0.lock().unwrap();
        reading.boot = reading.boot.map(|boot| boot + by);
        reading.wall += by;
    }

    /// Moves every clock `by`: time passing normally.
    pub(crate) fn advance(&self, by: Duration) {
        let mut reading = self.0.lock().unwrap();
        reading.monotonic += by;
        reading.boot = reading.boot.map(|boot| boot + by);
        reading.wall += by;
    }
}

#[cfg(test)]
impl ClockSource for TestClocks {
    fn read(&self) -> ClockReading {
        *self.0.lock().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn time_passing_normally_is_no_jump_a_suspension_is() {
        let clocks = TestClocks::new();
        let start = clocks.read();
        clocks.advance(10 * SECOND);
        assert_eq!(jumped(&start, &clocks.read(), SECOND), None);
        clocks.suspend(3 * SECOND);
        assert_eq!(jumped(&start, &clocks.read(), SECOND), Some(3 * SECOND));
        // Within the margin: a timer firing late, no jump.
        let start = clocks.read();
        clocks.suspend(SECOND / 2);
        assert_eq!(jumped(&start, &clocks.read(), SECOND), None);
    }

    #[test]
    fn a_wall_clock_set_forward_counts_without_a_boot_clock() {
        let clocks = TestClocks::new();
        clocks.0.lock().unwrap().boot = None;
        let start = clocks.read();
        clocks.0.lock().unwrap().wall += 5 * SECOND;
        assert_eq!(jumped(&start, &clocks.read(), SECOND), Some(5 * SECOND));
        // Set back: nothing was missed.
        let start = clocks.read();
        clocks.0.lock().unwrap().wall -= 5 * SECOND;
        assert_eq!(jumped(&start, &clocks.read(), SECOND), None);
    }

    #[test]
    fn the_system_clocks_move_together() {
        let start = SystemClocks.read();
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(jumped(&start, &SystemClocks.read(), SECOND), None);
        #[cfg(target_os = "linux")]
        assert!(start.boot.is_some(), "Linux has CLOCK_BOOTTIME");
    }
}
