//! Exports over OTLP and `/metrics`: outages, what the collector refused or said, the points
//! held back, and what a one-shot run sent.

use std::fmt::Display;
use std::time::Duration;

/// An export failed and an outage begins (said once an outage; `error` names the endpoint).
pub fn outage(error: &dyn Display) {
    tracing::warn!(event = "export.outage", error = %error,
        "{error}; retrying with backoff while ingestion goes on (one warning per outage)"
    );
}

/// The outage of `lasted` is over: an export to `endpoint` was accepted.
pub fn outage_over(endpoint: &str, lasted: Duration) {
    tracing::info!(
        event = "export.outage_over",
        duration_ms = lasted.as_millis() as u64,
        "export to {endpoint} works again after {lasted:.0?}; nothing was lost"
    );
}

/// `count` refusals in a row (`error`, the last): nothing reaches the backend.
pub fn refused_repeatedly(count: u64, error: &str) {
    tracing::warn!(event = "export.refused_repeatedly", count, error = %error,
        "the collector has refused {count} exports in a row ({error}); nothing reaches the backend until that is fixed: check the collector's logs and limits"
    );
}

/// The collector took an export but rejected some of its points: `warning`, its partial-success
/// message as the exporter shows it (one inert line).
pub fn partial(warning: &str) {
    tracing::warn!(event = "export.partial", "{warning}");
}

/// The collector accepts every point again.
pub fn partial_over() {
    tracing::info!(
        event = "export.partial_over",
        "the collector accepts every data point again"
    );
}

/// `count` points are held back (docs/counting-rules.md, "Never down").
pub fn held(count: usize) {
    tracing::warn!(
        event = "export.held",
        count,
        "{count} data points held back: the store is behind what was exported before (a power cut, a store put back from a backup, or a rebuilt store whose ledger lost lines); each is sent again once the ledger brings it back up"
    );
}

/// No point is held back any more.
pub fn held_over() {
    tracing::info!(event = "export.held_over", "no data point is held back any more");
}

/// The collector refused the zeros of `count` new series as data (docs/counting-rules.md,
/// "Births").
pub fn births_refused(count: usize) {
    tracing::warn!(
        event = "export.births_refused",
        count,
        "the collector refused the zeros of {count} new series as data; they are counted from their first value (docs/counting-rules.md, \"Births\")"
    );
}

/// A request was refused as too large: requests of at most `max_kib` from now on.
pub fn request_shrunk(max_kib: usize) {
    tracing::warn!(
        event = "export.request_shrunk",
        max_kib,
        "the collector refused a request as too large; sending requests of at most {max_kib} KiB from now on"
    );
}

/// At a stop, the export in flight did not finish.
pub fn abandoned() {
    tracing::warn!(
        event = "export.abandoned",
        "the export in flight did not finish; the next export supersedes it"
    );
}

/// A one-shot delta run had nothing new: `endpoint` was not contacted.
pub fn nothing_new(endpoint: &str) {
    tracing::info!(
        event = "export.nothing_new",
        "nothing new to export ({endpoint} was not contacted)"
    );
}

/// A one-shot run sent `count` points to `endpoint`.
pub fn sent(count: usize, endpoint: &str) {
    tracing::info!(
        event = "export.sent",
        count,
        "exported {count} data points to {endpoint}"
    );
}

/// `OTEL_RESOURCE_ATTRIBUTES` names the instance, which names the store's stream.
pub fn shared_instance() {
    tracing::warn!(
        event = "resource.shared_instance",
        "OTEL_RESOURCE_ATTRIBUTES sets service.instance.id, which names this store's stream: every exporter given the same value is added into one series; give each machine its own, or remove it"
    );
}

/// `/metrics` serves on `address`, over `scheme` (`http`, or `https` under a web configuration
/// with TLS).
pub fn serving(address: &dyn Display, scheme: &str) {
    tracing::info!(event = "prometheus.serving", address = %address, scheme,
        "serving Prometheus metrics on {scheme}://{address}/metrics"
    );
}

/// The web configuration read again for a new connection cannot be used: connections are
/// refused until it is fixed, as the exporter-toolkit refuses them.
pub fn web_config_refused(error: &dyn Display) {
    tracing::error!(event = "prometheus.web_config_refused", error = %error,
        "{error}; connections to /metrics are refused until it is fixed"
    );
}

/// `/metrics` cannot accept connections for want of descriptors; tried again every `pause`.
pub fn starved(error: &dyn Display, pause: Duration) {
    #[cfg(unix)]
    const OUT: &str = "the process is out of file descriptors";
    #[cfg(unix)]
    const FIX: &str = "Raise LimitNOFILE (or `ulimit -n`), or find the client holding connections open";
    #[cfg(windows)]
    const OUT: &str = "the system is out of sockets";
    #[cfg(windows)]
    const FIX: &str = "Find the client holding connections open";
    tracing::warn!(event = "prometheus.starved", error = %error,
        "/metrics cannot accept connections: {OUT} ({error}); retrying every {}s. {FIX}",
        pause.as_secs()
    );
}

/// `/metrics` cannot accept connections for another reason than descriptors (the kernel short of
/// memory or buffers, a listener that broke); tried again after pauses of up to `longest`.
pub fn accept_failing(error: &dyn Display, longest: Duration) {
    tracing::warn!(event = "prometheus.accept_failing", error = %error,
        "/metrics cannot accept connections ({error}); retrying after pauses of up to {}s. If it lasts, free memory or network buffers (see what else runs on the machine), or restart the exporter",
        longest.as_secs()
    );
}

/// `/metrics` accepts connections again.
pub fn accepting() {
    tracing::info!(
        event = "prometheus.accepting",
        "/metrics accepts connections again"
    );
}
