//! Scenario 13, a small operator's footprint: its worker.
//!
//! A two-informer controller, scenario 7's ([`crate::controller`]: `Parent`s, a CRD
//! with a status subresource, each owning a ConfigMap child; ours with
//! `owns::<ConfigMap>()`, kube-runtime's `Controller` with `owns_stream` over a
//! reflector of the children, [`WORKERS`](crate::controller::WORKERS) reconciles at
//! once) on a namespace of few objects. The worker starts it with a new tag, waits
//! until every parent's status is patched, stays idle for [`IDLE`], and reports its
//! resident memory (`VmRSS`, and its split into `RssAnon` and `RssFile`), its peak
//! (`VmHWM`) and its threads (`Threads:` in `/proc/self/status`, with their names). It runs on the worker's runtime, the
//! default multi-threaded tokio runtime, whichever side it runs.
//!
//! ```text
//! bench-worker footprint <ours|kube-runtime> <namespace> <objects> <tag>
//! ```

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::controller::{Observer, Parent, spawn_side, status_wanted};
use crate::measure::{Mark, memory, rss_anon_file, thread_count, thread_names};
use crate::report::{FootprintSample, Implementation};

/// How long the worker idles after converging before it measures.
pub const IDLE: Duration = Duration::from_secs(3);

/// Scenario 13's [`Observer`]: the parents patched.
#[derive(Default)]
struct Footprint {
    patched: Mutex<HashSet<String>>,
}

impl Observer for Footprint {
    fn wanted(&self, tag: &str, parent: &Parent, child: &ConfigMap) -> Option<String> {
        status_wanted(tag, parent, child).map(|(wanted, _)| wanted)
    }

    fn patched(&self, parent: &str, _observed: &str) {
        self.patched
            .lock()
            .expect("not poisoned")
            .insert(parent.to_owned());
    }
}

/// The worker's mode `footprint` (see the [module docs](self)).
pub async fn run(
    implementation: Implementation,
    namespace: &str,
    objects: usize,
    tag: &str,
) -> anyhow::Result<FootprintSample> {
    let client = kube::Client::try_default().await?;
    let observer = Arc::new(Footprint::default());
    let baseline = memory();
    let baseline_threads = thread_count();
    let mark = Mark::now();
    spawn_side(implementation, client, namespace, tag, observer.clone())?;
    while observer.patched.lock().expect("not poisoned").len() < objects {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let converge_seconds = mark.wall_seconds();
    tokio::time::sleep(IDLE).await;
    let after = memory();
    let (idle_rss_anon_kib, idle_rss_file_kib) = rss_anon_file();
    Ok(FootprintSample {
        implementation,
        objects,
        baseline_rss_kib: baseline.rss_kib,
        baseline_threads,
        converge_seconds,
        idle_seconds: IDLE.as_secs_f64(),
        idle_rss_kib: after.rss_kib,
        idle_rss_anon_kib,
        idle_rss_file_kib,
        peak_rss_kib: after.peak_kib,
        threads: thread_count(),
        thread_names: thread_names(),
        cpu_seconds: mark.cpu_seconds(),
    })
}

/// Parses the worker's arguments after the mode.
pub fn parse_args(args: &[String]) -> anyhow::Result<(Implementation, &str, usize, &str)> {
    let arg = |i: usize| -> anyhow::Result<&str> {
        args.get(i)
            .map(String::as_str)
            .with_context(|| format!("footprint: missing argument {i}"))
    };
    let implementation = Implementation::parse(arg(1)?).context("unknown implementation")?;
    Ok((implementation, arg(2)?, arg(3)?.parse()?, arg(4)?))
}
