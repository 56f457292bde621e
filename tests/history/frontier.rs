//! The frontier the history ends at: noted at the first send, kept by `--reset-state`.

use super::*;

#[test]
fn the_frontier_is_noted_once_at_the_first_send_and_kept_by_reset_state() {
    let fx = Fixture::new();
    let day = DAY_MS * (now_ms() / DAY_MS - 3);
    let mut lines = Lines(11);
    let (a, b) = (lines.at(day + 3_600_000), lines.at(day + 7_200_000));
    let name = format!("{}.jsonl", &a.text[7..17]);
    fx.append(&name, format!("{}\n{}\n", a.text, b.text).as_bytes());
    let frontier = fx.state.join("history");
    // Counted, never sent: no frontier, and `history` says why.
    let counted = fx.run(&["--otlp", "off", "once"]);
    assert!(
        counted.status.success(),
        "{}",
        String::from_utf8_lossy(&counted.stderr)
    );
    assert!(!frontier.exists());
    let refused = fx.run(&["history"]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("has not exported or served anything yet"));
    // The first send notes it; later sends, a line counted after it, and --reset-state keep it.
    let receiver = common::receiver::Receiver::http();
    let otlp = [
        "--otlp-protocol",
        receiver.protocol,
        "--otlp-endpoint",
        receiver.endpoint.as_str(),
    ];
    let once = |more: &[&str]| {
        let out = fx.run(&[&otlp[..], more, &["once"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    once(&[]);
    let noted = std::fs::read(&frontier).expect("the frontier, at the first send");
    fx.append(&name, format!("{}\n", lines.at(day + 10_800_000).text).as_bytes());
    once(&[]);
    once(&["--reset-state"]);
    assert_eq!(
        std::fs::read(&frontier).unwrap(),
        noted,
        "noted once, kept by --reset-state"
    );
    // Its history is the two lines counted before the first send, not the one after.
    let out = fx.run(&["history"]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && log.contains("history: 2 lines as"),
        "{log}"
    );
    // Each series' last point, added up.
    let mut last = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut fields = line.split(' ');
        if let (Some(series), Some(value)) = (fields.next(), fields.next())
            && series.starts_with("reasonix_prompt_tokens_total{")
        {
            last.insert(series.to_owned(), value.parse::<u64>().unwrap());
        }
    }
    assert_eq!(last.values().sum::<u64>(), a.counts[0] + b.counts[0]);
}
