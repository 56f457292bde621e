//! Labels: the documented attributes, invalid and crafted values, folding into `other`, currencies.

use super::*;

#[test]
fn attributes_follow_the_documented_table() {
    let fx = Fixture::new();
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            r#"{"ts":"2026-08-07T01:00:00Z","model":"openrouter/google/gemini-2.5-pro","source":"serve","total":1}"#,
            r#"{"ts":"2026-08-07T01:00:01Z","model":"deepseek-chat","source":"bot","total":2}"#,
            r#"{"ts":"2026-08-07T01:00:02Z","model":"/odd","source":"remote","total":4}"#,
            r#"{"ts":"2026-08-07T01:00:03Z","model":"","source":"","total":8}"#,
        ],
    );
    fx.ingest();
    let got: Vec<(String, String, String, u64)> = fx.status()["series"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let t = |k: &str| s[k].as_str().unwrap().to_string();
            (
                t("model_ref"),
                t("provider"),
                t("source"),
                s["total"].as_u64().unwrap(),
            )
        })
        .collect();
    let want = [
        ("/odd", "default", "remote", 4),
        ("deepseek-chat", "default", "bot", 2),
        ("openrouter/google/gemini-2.5-pro", "openrouter", "serve", 1),
        ("unknown", "unknown", "unknown", 8),
    ];
    let want: Vec<(String, String, String, u64)> = want
        .iter()
        .map(|(m, p, s, t)| (m.to_string(), p.to_string(), s.to_string(), *t))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn long_or_control_label_values_become_invalid() {
    let fx = Fixture::new();
    let long = format!("deepseek/{}", "x".repeat(300));
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            &format!(r#"{{"ts":"2026-08-07T01:00:00Z","model":"{long}","source":"cli","total":1}}"#),
            r#"{"ts":"2026-08-07T01:00:01Z","model":"a\u0007b","source":"cli\n","total":2}"#,
        ],
    );
    fx.ingest();
    let series = fx.status()["series"].clone();
    // Sorted by (model_ref, provider, source): "deepseek" < "default".
    assert_eq!(series[0]["model_ref"], "invalid", "model longer than 256 bytes");
    assert_eq!(series[0]["provider"], "deepseek");
    assert_eq!(series[0]["source"], "cli");
    assert_eq!(series[0]["total"], 1);
    assert_eq!(series[1]["model_ref"], "invalid", "control character in model");
    assert_eq!(series[1]["provider"], "default");
    assert_eq!(series[1]["source"], "invalid", "control character in source");
    assert_eq!(series[1]["total"], 2);
}

#[test]
fn label_text_cannot_pass_for_another_rows_labels() {
    let fx = Fixture::new();
    // Crafted so that naive joining of model and source would give both rows the same key.
    fx.append_lines(
        "2026-08-07.jsonl",
        &[
            r#"{"ts":"2026-08-07T01:00:00Z","model":"a\u0000\u0002b","total":1}"#,
            r#"{"ts":"2026-08-07T01:00:01Z","model":"a","source":"b\u0000\u0001","total":2}"#,
        ],
    );
    fx.ingest();
    let series = fx.status()["series"].clone();
    assert_eq!(series.as_array().unwrap().len(), 2, "{series}");
    assert_eq!(
        (
            series[0]["model_ref"].clone(),
            series[0]["source"].clone(),
            series[0]["total"].clone()
        ),
        (json!("a"), json!("invalid"), json!(2))
    );
    assert_eq!(
        (
            series[1]["model_ref"].clone(),
            series[1]["source"].clone(),
            series[1]["total"].clone()
        ),
        (json!("invalid"), json!("unknown"), json!(1))
    );
}

