//! The informer's side of [`consistency`](crate::consistency): checking its cache on
//! demand ([`SharedIndexInformer::verify`]) and periodically (started by `run` when
//! its settings ask for it), its health, and its figures.

use std::future::Future;
use std::sync::Arc;

use crate::object::Object;

use super::SharedIndexInformer;
use crate::consistency::{
    Checker, ConsistencyConfig, ConsistencyReport, ConsistencyStats, Health, Periodic, VerifyError,
};
use crate::reflector::RelistTrigger;

impl<K: Object + Send + Sync + 'static> SharedIndexInformer<K> {
    /// Checks now that the cache holds exactly the server's collection: lists the
    /// collection's metadata at a resourceVersion the cache was at and compares (see
    /// [`consistency`](crate::consistency)), naming every difference. Works while the
    /// informer runs, whether or not periodic checks were asked for; it logs and
    /// counts nothing, and heals nothing: it only reports.
    ///
    /// Fails when the check cannot say: not synced yet, a lister-watcher that offers
    /// no [`versions`](crate::reflector::source::Capabilities#structfield.versions), a version the server
    /// no longer keeps, or a failed request.
    pub async fn verify(&self) -> Result<ConsistencyReport, VerifyError> {
        let config = self.inner.consistency.config.clone().unwrap_or_default();
        self.checker(&config).check(self.has_synced()).await
    }

    /// Synced, how stale, and what the last periodic check found: what a readiness
    /// endpoint needs ([`Health::check`]).
    pub fn health(&self) -> Health {
        let stats = self.consistency_stats();
        Health {
            synced: self.has_synced(),
            staleness: stats.staleness,
            last_verdict: stats.last_verdict,
        }
    }

    /// What the periodic checks and probes have found so far.
    pub fn consistency_stats(&self) -> ConsistencyStats {
        let inner = &self.inner;
        let consistency = &inner.consistency;
        let periodic = consistency.config.is_some();
        consistency
            .counters
            .snapshot(periodic, inner.tracker.staleness())
    }

    fn checker(&self, config: &ConsistencyConfig) -> Checker<K> {
        let inner = &self.inner;
        let capabilities = &inner.capabilities;
        Checker {
            resource: capabilities
                .resource
                .clone()
                .unwrap_or_else(|| inner.kind.to_owned()),
            tracker: Arc::clone(&inner.tracker),
            source: capabilities.versions.clone(),
            indexer: inner.indexer.clone(),
            key_filter: inner.consistency.key_filter.clone(),
            // A page of 0 would be "no limit" to the server.
            page_size: config.page_size.max(1),
            timeout: config.request_timeout,
        }
    }

    /// The periodic checks and probes, when its settings asked for them (never
    /// completes); `relist` heals.
    pub(super) fn periodic_checks(
        &self,
        relist: RelistTrigger,
    ) -> impl Future<Output = ()> + use<K> {
        let inner = &self.inner;
        let periodic = inner.consistency.config.clone().map(|config| Periodic {
            checker: self.checker(&config),
            config,
            counters: Arc::clone(&inner.consistency.counters),
            relist,
            synced: Box::new({
                let queue = inner.queue.clone();
                move || queue.has_synced()
            }),
        });
        async move {
            match periodic {
                Some(periodic) => periodic.run().await,
                None => std::future::pending().await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;
    use crate::consistency::{CheckResult, DifferenceKind};
    use crate::key::ObjectKey;
    use crate::reflector::source::{FakeSource, ListWatch, ListerWatcher, WatchEvent};
    use crate::shared_informer::{InformerConfig, wait_for_cache_sync};
    use crate::test_support::{config_map, spawn_run, until};

    /// A lister-watcher over `source` whose watches lose the first MODIFIED event of
    /// `key`, silently: drift the reflector cannot see. Checks read the source itself.
    fn losing_one_update(
        source: &FakeSource<ConfigMap>,
        key: &'static str,
    ) -> ListWatch<ConfigMap> {
        let lost = Arc::new(AtomicBool::new(false));
        let lister = source.clone();
        let watcher = source.clone();
        ListWatch::new(
            move |request| {
                let source = lister.clone();
                async move { source.list(request).await }
            },
            move |request| {
                let (source, lost) = (watcher.clone(), Arc::clone(&lost));
                async move {
                    let events = source.watch(request).await?;
                    Ok(events.filter(move |event| {
                        let this = matches!(event, Ok(WatchEvent::Modified(object))
                            if ObjectKey::of(object).to_string() == key);
                        let dropped = this && !lost.swap(true, Ordering::SeqCst);
                        std::future::ready(!dropped)
                    }))
                }
            },
        )
        .versions(source.capabilities().versions)
    }

    fn source_with(names: &[&str]) -> FakeSource<ConfigMap> {
        let source = FakeSource::new();
        for name in names {
            source.add(config_map(name, &[], 0));
        }
        source
    }

    /// How long a test waits for what it expects.
    const WAIT: Duration = Duration::from_secs(100);

    #[tokio::test]
    async fn a_cache_that_followed_every_change_is_consistent() {
        let source = source_with(&["ns/a", "ns/b", "ns/c"]);
        let informer = SharedIndexInformer::with_config(source.clone(), InformerConfig::default())
            .expect("no indexes");
        let not_synced = informer.verify().await.unwrap_err();
        assert_eq!(not_synced.result(), CheckResult::Skipped);
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        source.modify(config_map("ns/a", &[], 0));
        source.delete(config_map("ns/c", &[], 0));
        until("the delete", WAIT, || informer.indexer().len() == 2).await;
        let report = informer.verify().await.unwrap();
        assert!(report.consistent, "{report}");
        assert_eq!((report.cached, report.listed), (2, 2));
        assert!(report.differences.is_empty());
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }

    /// A lost update: the check names the key, as older, at a later point.
    #[tokio::test]
    async fn a_lost_update_is_named_by_key() {
        let source = source_with(&["ns/a", "ns/b"]);
        let informer = SharedIndexInformer::with_config(
            losing_one_update(&source, "ns/b"),
            InformerConfig::default(),
        )
        .expect("no indexes");
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        source.modify(config_map("ns/b", &[], 0));
        source.add(config_map("ns/c", &[], 0));
        until("the add after the lost update", WAIT, || {
            informer.indexer().len() == 3
        })
        .await;
        let report = informer.verify().await.unwrap();
        assert!(!report.consistent, "{report}");
        let named: Vec<String> = report.differences.iter().map(ToString::to_string).collect();
        assert_eq!(named, ["ns/b older (cache 2, server 3)"]);
        assert_eq!(report.count(DifferenceKind::Older), 1);
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }

    /// Periodic checks find the lost update, count it once however often they see it,
    /// and, healing, relist: the next check finds the cache consistent.
    #[tokio::test(start_paused = true)]
    async fn periodic_checks_count_and_heal() {
        let source = source_with(&["ns/a", "ns/b"]);
        let config = ConsistencyConfig::default()
            .interval(Duration::from_secs(60))
            .staleness_interval(None)
            .heal(true);
        let informer = SharedIndexInformer::with_config(
            losing_one_update(&source, "ns/b"),
            InformerConfig::default().consistency(config),
        )
        .expect("no indexes");
        let (stop, running) = spawn_run(&informer);
        wait_for_cache_sync(&[&informer]).await;
        source.modify(config_map("ns/b", &[], 0));
        source.add(config_map("ns/c", &[], 0));
        until("a check that finds it", WAIT, || {
            informer.consistency_stats().inconsistent >= 1
        })
        .await;
        let found = informer.consistency_stats();
        assert_eq!((found.differences, found.heals), (1, 1));
        assert!(!informer.health().is_healthy(Duration::from_secs(60)));
        until("a check after the relist", WAIT, || {
            informer.consistency_stats().consistent >= 1
        })
        .await;
        let healed = informer.consistency_stats();
        assert_eq!(healed.differences, 1, "a difference is counted once");
        let b = informer.indexer().get_by_key("ns/b").expect("cached");
        assert_eq!(crate::test_support::version(&b), 3);
        assert!(informer.health().is_healthy(Duration::from_secs(60)));
        assert!(informer.verify().await.unwrap().consistent);
        stop.send(()).ok();
        running.await.unwrap().unwrap();
    }
}
