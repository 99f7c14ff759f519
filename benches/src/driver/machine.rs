//! What the run happens on: the machine and its load.

use super::MIB;

/// The machine the run happens on.
#[derive(Debug, Clone, serde::Serialize)]
pub(super) struct Machine {
    pub(super) cores: usize,
    pub(super) memory: String,
    pub(super) cpu: String,
    pub(super) kernel: String,
}

impl Machine {
    pub(super) fn read() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kib: f64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        Self {
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            memory: format!("{:.1} GiB", mem_kib / MIB / MIB),
            cpu: cpuinfo
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
                .unwrap_or_default(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .unwrap_or_default()
                .trim()
                .to_owned(),
        }
    }
}

pub(super) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
