//! `once`: ingest what is new, export the store's lifetime totals once, flush, exit.

use std::io::ErrorKind;
use std::sync::atomic::AtomicBool;

use crate::delivery::Delivery;
use crate::events;
use crate::events::ledger::{Lines, ReadOnce, Reader};
use crate::export::otlp::OtlpExporter;
use crate::export::self_metrics::SelfStats;
use crate::ingest::{self, IngestError};
use crate::settings::Settings;
use crate::store::Store;

/// The top-level entry point for `reasonix-exporter once`.
pub async fn once(settings: &Settings) -> anyhow::Result<()> {
    let stats_dir = &settings.stats_dir.value;
    // Listing the ledger (a `stat` per file) needs no store: it runs on a second thread while
    // sled opens its log, which takes longer.
    let lister = {
        let stats_dir = stats_dir.clone();
        std::thread::spawn(move || ingest::list(&stats_dir))
    };
    let mut store = Store::open(&settings.state_dir.value, settings.reset_state)?;
    // The export's record, or the close, flushes what the ingest commits.
    store.defer_commit_flush();
    let mut delivery = Delivery::open(&mut store, settings.reset_state)?;
    let listing = match lister.join() {
        Ok(listing) => listing,
        // Listing does not panic; should it ever, list here.
        Err(_) => ingest::list(stats_dir),
    };
    let mut self_stats = SelfStats::default();
    match crate::daemon::read_ledger(
        &mut store,
        listing,
        &AtomicBool::new(false),
        crate::ledger::tail::FullCheck::WhenDue,
    ) {
        Ok(report) => {
            self_stats = SelfStats {
                // Counters: the store's lifetime counts, one stream for its life (this run's
                // alone would go down from the last export's).
                counts: *store.counts(),
                files_tracked: report.files as u64,
                last_poll_seconds: report.duration().as_secs_f64(),
                last_poll_end: SelfStats::unix_seconds(report.finished),
                store_bytes: store.disk_size(),
                export_failures: 0,
                sinks: [None; 2],
            };
            say_ingested(&report);
        }
        // Nothing to read yet is not a failure: the store's totals still go out.
        Err(IngestError::StatsDir { source, .. }) if source.kind() == ErrorKind::NotFound => {
            self_stats.counts = *store.counts();
            events::ledger::stats_dir_missing(stats_dir, &settings.stats_dir.origin, Reader::Once)
        }
        Err(e) => return Err(e.into()),
    }

    let Some(otlp) = &settings.otlp else {
        drop(delivery);
        store.close_without_fsync()?;
        return Ok(());
    };
    let naming = &settings.naming;
    let instance = delivery.identity(|| naming.fresh(), &naming.legacy);
    let mut exporter = OtlpExporter::new(
        otlp.target.clone(),
        otlp.temporality,
        otlp.gen_ai,
        &instance,
        &otlp.resource,
    )?;
    let report = exporter
        .export(&store, &mut delivery, &self_stats)
        .await
        .map_err(|e| {
            anyhow::anyhow!(
                "{e}; nothing was lost: what was ingested stays committed and is exported next time"
            )
        })?;
    if report.held > 0 {
        events::export::held(report.held);
    }
    if let Some(warning) = report.accepted.warning() {
        events::export::partial(&warning);
    }
    say_exported(&report, &otlp.target.shown_endpoint());
    drop(delivery);
    store.close_without_fsync()?;
    Ok(())
}

/// What the poll read, and the files it could not.
fn say_ingested(report: &ingest::PollReport) {
    let c = report.counts;
    events::ledger::read_once(ReadOnce {
        lines: Lines {
            counted: c.counted,
            duplicate: c.duplicate,
            rejected: c.rejected_total(),
        },
        files_read: report.files_read,
        files: report.files,
        took: report.elapsed,
        listed_in: report.listed_in,
    });
    let first = report.first_failure.as_ref();
    crate::daemon::warn_unreadable(report.files_failed, first, Reader::Once);
}

/// What the export did, in one line.
fn say_exported(report: &crate::export::otlp::ExportReport, endpoint: &str) {
    if report.requests == 0 {
        // Delta with no new lines: nothing to send, and the collector was not asked anything.
        events::export::nothing_new(endpoint);
    } else {
        events::export::sent(report.data_points, endpoint);
    }
}
