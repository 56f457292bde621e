//! The pull leg's one step: what a scrape may serve after a commit. The store's totals, never
//! less than was served before; the births of new series, dated before any scrape could have
//! seen them; and the publication, noted in the stream record once the run has caught up.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Delivery;
use crate::events;
use crate::events::store::Tried;
use crate::series::Sums;
use crate::store::Store;
use crate::store::counts::IngestCounts;
use crate::store::stream::SeriesId;

/// What the pull leg keeps between publications, for as long as the run serves.
#[derive(Default)]
pub struct Scrapes {
    /// How many series the store had when their births were last noted, and the births then.
    births_noted: (usize, Arc<BTreeMap<SeriesId, u64>>),
    /// The time of the last publication since the run caught up with the ledger: a series
    /// published later was not in it. `None` until then, when a new series may be one that a
    /// run this store does not know of published (a store restored from a backup).
    published_ns: Option<u64>,
}

/// A publication about to be handed to `/metrics`.
pub struct Serving {
    pub now_ns: u64,
    /// `/metrics` is served: a first publication is then the stream's first send.
    pub served: bool,
    /// The run has read the ledger up to now: what it serves is the store's whole count.
    pub caught_up: bool,
    /// The line counts the exporter's own metrics would serve.
    pub counts: IngestCounts,
}

/// What a scrape may serve.
pub struct Served {
    /// The store's totals, each series raised to what was served before.
    pub lifetime: Sums,
    /// The line counts, raised the same way.
    pub counts: IngestCounts,
    /// Each series' birth, for `_created`.
    pub births: Arc<BTreeMap<SeriesId, u64>>,
    /// Every note the stream record needed was written.
    pub success: bool,
}

impl Delivery {
    /// What a scrape may serve of `store` now, its births and publication noted durably (a note
    /// that cannot be written is said, and tried again by the next publication).
    pub fn serve(&mut self, store: &Store, scrapes: &mut Scrapes, serving: Serving) -> Served {
        let Serving {
            now_ns,
            served,
            caught_up,
            counts,
        } = serving;
        let mut success = true;
        // Series never go away, so a count that changed is the one sign of new ones. A new one's
        // zero goes a millisecond after the last moment it is known to have been absent, before
        // any scrape could have seen it (docs/counting-rules.md, "Births").
        let series = store.lifetime().len();
        if series != scrapes.births_noted.0 {
            if let Err(e) = self.bring_stream_back(now_ns) {
                success = false;
                events::store::state_write_failed("stream", "note the clock's time", &e, Tried::OnChange);
            }
            let absent_ns = scrapes
                .published_ns
                .unwrap_or_else(|| self.stream.newest_ns())
                .min(now_ns);
            let served = served.then_some(now_ns);
            match self.record_births(store, absent_ns.saturating_add(1_000_000), served) {
                Ok(()) => {
                    let born = self.stream.births.iter().filter(|(_, ns)| **ns > 0);
                    let born = born.map(|(k, v)| (k.clone(), *v)).collect();
                    scrapes.births_noted = (series, Arc::new(born));
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
        lifetime.raise_to(&self.stream.served);
        let counts = counts.raised_to(&self.stream.served_counts);
        // A moment the scrape view holds the series the stream record lists, and none other: what
        // a series found later is dated after (here, and by the next run).
        if caught_up && scrapes.births_noted.0 == series {
            scrapes.published_ns = Some(now_ns);
            if let Err(e) = self.note_publication(now_ns, (false, served), &lifetime, &counts) {
                success = false;
                events::store::state_write_failed("stream", "note the publication", &e, Tried::Repeatedly);
            }
        }
        Served {
            lifetime,
            counts,
            births: scrapes.births_noted.1.clone(),
            success,
        }
    }

    /// At a clean stop: notes the last publication, `lifetime` and `counts` as it served them,
    /// if it served the series the stream record lists, so that a series a next run finds is
    /// dated just after it.
    pub fn serve_last(
        &mut self,
        store: &Store,
        scrapes: &Scrapes,
        now_ns: u64,
        (lifetime, counts): (&Sums, &IngestCounts),
    ) {
        if scrapes.published_ns.is_none() || store.lifetime().len() != scrapes.births_noted.0 {
            return;
        }
        if let Err(e) = self.note_publication(now_ns, (true, false), lifetime, counts) {
            events::store::state_write_failed("stream", "note the last publication", &e, Tried::Repeatedly);
        }
    }
}