#[test]
fn attribute_sets_past_one_thousand_fold_into_other() {
    let fx = Fixture::new();
    let rows: Vec<String> = (0..1005)
        .map(|i| format!(r#"{{"ts":"2026-08-07T01:00:00Z","model":"p/m{i}","source":"cli","total":1}}"#))
        .collect();
    let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
    fx.append_lines("2026-08-07.jsonl", &rows);
    fx.ingest();
    let status = fx.status();
    let series = status["series"].as_array().unwrap();
    assert_eq!(series.len(), 1001);
    let other: Vec<&Value> = series.iter().filter(|s| s["model_ref"] == "other").collect();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["total"], 5);
    assert_eq!(sum(&status, "total"), 1005, "folding never loses an increment");
}

/// A set is one of the 1,000 whichever family holds it: rows with a quote and no token counts
/// (a priced row of nothing, an unpriced request) make sets too, and across commits and restarts
/// no more than 1,000 of them are kept.
#[test]
fn attribute_sets_of_quotes_alone_count_toward_the_thousand() {
    let fx = Fixture::new();
    let rows = |from: usize, to: usize| -> Vec<String> {
        (from..to)
            .map(|i| {
                format!(
                    r#"{{"ts":"2026-08-07T01:00:00Z","model":"p/m{i}","source":"cli","cost_complete":true,"cost_amount":"1","cost_currency":"USD"}}"#
                )
            })
            .collect()
    };
    for (from, to) in [(0, 700), (700, 1400)] {
        let rows = rows(from, to);
        fx.append_lines(
            "2026-08-07.jsonl",
            &rows.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        fx.ingest();
    }
    let status = fx.status();
    let cost = status["cost"].as_array().unwrap();
    let sets: std::collections::BTreeSet<&str> =
        cost.iter().map(|c| c["model_ref"].as_str().unwrap()).collect();
    assert_eq!(sets.len(), 1001, "1,000 sets and the fold");
    let other: Vec<&Value> = cost.iter().filter(|c| c["model_ref"] == "other").collect();
    assert_eq!(other.len(), 1);
    assert_eq!(other[0]["amount"], "400");
    let amounts: u64 = cost
        .iter()
        .map(|c| c["amount"].as_str().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(amounts, 1400, "folding never loses an increment");
}

/// Contract §8: `currency`, `billing_mode` and `reason` follow the label rules; a currency is an
/// ISO 4217 code (a well-formed other code makes the row `unknown_currency`) and is never folded;
/// past 32 distinct values of `billing_mode` or `reason` further values are `other`, also across
/// a restart (the cap starts from the values the store has), but `payg`,
/// `subscription_equivalent` and our own reasons never are.
#[test]
fn currencies_are_never_folded_and_other_values_past_thirty_two_become_other() {
    const CURRENCIES: [&str; 40] = [
        "AED", "AFN", "ALL", "AMD", "AOA", "ARS", "AUD", "AWG", "AZN", "BAM", "BBD", "BDT", "BGN", "BHD",
        "BIF", "BMD", "BND", "BOB", "BRL", "BSD", "BTN", "BWP", "BYN", "BZD", "CAD", "CDF", "CHF", "CLP",
        "CNY", "COP", "CRC", "CUP", "CVE", "CZK", "DJF", "DKK", "DOP", "DZD", "EGP", "ERN",
    ];
    let fx = Fixture::new();
    // Well-formed, and no currency: the junk of the issue that once filled the 32.
    let junk = |i: u8| format!("Z{}{}", if i < 26 { 'Z' } else { 'Y' }, (b'A' + i % 26) as char);
    // Row 0's billing mode and reason hold a control character: `invalid`, one of the 32.
    let odd = |i: u8, prefix: &str| {
        if i == 0 {
            r"\u0007".to_string()
        } else {
            format!("{prefix}{i}")
        }
    };
    let priced = |ts: &str, amount: &str, currency: &str, mode: &str| {
        format!(
            r#"{{"ts":"2026-08-07T00:{ts}Z","model":"x/y","source":"cli","total":1,"requests":1,"cost_amount":"{amount}","cost_currency":"{currency}","cost_complete":true,"billing_mode":"{mode}"}}"#
        )
    };
    let rows = |from: u8, to: u8| -> Vec<String> {
        (from..to)
            .flat_map(|i| {
                let unpriced = format!(
                    r#"{{"ts":"2026-08-07T00:01:{:02}Z","model":"x/y","source":"cli","total":1,"requests":1,"cost_complete":false,"incomplete_reason":"{}"}}"#,
                    i % 60,
                    odd(i, "r")
                );
                [
                    priced(&format!("00:{:02}", i % 60), "1", &junk(i), "payg"),
                    priced(&format!("02:{:02}", i % 60), "1", CURRENCIES[i as usize], &odd(i, "m")),
                    unpriced,
                ]
            })
            .collect()
    };
    let append = |lines: Vec<String>| {
        fx.append_lines(
            "2026-08-07.jsonl",
            &lines.iter().map(String::as_str).collect::<Vec<_>>(),
        );
        fx.ingest();
    };
    append(rows(0, 20));
    append(rows(20, 40));
    append(vec![
        priced("03:00", "100", "EUR", "payg"),
        priced("03:01", "2000", "JPY", "subscription_equivalent"),
        priced("03:02", "3", "USD", "payg"),
    ]);

    let status = fx.status();
    let got_cost: std::collections::BTreeMap<(String, String), String> = status["cost"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap().to_string();
            ((text("currency"), text("billing_mode")), text("amount"))
        })
        .collect();
    let mut want_cost = std::collections::BTreeMap::new();
    for (i, currency) in CURRENCIES.iter().enumerate() {
        let mode = match i {
            0 => "invalid".to_string(),
            1..32 => format!("m{i}"),
            _ => "other".to_string(),
        };
        want_cost.insert((currency.to_string(), mode), "1".to_string());
    }
    want_cost.insert(("EUR".into(), "payg".into()), "100".into());
    want_cost.insert(("JPY".into(), "subscription_equivalent".into()), "2000".into());
    want_cost.insert(("USD".into(), "payg".into()), "3".into());
    assert_eq!(got_cost, want_cost);

    let got_unpriced: std::collections::BTreeMap<String, u64> = status["unpriced"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| {
            (
                u["reason"].as_str().unwrap().to_string(),
                u["requests"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut want_unpriced: std::collections::BTreeMap<String, u64> =
        (1..32u8).map(|i| (format!("r{i}"), 1)).collect();
    want_unpriced.insert("invalid".into(), 1);
    want_unpriced.insert("other".into(), 8);
    want_unpriced.insert("unknown_currency".into(), 40);
    assert_eq!(got_unpriced, want_unpriced);
    assert_eq!(sum(&status, "requests"), 123, "no token or request hidden");
}

/// A usage row of the attribute set `m/<n>`.
fn row_of_set(day: &str, n: usize) -> String {
    format!(r#"{{"ts":"{day}T10:00:00.{n:06}Z","model":"m/{n}","source":"cli","total":1,"requests":1}}"#)
}

/// Which 1,000 attribute sets escape the fold depends on the order lines were first seen, and a
/// rebuild reads the files in name order: it keeps the sets the stream already sent, not others.
#[test]
fn a_rebuild_keeps_the_attribute_sets_the_backend_has() {
    let fx = Fixture::new();
    let receiver = common::receiver::Receiver::http();
    let late: Vec<String> = (0..1000).map(|n| row_of_set("2026-11-30", n)).collect();
    fx.append_lines(
        "2026-11-30.jsonl",
        &late.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_success(&fx.export_to(&receiver));
    // Written later into a file whose name comes first: folded when first seen.
    let early: Vec<String> = (1000..1100).map(|n| row_of_set("2026-11-01", n)).collect();
    fx.append_lines(
        "2026-11-01.jsonl",
        &early.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_success(&fx.export_to(&receiver));
    let sets = |status: &Value| -> Vec<String> {
        let series = status["series"].as_array().unwrap().iter();
        series
            .map(|s| format!("{}={}", s["model_ref"], s["total"]))
            .collect()
    };
    let before = sets(&fx.status());
    assert_eq!(before.len(), 1001, "1,000 sets and other");

    assert_success(&fx.run(&["once", "--otlp", "off", "--reset-state"]));
    let after = sets(&fx.status());
    let gone: Vec<&String> = before.iter().filter(|s| !after.contains(s)).collect();
    assert!(
        gone.is_empty(),
        "after the rebuild, {} sets differ: {:?}…",
        gone.len(),
        &gone[..gone.len().min(5)]
    );
    assert_success(&fx.export_to(&receiver));
    let newest: u64 = receiver.newest_values().values().map(|v| v[5]).sum();
    assert_eq!(newest, 1100, "the backend's newest values add up to the ledger");
}
