//! What a backend would hold of the requests a receiver kept: the newest cumulative values, the
//! deltas summed, the cost views, and the checks that the points are well formed.

use super::*;

/// Spend by `(series, currency, billing_mode)`.
pub type CostView = BTreeMap<(Series, String, String), f64>;
/// Unpriced requests by `(series, reason)`.
pub type UnpricedView = BTreeMap<(Series, String), u64>;

impl Receiver {
    /// The backend's view of the cumulative cost metrics: per series the newest value of
    /// `reasonix.cost` by `(series, currency, billing_mode)` and of `reasonix.requests.unpriced` by
    /// `(series, reason)`.
    pub fn backend_cost(&self) -> (CostView, UnpricedView) {
        use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value;
        let mut cost: BTreeMap<(Series, String, String), (u64, f64)> = BTreeMap::new();
        let mut unpriced: BTreeMap<(Series, String), (u64, u64)> = BTreeMap::new();
        for req in self.requests() {
            for metric in req
                .resource_metrics
                .iter()
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| &sm.metrics)
            {
                let Some(Data::Sum(sum)) = &metric.data else {
                    continue;
                };
                if !matches!(
                    metric.name.as_str(),
                    "reasonix.cost" | "reasonix.requests.unpriced"
                ) {
                    continue;
                }
                for p in &sum.data_points {
                    let mut attrs: BTreeMap<String, String> = BTreeMap::new();
                    for kv in &p.attributes {
                        if let Some(AnyValue::StringValue(v)) =
                            kv.value.as_ref().and_then(|v| v.value.clone())
                        {
                            attrs.insert(kv.key.clone(), v);
                        }
                    }
                    let series = (
                        attrs["model_ref"].clone(),
                        attrs["provider"].clone(),
                        attrs["source"].clone(),
                    );
                    match (metric.name.as_str(), p.value) {
                        ("reasonix.cost", Some(Value::AsDouble(v))) => {
                            assert_eq!(metric.unit, "{currency}");
                            let key = (series, attrs["currency"].clone(), attrs["billing_mode"].clone());
                            let slot = cost.entry(key).or_insert((0, 0.0));
                            if p.time_unix_nano >= slot.0 {
                                *slot = (p.time_unix_nano, v);
                            }
                        }
                        ("reasonix.requests.unpriced", Some(Value::AsInt(v))) => {
                            let key = (series, attrs["reason"].clone());
                            let slot = unpriced.entry(key).or_insert((0, 0));
                            if p.time_unix_nano >= slot.0 {
                                *slot = (p.time_unix_nano, v as u64);
                            }
                        }
                        (_, other) => panic!("{}: a point of the wrong type: {other:?}", metric.name),
                    }
                }
            }
        }
        (
            cost.into_iter().map(|(k, (_, v))| (k, v)).collect(),
            unpriced.into_iter().map(|(k, (_, v))| (k, v)).collect(),
        )
    }
}

/// One ledger point as sent: `(series, quantity index, start, time, value)`.
type LedgerPoint = (Series, usize, u64, u64, u64);

impl Receiver {
    /// Every ledger point sent, in the order the requests arrived: `(series, quantity index,
    /// start, time, value)`, and the requests' `service.instance.id`s.
    fn ledger_points(&self) -> (Vec<Vec<LedgerPoint>>, Vec<Option<String>>) {
        let mut requests = Vec::new();
        let mut instances = Vec::new();
        for req in self.requests() {
            let mut points = Vec::new();
            for metric in req
                .resource_metrics
                .iter()
                .flat_map(|rm| &rm.scope_metrics)
                .flat_map(|sm| &sm.metrics)
            {
                let (Some(q), Some(Data::Sum(sum))) = (quantity_of(&metric.name), &metric.data) else {
                    continue;
                };
                for p in &sum.data_points {
                    let Some(opentelemetry_proto::tonic::metrics::v1::number_data_point::Value::AsInt(v)) =
                        p.value
                    else {
                        continue;
                    };
                    points.push((
                        series_of(&p.attributes),
                        q,
                        p.start_time_unix_nano,
                        p.time_unix_nano,
                        v as u64,
                    ));
                }
            }
            if !points.is_empty() {
                requests.push(points);
                instances.push(resource_attr(&req, "service.instance.id"));
            }
        }
        (requests, instances)
    }

    /// The start times of every ledger point received.
    pub fn start_times(&self) -> std::collections::BTreeSet<u64> {
        self.ledger_points()
            .0
            .into_iter()
            .flatten()
            .map(|p| p.2)
            .collect()
    }

    /// What a backend keeping one series per label set shows: each series' newest value.
    pub fn newest_values(&self) -> BTreeMap<Series, [u64; 8]> {
        let mut newest: BTreeMap<(Series, usize), (u64, u64)> = BTreeMap::new();
        for (series, q, _, time, value) in self.ledger_points().0.into_iter().flatten() {
            let slot = newest.entry((series, q)).or_insert((0, 0));
            if time >= slot.0 {
                *slot = (time, value);
            }
        }
        let mut out: BTreeMap<Series, [u64; 8]> = BTreeMap::new();
        for ((series, q), (_, value)) in newest {
            out.entry(series).or_insert([0; 8])[q] = value;
        }
        out.retain(|_, v| v.iter().any(|x| *x > 0));
        out
    }

