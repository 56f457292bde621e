//! What `/metrics` and `status` are handed after every commit: the store's totals (never less
//! than was served before), the series' births, and the status document.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use tokio::sync::watch;

use crate::delivery::Delivery;
use crate::events;
use crate::events::store::Tried;
use crate::export::prometheus::ScrapeView;
use crate::export::self_metrics::{SelfStats, SinkRun};
use crate::status_file::{self, StatusJson};
use crate::store::Store;
use crate::store::counts::IngestCounts;
use crate::store::stream::SeriesId;

pub(super) struct Published {
    scrape_views: watch::Sender<Arc<ScrapeView>>,
    /// The address `/metrics` is served on, as bound.
    serving: Option<String>,
    /// The counts as of the last `status.json` written.
    snapshot_counts: Option<IngestCounts>,
    /// How many series the store had when their births were last noted, and the births then.
    births_noted: (usize, Arc<BTreeMap<SeriesId, u64>>),
    /// The time of the last publication since the run caught up with the ledger: a series
    /// published later was not in it. `None` until then, when a new series may be one that a
    /// run this store does not know of published (a store restored from a backup).
    published_ns: Option<u64>,
    /// How the last hand-off to `/metrics` went (a self-metric), when it is served.
    last: Option<SinkRun>,
}

impl Published {
    pub fn new(scrape_views: watch::Sender<Arc<ScrapeView>>, serving: Option<String>) -> Published {
        Published {
            scrape_views,
            serving,
            snapshot_counts: None,
            births_noted: (0, Arc::default()),
            published_ns: None,
            last: None,
        }
    }

    /// How the last hand-off to `/metrics` went; `None` when it is not served.
    pub fn last(&self) -> Option<SinkRun> {
        self.last
    }

    /// The exporter's own metrics as last served.
    pub fn self_stats(&self) -> SelfStats {
        self.scrape_views.borrow().self_stats
    }

    /// Hands `/metrics` and `status` the store's committed state.
    pub fn publish(
        &mut self,
        store: &Store,
        delivery: &mut Delivery,
        mut self_stats: SelfStats,
        (caught_up, ready): (bool, bool),
        state_dir: &Path,
    ) {
        let started = std::time::Instant::now();
        let mut success = true;
        let now_ns = crate::export::otlp::now_ns();
        // Series never go away, so a count that changed is the one sign of new ones. A new one's
        // zero goes a millisecond after the last moment it is known to have been absent, before
        // any scrape could have seen it (docs/counting-rules.md, "Births").
        let series = store.lifetime().len();
        if series != self.births_noted.0 {
            if let Err(e) = delivery.bring_stream_back(now_ns) {
                success = false;
                events::store::state_write_failed("stream", "note the clock's time", &e, Tried::OnChange);
            }
            let absent_ns = self
                .published_ns
                .unwrap_or_else(|| delivery.stream().newest_ns())
                .min(now_ns);
            let served = self.serving.is_some().then_some(now_ns);
            match delivery.record_births(store, absent_ns.saturating_add(1_000_000), served) {
                Ok(()) => {
                    let born = delivery.stream().births.iter().filter(|(_, ns)| **ns > 0);
                    self.births_noted = (series, Arc::new(born.map(|(k, v)| (k.clone(), *v)).collect()));
                }
                // Tried again at the next publication; until then a new series has no `_created`.
                Err(e) => {
                    success = false;
                    events::store::state_write_failed("stream", "note new series", &e, Tried::OnChange)
                }
            }
        }
        // A store rebuilt from the ledger (`--reset-state`, a deleted store) serves no less than
        // was served before, series by series, while it catches up: a scraper reads a lower value
        // as a reset, and counts the whole history again (docs/counting-rules.md, "Rebuilds").
        let mut lifetime = store.lifetime().clone();
        lifetime.raise_to(&delivery.stream().served);
        self_stats.counts = self_stats.counts.raised_to(&delivery.stream().served_counts);
        // A moment the scrape view holds the series the stream record lists, and none other: what
        // a series found later is dated after (here, and by the next run).
        let noted = self.births_noted.0 == series;
        if caught_up && noted {
            self.published_ns = Some(now_ns);
            if let Err(e) = delivery.note_publication(now_ns, false, &lifetime, &self_stats.counts) {
                success = false;
                events::store::state_write_failed("stream", "note the publication", &e, Tried::Repeatedly);
            }
        }
        let counts = *store.counts();
        if self.snapshot_counts != Some(counts) {
            let doc = StatusJson {
                prometheus: self.serving.clone(),
                ..StatusJson::of(store.lifetime(), &counts)
            };
            match status_file::write(state_dir, &doc) {
                Ok(()) => self.snapshot_counts = Some(counts),
                Err(e) => events::store::state_write_failed(
                    "status.json",
                    "write the status snapshot",
                    &e,
                    Tried::OnChange,
                ),
            }
        }
        self.scrape_views.send_replace(Arc::new(ScrapeView {
            lifetime,
            births: self.births_noted.1.clone(),
            self_stats,
            ready,
        }));
        if self.serving.is_some() {
            let seconds = started.elapsed().as_secs_f64();
            self.last = Some(SinkRun { seconds, success });
        }
    }

    /// At a clean stop: notes the last publication, if it served the series the stream record
    /// lists, so that a series a next run finds is dated just after it.
    pub fn note_the_last(&self, store: &Store, delivery: &mut Delivery) {
        if self.published_ns.is_none() || store.lifetime().len() != self.births_noted.0 {
            return;
        }
        let last = self.scrape_views.borrow().clone();
        let now_ns = crate::export::otlp::now_ns();
        if let Err(e) = delivery.note_publication(now_ns, true, &last.lifetime, &last.self_stats.counts) {
            events::store::state_write_failed("stream", "note the last publication", &e, Tried::Repeatedly);
        }
    }
}
