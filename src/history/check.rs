//! `history --check URL`: the labels the history would carry, checked against the live series
//! the backend holds, before a point is written. Every series of the history must be one the
//! live stream continues: a live `reasonix_tokens_total` with exactly its labels (its own and
//! those given by `--label`). When one is not, the answer names what the backend's live series
//! of the same model, provider and source carry instead, as the `--label`s to give.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::HistoryError;
use crate::export::transport::{read_capped, redacted};

/// A series' labels, without `__name__`.
pub type Labels = BTreeMap<String, String>;

/// How many other label sets an answer names.
const SHOWN: usize = 3;
/// The most of an answer read: the series of one metric, of a team's machines.
const MAX_ANSWER_BYTES: usize = 64 << 20;

/// The history's labels against the live series.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every series of the history is a live one: how many.
    Match(usize),
    /// `series` (its own labels) has no live series with the labels given; `found` are the label
    /// sets besides its own that live series of it carry (a few of them).
    Missing { series: Labels, found: Vec<Labels> },
}

/// Whether each history series, its `own` labels with `given` added, is a `live` series. The
/// label sets named instead are this store's first (those with a value equal to `instance`, its
/// `service.instance.id`): in a team's backend every machine has the same model and source.
pub fn verdict(own: &[Labels], given: &[(String, String)], live: &[Labels], instance: &str) -> Verdict {
    let live_sets: BTreeSet<&Labels> = live.iter().collect();
    for series in own {
        let mut wanted = series.clone();
        wanted.extend(given.iter().cloned());
        if live_sets.contains(&wanted) {
            continue;
        }
        let found: BTreeSet<Labels> = live
            .iter()
            .filter(|l| series.iter().all(|(k, v)| l.get(k) == Some(v)))
            .map(|l| {
                l.iter()
                    .filter(|(k, _)| !series.contains_key(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .collect();
        let (mut found, others): (Vec<Labels>, Vec<Labels>) =
            found.into_iter().partition(|l| l.values().any(|v| v == instance));
        found.extend(others);
        found.truncate(SHOWN);
        return Verdict::Missing {
            series: series.clone(),
            found,
        };
    }
    Verdict::Match(own.len())
}

/// The one line that says what to give, for a [`Verdict::Missing`].
pub fn mismatch(
    url: &str,
    metric: &str,
    given: &[(String, String)],
    series: &Labels,
    found: &[Labels],
) -> String {
    let selector = |labels: &Labels| {
        let pairs: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        pairs.join(",")
    };
    let flags = |labels: &Labels| {
        let flags: Vec<String> = labels.iter().map(|(k, v)| format!("--label {k}={v}")).collect();
        if flags.is_empty() {
            "no more labels".to_owned()
        } else {
            flags.join(" ")
        }
    };
    let url = redacted(url);
    let given: Labels = given.iter().cloned().collect();
    if found.is_empty() {
        return crate::inert_text::one_line(
            &format!(
                "{url} holds no live {metric}{{{}}} since the stream's first send: check that it is the backend the live stream goes to and that the stream has arrived (a few export intervals), then run again",
                selector(series)
            ),
            2000,
        );
    }
    let found: Vec<String> = found.iter().map(|l| format!("[{}]", flags(l))).collect();
    let line = format!(
        "the history's {metric}{{{}}} with {} is not a live series in {url}, where that series carries {}: give this machine's stream's labels as --label, then run again",
        selector(series),
        if given.is_empty() {
            "no --label".to_owned()
        } else {
            format!("[{}]", flags(&given))
        },
        found.join(" or ")
    );
    // Label values are the backend's: shown as one printable line.
    crate::inert_text::one_line(&line, 2000)
}

/// The live series of `metric` in the Prometheus query API at `url` between `start_s` and
/// `end_s` (Unix seconds) that the verdict on the history's series `own` (with `given` labels,
/// this store's `instance`) can use: each one's labels (see [`parse_series`]).
pub async fn live_series(
    url: &str,
    metric: &str,
    (start_s, end_s): (u64, u64),
    (own, given, instance): (&[Labels], &[(String, String)], &str),
) -> Result<Vec<Labels>, HistoryError> {
    let failed = |detail: String| HistoryError::Check {
        url: redacted(url),
        detail,
    };
    crate::export::tls::install_crypto_provider();
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| failed(e.to_string()))?;
    let endpoint = format!("{}/api/v1/series", url.trim_end_matches('/'));
    let mut endpoint =
        reqwest::Url::parse(&endpoint).map_err(|e| failed(format!("not a valid URL ({e})")))?;
    endpoint
        .query_pairs_mut()
        .append_pair("match[]", metric)
        .append_pair("start", &start_s.to_string())
        .append_pair("end", &end_s.to_string());
    let response = client.get(endpoint).send().await;
    let response =
        response.map_err(|e| failed(crate::inert_text::one_line(&e.without_url().to_string(), 200)))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(format!("it answered HTTP {status}")));
    }
    let Some(body) = read_capped(response, MAX_ANSWER_BYTES).await else {
        return Err(failed(format!(
            "its answer broke off or is over {} MiB",
            MAX_ANSWER_BYTES >> 20
        )));
    };
    parse_series(&body, own, given, instance)
        .ok_or_else(|| failed("its answer is not the query API's JSON".to_owned()))
}

/// The label sets of a series API answer (`{"data":[{label: value, …}, …]}`) that [`verdict`]
/// can use, read as they stream past: those of one of the history's series (`own`: every one of
/// its labels, and any others), the same set kept once, and of each of its series at most
/// [`KEPT_PER_SERIES`] that carry `instance` and as many that do not, besides the one it wants
/// (its labels with `given`). So memory follows the history's series, not the answer's size or
/// shape (millions of tiny objects, one huge value, a flood of look-alike series). `None` when it
/// is not that JSON.
pub fn parse_series(
    body: &[u8],
    own: &[Labels],
    given: &[(String, String)],
    instance: &str,
) -> Option<Vec<Labels>> {
    let wanted: BTreeSet<Labels> = own
        .iter()
        .map(|series| {
            let mut wanted = series.clone();
            wanted.extend(given.iter().cloned());
            wanted
        })
        .collect();
    let mut filter = Filter {
        own,
        wanted,
        instance,
        kept: BTreeSet::new(),
        counts: vec![(0, 0); own.len()],
    };
    let mut de = serde_json::Deserializer::from_slice(body);
    let has_data = de::Deserializer::deserialize_map(&mut de, Answer(&mut filter)).ok()?;
    de.end().ok()?;
    has_data.then(|| filter.kept.into_iter().collect())
}

/// Of each history series, the most other label sets kept of those with this store's instance,
/// and of those without: [`SHOWN`] are named, a few more keep the choice stable.
const KEPT_PER_SERIES: usize = 16;

/// What [`parse_series`] keeps.
struct Filter<'a> {
    own: &'a [Labels],
    wanted: BTreeSet<Labels>,
    instance: &'a str,
    kept: BTreeSet<Labels>,
    /// Per series of `own`: other label sets kept with the instance, and without.
    counts: Vec<(usize, usize)>,
}

