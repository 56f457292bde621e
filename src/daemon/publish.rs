//! What `/metrics` and `status` are handed after every commit: what delivery says a scrape may
//! serve (`delivery::scrape`), and the status document.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::watch;

use crate::delivery::{Delivery, Scrapes, Serving};
use crate::events;
use crate::events::store::Tried;
use crate::export::prometheus::ScrapeView;
use crate::export::self_metrics::{SelfStats, SinkRun};
use crate::status_file::{self, StatusJson};
use crate::store::Store;
use crate::store::counts::IngestCounts;

pub(super) struct Published {
    scrape_views: watch::Sender<Arc<ScrapeView>>,
    /// The address `/metrics` is served on, as bound.
    serving: Option<String>,
    /// The counts as of the last `status.json` written.
    snapshot_counts: Option<IngestCounts>,
    /// What delivery keeps of the publications between them.
    scrapes: Scrapes,
    /// How the last hand-off to `/metrics` went (a self-metric), when it is served.
    last: Option<SinkRun>,
}

impl Published {
    pub fn new(scrape_views: watch::Sender<Arc<ScrapeView>>, serving: Option<String>) -> Published {
        Published {
            scrape_views,
            serving,
            snapshot_counts: None,
            scrapes: Scrapes::default(),
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
        let serving = Serving {
            now_ns: crate::export::otlp::now_ns(),
            served: self.serving.is_some(),
            caught_up,
            counts: self_stats.counts,
        };
        let served = delivery.serve(store, &mut self.scrapes, serving);
        self_stats.counts = served.counts;
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
            lifetime: served.lifetime,
            births: served.births,
            self_stats,
            ready,
        }));
        if self.serving.is_some() {
            let seconds = started.elapsed().as_secs_f64();
            self.last = Some(SinkRun {
                seconds,
                success: served.success,
            });
        }
    }

    /// At a clean stop: the last publication noted, as it was served (see [`Delivery::serve_last`]).
    pub fn note_the_last(&self, store: &Store, delivery: &mut Delivery) {
        let last = self.scrape_views.borrow().clone();
        let now_ns = crate::export::otlp::now_ns();
        let served = (&last.lifetime, &last.self_stats.counts);
        delivery.serve_last(store, &self.scrapes, now_ns, served);
    }
}
