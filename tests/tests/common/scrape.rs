//! Reading a Prometheus registry the way a scraper does.

use informer::metrics::prometheus_client::{encoding::text::encode, registry::Registry};

/// The registry in the text exposition format.
pub fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    encode(&mut text, registry).expect("encodes");
    text
}

/// The value of the sample `series` (name and labels as the text format writes
/// them), if the scrape has it.
pub fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?.strip_prefix(' ')?;
        rest.split(' ').next()?.parse().ok()
    })
}