impl Filter<'_> {
    fn offer(&mut self, labels: Labels) {
        if self.kept.contains(&labels) {
            return;
        }
        if self.wanted.contains(&labels) {
            self.kept.insert(labels);
            return;
        }
        let with_instance = labels.values().any(|v| v == self.instance);
        let mut keep = false;
        for (series, counts) in self.own.iter().zip(&mut self.counts) {
            if !series.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                continue;
            }
            let count = if with_instance {
                &mut counts.0
            } else {
                &mut counts.1
            };
            if *count < KEPT_PER_SERIES {
                *count += 1;
                keep = true;
            }
        }
        if keep {
            self.kept.insert(labels);
        }
    }
}

/// The top level of an answer: `data` is read, everything else skipped; whether there was a
/// `data` array.
struct Answer<'f, 'a>(&'f mut Filter<'a>);

impl<'de> Visitor<'de> for Answer<'_, '_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the series API's answer")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut has_data = false;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "data" && !has_data {
                has_data = true;
                map.next_value_seed(Data(&mut *self.0))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(has_data)
    }
}

/// The `data` array: each series read on its own, and offered to the filter.
struct Data<'f, 'a>(&'f mut Filter<'a>);

impl<'de> de::DeserializeSeed<'de> for Data<'_, '_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Data<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of series")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(series) = seq.next_element::<Series>()? {
            if let Some(labels) = series.0 {
                self.0.offer(labels);
            }
        }
        Ok(())
    }
}