    /// The promises of one durable cumulative stream, over every request received: one start
    /// time and one `service.instance.id` throughout, one point per series and quantity per
    /// request, request times a millisecond apart at least and rising, and no value ever below
    /// one sent before. `Err` says which promise broke first.
    pub fn check_one_stream(&self) -> Result<(), String> {
        self.check_stream(true)
    }

    /// The promises of [`Receiver::check_one_stream`] but the one start time: for a store whose
    /// state folder was deleted, which starts a new stream that must still never go down.
    pub fn check_never_down(&self) -> Result<(), String> {
        self.check_stream(false)
    }

    /// What a backend that keeps points by their time sees: per series and quantity, every
    /// point received in time order (a tie in arrival order), and none below the one before.
    /// `Err` names the first that went down.
    pub fn check_never_down_in_time(&self) -> Result<(), String> {
        let mut points: BTreeMap<(Series, usize), Vec<(u64, u64)>> = BTreeMap::new();
        for (series, q, _, time, value) in self.ledger_points().0.into_iter().flatten() {
            points
                .entry((series, q))
                .or_default()
                .push((time / 1_000_000, value));
        }
        for ((series, q), mut points) in points {
            points.sort_by_key(|(ms, _)| *ms);
            for pair in points.windows(2) {
                if pair[1].1 < pair[0].1 {
                    return Err(format!(
                        "{series:?} quantity {q}: {} at {} ms after {} at {} ms",
                        pair[1].1, pair[1].0, pair[0].1, pair[0].0
                    ));
                }
            }
        }
        Ok(())
    }

    fn check_stream(&self, one_start: bool) -> Result<(), String> {
        let (requests, instances) = self.ledger_points();
        let mut starts = std::collections::BTreeSet::new();
        let mut last_ms = None;
        let mut highest: BTreeMap<(Series, usize), u64> = BTreeMap::new();
        for (i, points) in requests.iter().enumerate() {
            let mut seen = std::collections::BTreeSet::new();
            let times: std::collections::BTreeSet<u64> = points.iter().map(|p| p.3).collect();
            if times.len() != 1 {
                return Err(format!(
                    "request {i} has points at {} different times",
                    times.len()
                ));
            }
            let ms = points[0].3 / 1_000_000;
            if last_ms.is_some_and(|last| ms <= last) {
                return Err(format!(
                    "request {i} is not a millisecond later than the one before"
                ));
            }
            last_ms = Some(ms);
            for (series, q, start, _, value) in points {
                starts.insert(*start);
                if !seen.insert((series.clone(), *q)) {
                    return Err(format!("request {i} has two points of {series:?} quantity {q}"));
                }
                let high = highest.entry((series.clone(), *q)).or_insert(0);
                if value < high {
                    return Err(format!(
                        "request {i}: {series:?} quantity {q} went down from {high} to {value}"
                    ));
                }
                *high = *value;
            }
        }
        if one_start && starts.len() > 1 {
            return Err(format!("{} start times: {starts:?}", starts.len()));
        }
        let ids: std::collections::BTreeSet<_> = instances.iter().collect();
        if ids.len() > 1 || ids.iter().any(|id| id.is_none()) {
            return Err(format!("service.instance.id is not one value: {ids:?}"));
        }
        Ok(())
    }
}

pub fn quantity_of(metric: &str) -> Option<usize> {
    let names = [
        "reasonix.prompt.tokens",
        "reasonix.completion.tokens",
        "reasonix.reasoning.tokens",
        "reasonix.cache_hit.tokens",
        "reasonix.cache_miss.tokens",
        "reasonix.tokens",
        "reasonix.requests",
        "reasonix.turns",
    ];
    debug_assert_eq!(names.len(), QUANTITIES.len());
    names.iter().position(|n| *n == metric)
}

/// The three attributes of a point, which must be exactly `model_ref`, `provider`, `source`.
pub fn series_of(attributes: &[KeyValue]) -> Series {
    let mut found = BTreeMap::new();
    for kv in attributes {
        let Some(AnyValue::StringValue(s)) = kv.value.as_ref().and_then(|v| v.value.clone()) else {
            panic!("attribute {} is not a string", kv.key)
        };
        found.insert(kv.key.clone(), s);
    }
    let keys: Vec<&str> = found.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["model_ref", "provider", "source"],
        "exactly three attributes"
    );
    (
        found["model_ref"].clone(),
        found["provider"].clone(),
        found["source"].clone(),
    )
}

/// A resource attribute's string value.
pub fn resource_attr(req: &ExportMetricsServiceRequest, key: &str) -> Option<String> {
    let resource = req.resource_metrics.first()?.resource.as_ref()?;
    resource
        .attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            AnyValue::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}
