//! Exact totals over gRPC and HTTP, the metrics' names and units, the resource, headers, gzip.

use super::*;

fn check_delivers_exact_totals(receiver: Receiver) {
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 11);
    // A torn last line: not a line yet.
    let mut generator = Generator::new(99);
    let torn = generator.line("2026-08-03");
    let (head, tail) = torn.split_at(30);
    fx.append("2026-08-03.jsonl", head.as_bytes());

    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    check_metric_shape(&receiver);
    check_cost(&receiver, &model);

    // Nothing new: nothing added.
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    // Appended lines, the torn line completed, a new day, a copied day: exactly the new lines.
    let more = generator.day_file("2026-08-02", 40);
    fx.append("2026-08-02.jsonl", more.as_bytes());
    model.feed(more.as_bytes());
    fx.append("2026-08-03.jsonl", format!("{tail}\n").as_bytes());
    model.line(torn.as_bytes());
    let new_day = generator.day_file("2026-08-09", 30);
    fx.append("2026-08-09.jsonl", new_day.as_bytes());
    model.feed(new_day.as_bytes());
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    let copy = std::fs::read(fx.path("2026-08-01.jsonl")).unwrap();
    fx.append("2026-08-01 (1).jsonl", &copy);
    model.feed(&copy);
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    // A moved home: the same files elsewhere, plus one more day.
    let moved = fx.root.path().join("moved");
    std::fs::create_dir_all(moved.join("stats")).unwrap();
    for file in common::files_below(&fx.stats) {
        std::fs::copy(&file, moved.join("stats").join(file.file_name().unwrap())).unwrap();
    }
    let later = generator.day_file("2026-08-10", 20);
    std::fs::write(moved.join("stats/2026-08-10.jsonl"), &later).unwrap();
    model.feed(later.as_bytes());
    let out = fx
        .once_to(&receiver)
        .env("REASONIX_HOME", &moved)
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    check_cost(&receiver, &model);
    // Re-reading the moved files shows as duplicates, so compare the series only.
    assert_eq!(fx.status()["series"], model.expected.status_json()["series"]);
}

/// The spend arrives as the double nearest to the exact sum, per currency and billing mode; the
/// unpriced requests exactly, per reason.
fn check_cost(receiver: &Receiver, model: &Model) {
    let (cost, unpriced) = receiver.backend_cost();
    let want: BTreeMap<_, f64> = model
        .expected
        .cost_decimals()
        .into_iter()
        .map(|(k, decimal)| (k, decimal.parse().unwrap()))
        .collect();
    assert!(!want.is_empty(), "the ledger has priced rows");
    assert_eq!(cost, want);
    assert_eq!(unpriced, model.expected.unpriced);
}

