//! A [`RealFifo`] on its own, as client-go's `UnlockWhileProcessingFIFO` is about: a
//! producer thread adds changes while a consumer, on another thread, pops them one at
//! a time and processes each (applies it to a store, then spins for the given time: a
//! synchronous handler, as client-go's plain informer calls its handlers from the
//! process function). Measures how long each add took: it waits whenever it finds the
//! queue's lock held.
//!
//! Inside an informer this does not arise: its reflector and its process loop share
//! one task, so they take turns and never contend for the lock. This is for code that
//! feeds a `RealFifo` from threads of its own.
//!
//! `bench-worker fifo-push COUNT PROCESS_MICROS`, e.g. `fifo-push 200000 0` and
//! `fifo-push 200000 20`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use informer::fifo::{Delta, RealFifo, RealFifoConfig};
use informer::store::Writer;
use k8s_openapi::api::core::v1::ConfigMap;

use crate::objects;
use crate::report::FifoPushSample;

/// Keys the changes cycle over.
const KEYS: usize = 10_000;

/// Adds `count` changes from this thread while a consumer thread processes them, each
/// for `process_micros` beyond applying it.
pub(crate) fn run(count: usize, process_micros: u64) -> anyhow::Result<FifoPushSample> {
    let objects: Vec<Arc<ConfigMap>> = (0..KEYS)
        .map(|i| Arc::new(objects::config_map(i, 0, Some("bench"))))
        .collect();
    let mut store = Writer::<ConfigMap>::new();
    let fifo = RealFifo::new(RealFifoConfig::default().known_objects(store.indexer()));
    let spin = Duration::from_micros(process_micros);
    let consumer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || -> anyhow::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread().build()?;
            for _ in 0..count {
                runtime
                    .block_on(fifo.pop(|deltas| {
                        match deltas.newest() {
                            Delta::Deleted(_) => {
                                store.delete_key(deltas.key());
                            }
                            other => {
                                store.upsert_keyed(deltas.key(), Arc::clone(other.object()));
                            }
                        }
                        let until = Instant::now() + spin;
                        while Instant::now() < until {
                            std::hint::spin_loop();
                        }
                        Ok::<_, ()>(())
                    }))
                    .map_err(|_| anyhow::anyhow!("the queue closed early"))?;
            }
            Ok(())
        })
    };
    let mut pushes = Vec::with_capacity(count);
    let started = Instant::now();
    for i in 0..count {
        let object = Arc::clone(&objects[i % KEYS]);
        let before = Instant::now();
        fifo.add(object);
        pushes.push(u64::try_from(before.elapsed().as_nanos()).unwrap_or(u64::MAX));
        // A watch hands out events as they arrive, not all at once: keep the queue
        // short, so that the measure is the wait for the lock, not the queue's growth.
        while fifo.len() > 64 {
            std::hint::spin_loop();
        }
    }
    consumer
        .join()
        .map_err(|_| anyhow::anyhow!("the consumer panicked"))?
        .context("consumer")?;
    let seconds = started.elapsed().as_secs_f64();
    pushes.sort_unstable();
    let at = |q: f64| pushes[((pushes.len() - 1) as f64 * q) as usize];
    Ok(FifoPushSample {
        count,
        process_micros,
        push_p50_ns: at(0.5),
        push_p99_ns: at(0.99),
        push_p999_ns: at(0.999),
        push_max_ns: *pushes.last().context("no push")?,
        seconds,
    })
}