/// One series' labels without `__name__`; `None` when a value is not a string (its value
/// skipped, never held), or when it has more than [`MAX_LABELS`] (the rest skipped as read).
struct Series(Option<Labels>);

/// The most labels a series of a backend carries that is read: Prometheus' own default limit
/// per series is far below; a series past it is no live series of this history.
const MAX_LABELS: usize = 128;

impl<'de> de::Deserialize<'de> for Series {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Series, D::Error> {
        deserializer.deserialize_any(SeriesVisitor)
    }
}

struct SeriesVisitor;

impl<'de> Visitor<'de> for SeriesVisitor {
    type Value = Series;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a series' labels")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Series, A::Error> {
        let mut labels = Some(Labels::new());
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value::<TextOrSkipped>()?.0;
            match (&mut labels, value) {
                (Some(held), Some(_)) if held.len() == MAX_LABELS => labels = None,
                (Some(held), Some(value)) if key != "__name__" => {
                    held.insert(key, value);
                }
                (_, Some(_)) => {}
                (_, None) => labels = None,
            }
        }
        Ok(Series(labels))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Series, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Series(None))
    }

    fn visit_str<E>(self, _: &str) -> Result<Series, E> {
        Ok(Series(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Series, E> {
        Ok(Series(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Series, E> {
        Ok(Series(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Series, E> {
        Ok(Series(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Series, E> {
        Ok(Series(None))
    }
    fn visit_unit<E>(self) -> Result<Series, E> {
        Ok(Series(None))
    }
}

/// A label's value: a string, or anything else skipped without being held.
struct TextOrSkipped(Option<String>);

impl<'de> de::Deserialize<'de> for TextOrSkipped {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<TextOrSkipped, D::Error> {
        deserializer.deserialize_any(TextOrSkippedVisitor)
    }
}

struct TextOrSkippedVisitor;

impl<'de> Visitor<'de> for TextOrSkippedVisitor {
    type Value = TextOrSkipped;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a label value")
    }
    fn visit_str<E>(self, v: &str) -> Result<TextOrSkipped, E> {
        Ok(TextOrSkipped(Some(v.to_owned())))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<TextOrSkipped, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(TextOrSkipped(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TextOrSkipped, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(TextOrSkipped(None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<TextOrSkipped, E> {
        Ok(TextOrSkipped(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<TextOrSkipped, E> {
        Ok(TextOrSkipped(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<TextOrSkipped, E> {
        Ok(TextOrSkipped(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<TextOrSkipped, E> {
        Ok(TextOrSkipped(None))
    }
    fn visit_unit<E>(self) -> Result<TextOrSkipped, E> {
        Ok(TextOrSkipped(None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_answer_is_read_into_the_series_the_verdict_uses_and_no_more() {
        let own = [labels(&[
            ("model_ref", "m"),
            ("provider", "p"),
            ("source", "cli"),
        ])];
        let given = [("job".to_owned(), "rx".to_owned())];
        let body = br#"{"status":"success","data":[
            {"__name__":"reasonix_tokens_total","model_ref":"m","provider":"p","source":"cli","job":"rx"},
            {"model_ref":"m","provider":"p","source":"cli","instance":"alice"},
            {"model_ref":"other","provider":"p","source":"cli"},
            {"model_ref":"m","provider":"p","source":"cli","odd":[1,{"a":2}]},
            {},[],"x",3
        ],"warnings":["w"]}"#;
        let live = parse_series(body, &own, &given, "alice").unwrap();
        assert_eq!(
            live,
            [
                labels(&[
                    ("instance", "alice"),
                    ("model_ref", "m"),
                    ("provider", "p"),
                    ("source", "cli")
                ]),
                labels(&[
                    ("job", "rx"),
                    ("model_ref", "m"),
                    ("provider", "p"),
                    ("source", "cli")
                ]),
            ]
        );
        assert_eq!(parse_series(b"[]", &own, &given, "alice"), None);
        assert_eq!(
            parse_series(br#"{"status":"error"}"#, &own, &given, "alice"),
            None
        );
        assert_eq!(parse_series(br#"{"data":[{}]"#, &own, &given, "alice"), None);
    }

    #[test]
    fn a_series_of_a_million_labels_is_skipped_as_it_is_read() {
        let own = [labels(&[("model_ref", "m")])];
        let many: Vec<String> = (0..100_000).map(|i| format!(r#""l{i}":"""#)).collect();
        let body = format!(
            r#"{{"data":[{{"model_ref":"m",{}}},{{"model_ref":"m","job":"rx"}}]}}"#,
            many.join(",")
        );
        let live = parse_series(body.as_bytes(), &own, &[], "me").unwrap();
        assert_eq!(live, [labels(&[("job", "rx"), ("model_ref", "m")])]);
    }

    #[test]
    fn a_flood_of_look_alike_series_keeps_a_few_of_each_kind() {
        let own = [labels(&[("model_ref", "m")])];
        let mut body = String::from(r#"{"data":["#);
        for i in 0..10_000 {
            body.push_str(&format!(
                r#"{{"model_ref":"m","x":"{i}"}},{{"model_ref":"m","instance":"me","x":"{i}"}},"#
            ));
        }
        body.push_str(r#"{"model_ref":"m","job":"rx"}]}"#);
        let given = [("job".to_owned(), "rx".to_owned())];
        let live = parse_series(body.as_bytes(), &own, &given, "me").unwrap();
        assert_eq!(
            live.len(),
            2 * KEPT_PER_SERIES + 1,
            "the wanted one is never crowded out"
        );
        assert!(matches!(verdict(&own, &given, &live, "me"), Verdict::Match(1)));
    }

    #[test]
    fn each_history_series_must_be_a_live_one_and_the_answer_names_what_to_give() {
        let own = [labels(&[
            ("model_ref", "m"),
            ("provider", "p"),
            ("source", "cli"),
        ])];
        let mut live = labels(&[("job", "rx"), ("instance", "alice")]);
        live.extend(own[0].clone());
        let other = {
            let mut l = live.clone();
            l.insert("instance".into(), "bob".into());
            l
        };
        let given = [
            ("job".to_owned(), "rx".to_owned()),
            ("instance".to_owned(), "alice".to_owned()),
        ];
        let live_sets = [other.clone(), live.clone()];
        assert_eq!(verdict(&own, &given, &live_sets, "alice"), Verdict::Match(1));
        let Verdict::Missing { series, found } = verdict(&own, &given[..1], &live_sets, "alice") else {
            panic!("instance is missing");
        };
        assert_eq!(found.len(), 2);
        assert_eq!(found[0]["instance"], "alice", "this store's first: {found:?}");
        let line = mismatch(
            "http://u:secret@vm:8428",
            "reasonix_tokens_total",
            &given[..1],
            &series,
            &found,
        );
        assert!(line.contains("--label instance=alice --label job=rx"), "{line}");
        assert!(!line.contains("secret") && !line.contains('\n'), "{line}");
        // What the backend sends back is shown as one printable line.
        let mut hostile = live.clone();
        hostile.insert("instance".into(), "eve\n\u{1b}[31mforged".into());
        let Verdict::Missing { series, found } = verdict(&own, &given[..1], &[hostile], "alice") else {
            panic!("instance is missing");
        };
        let line = mismatch(
            "http://vm:8428",
            "reasonix_tokens_total",
            &given[..1],
            &series,
            &found,
        );
        assert!(!line.chars().any(char::is_control), "{line:?}");
        let none = verdict(&own, &given, &[], "alice");
        assert!(matches!(&none, Verdict::Missing { found, .. } if found.is_empty()));
    }
}