/// Names, units, temporality and resource (README, "Metrics").
fn check_metric_shape(receiver: &Receiver) {
    let requests = receiver.data_requests();
    let first = &requests[0];
    assert_eq!(
        resource_attr(first, "service.name").as_deref(),
        Some("reasonix-exporter")
    );
    assert_eq!(
        resource_attr(first, "service.version").as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert!(resource_attr(first, "host.name").is_some_and(|h| !h.is_empty()));
    let mut units = BTreeMap::new();
    let mut health = BTreeMap::new();
    for rm in &first.resource_metrics {
        for sm in &rm.scope_metrics {
            for m in &sm.metrics {
                if m.name.starts_with("reasonix.") {
                    units.insert(m.name.clone(), m.unit.clone());
                } else {
                    health.insert(m.name.clone(), m.unit.clone());
                }
            }
        }
    }
    // The exporter's own health rides along, under its own prefix.
    for name in [
        "reasonix_exporter.lines.read",
        "reasonix_exporter.lines.rejected",
        "reasonix_exporter.lines.duplicate",
        "reasonix_exporter.bytes.read",
        "reasonix_exporter.files.tracked",
        "reasonix_exporter.poll.duration",
        "reasonix_exporter.label.folds",
        "reasonix_exporter.store.size",
    ] {
        assert!(
            health.contains_key(name),
            "self-metric {name} missing: {health:?}"
        );
    }
    // A count since the process started would start a new stream with every run: /metrics only.
    assert!(!health.contains_key("reasonix_exporter.export.failures"));
    let want: BTreeMap<String, String> = [
        ("reasonix.cache_hit.tokens", "{token}"),
        ("reasonix.cache_miss.tokens", "{token}"),
        ("reasonix.completion.tokens", "{token}"),
        ("reasonix.prompt.tokens", "{token}"),
        ("reasonix.reasoning.tokens", "{token}"),
        ("reasonix.requests", "{request}"),
        ("reasonix.tokens", "{token}"),
        ("reasonix.turns", "{turn}"),
        ("reasonix.cost", "{currency}"),
        ("reasonix.requests.unpriced", "{request}"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(units, want);
}

#[test]
fn once_delivers_exact_totals_over_grpc() {
    check_delivers_exact_totals(Receiver::grpc());
}

#[test]
fn once_delivers_exact_totals_over_http_protobuf() {
    check_delivers_exact_totals(Receiver::http());
}

#[test]
fn resource_honours_otel_service_name_and_attributes() {
    let receiver = Receiver::http();
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 9);
    let out = fx
        .command(&["once", "--otlp-endpoint", &receiver.endpoint])
        .env("OTEL_SERVICE_NAME", "tokens-laptop")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "team=platform,deployment.environment=dev,owner=pay%20ments",
        )
        .output()
        .unwrap();
    assert_success(&out);
    receiver.wait_for_requests(1, Duration::from_secs(5));
    let first = &receiver.data_requests()[0];
    assert_eq!(
        resource_attr(first, "service.name").as_deref(),
        Some("tokens-laptop")
    );
    assert_eq!(resource_attr(first, "team").as_deref(), Some("platform"));
    assert_eq!(
        resource_attr(first, "owner").as_deref(),
        Some("pay ments"),
        "percent-decoded"
    );
    assert!(resource_attr(first, "host.name").is_some());
    // The store's identity: `user@host`, with the state dir's hash (the fixture's is not the
    // default one), nothing that changes from run to run.
    let instance = resource_attr(first, "service.instance.id").expect("service.instance.id");
    assert!(instance.contains('@') && instance.contains('/'), "{instance}");
    assert_success(&fx.export_to(&receiver));
    let again = receiver.data_requests().last().cloned().unwrap();
    assert_eq!(resource_attr(&again, "service.instance.id"), Some(instance));
    // One set by the user wins.
    let out = fx
        .once_to(&receiver)
        .env("OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=alice-laptop")
        .output()
        .unwrap();
    assert_success(&out);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("sets service.instance.id"), "said once: {said}");
    let last = receiver.data_requests().last().cloned().unwrap();
    assert_eq!(
        resource_attr(&last, "service.instance.id").as_deref(),
        Some("alice-laptop")
    );
}

fn check_headers_and_gzip_reach_the_collector(receiver: Receiver) {
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 13);
    let out = fx
        .once_to(&receiver)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=plat%20form")
        .env("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(receiver.seen(), [(Some("plat form".to_string()), true)]);
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

#[test]
fn standard_headers_and_gzip_reach_the_collector_grpc() {
    check_headers_and_gzip_reach_the_collector(Receiver::grpc());
}

#[test]
fn standard_headers_and_gzip_reach_the_collector_http() {
    check_headers_and_gzip_reach_the_collector(Receiver::http());
}

/// The lines a request says were read: the sum of `reasonix_exporter.lines.read`'s points.
fn lines_read(
    request: &opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest,
) -> i64 {
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
    request
        .resource_metrics
        .iter()
        .flat_map(|rm| &rm.scope_metrics)
        .flat_map(|sm| &sm.metrics)
        .filter(|m| m.name == "reasonix_exporter.lines.read")
        .filter_map(|m| match &m.data {
            Some(Data::Sum(sum)) => Some(sum),
            _ => None,
        })
        .flat_map(|sum| &sum.data_points)
        .map(|p| match p.value {
            Some(Value::AsInt(v)) => v,
            _ => 0,
        })
        .sum()
}

/// The self-metrics' counters are the store's lifetime counts in every `once`, as in `run`: a
/// `once` that reads a few new lines does not send a lower count than the one before it.
#[test]
fn once_sends_the_stores_lifetime_counts_of_lines() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut generator = Generator::new(3);
    fx.append(
        "2026-08-01.jsonl",
        generator.day_file("2026-08-01", 30).as_bytes(),
    );
    assert_success(&fx.export_to(&receiver));
    fx.append("2026-08-01.jsonl", generator.day_file("2026-08-01", 5).as_bytes());
    assert_success(&fx.export_to(&receiver));
    let requests = receiver.data_requests();
    let read: Vec<i64> = requests.iter().map(lines_read).collect();
    assert_eq!(read.first(), Some(&30), "{read:?}");
    assert_eq!(
        read.last(),
        Some(&35),
        "the lifetime count, not this run's 5: {read:?}"
    );
}
