//! `history --check URL`: the labels the history would carry, checked against the live series
//! the backend holds, before a point is written. Every series of the history must be one the
//! live stream continues: a live `reasonix_tokens_total` with exactly its labels (its own and
//! those given by `--label`). When one is not, the answer names what the backend's live series
//! of the same model, provider and source carry instead, as the `--label`s to give.

use std::collections::{BTreeMap, BTreeSet};

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
        return crate::shown::one_line(
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
    crate::shown::one_line(&line, 2000)
}

/// The live series of `metric` in the Prometheus query API at `url` between `start_s` and
/// `end_s` (Unix seconds): each one's labels.
pub async fn live_series(
    url: &str,
    metric: &str,
    start_s: u64,
    end_s: u64,
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
    let response = response.map_err(|e| failed(crate::shown::one_line(&e.without_url().to_string(), 200)))?;
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
    let answer: serde_json::Value = serde_json::from_slice(&body)
        .map_err(|_| failed("its answer is not the query API's JSON".to_owned()))?;
    let Some(data) = answer.get("data").and_then(|d| d.as_array()) else {
        return Err(failed("its answer is not the query API's JSON".to_owned()));
    };
    let labels = data.iter().filter_map(|series| {
        let labels = series.as_object()?.iter().filter(|(k, _)| *k != "__name__");
        labels
            .map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect::<Option<Labels>>()
    });
    Ok(labels.collect())
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
