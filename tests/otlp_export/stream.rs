//! The one stream: its record on disk before a send, continued by every `once`, restored stores.

use super::*;

/// Contract §4, power loss: the stream record of an export must be on disk (its file synced,
/// renamed into place and the rename synced) before a byte of the export leaves, or a power cut
/// right after the collector took it could leave the marks below what the backend has, and a
/// store behind them would send a lower value. The store's log is not `fsync`ed for it: that
/// would pay for every page sled dirtied at open.
#[test]
#[ignore = "needs strace (.ci/run); run with --include-ignored"]
#[cfg(target_os = "linux")]
fn the_stream_record_is_on_disk_before_the_export_is_sent_and_the_log_is_not_synced_for_it() {
    if !common::strace_installed() {
        return;
    }
    let receiver = Receiver::http();
    let fx = Fixture::new();
    let mut model = Model::default();
    realistic_ledger(&fx, &mut model, 5);
    common::assert_success(&fx.export_to(&receiver));
    let text = Generator::new(31).day_file(&days(6)[5], 50);
    fx.append(&format!("{}.jsonl", days(6)[5]), text.as_bytes());
    model.feed(text.as_bytes());
    let log = fx.traced(
        "fsync,fdatasync,sync_file_range,write,writev,pwrite64,rename,renameat,renameat2,sendto,sendmsg",
        &[
            "once",
            "--otlp-endpoint",
            &receiver.endpoint,
            "--otlp-protocol",
            "http/protobuf",
        ],
    );
    let lines: Vec<&str> = log.lines().collect();
    let sent = lines
        .iter()
        .position(|l| l.contains("POST /v1/metrics"))
        .expect("the export was sent");
    let before = &lines[..sent];
    let state = fx.state.canonicalize().unwrap();
    let record = state.join("stream");
    let tmp = format!("{}.tmp>", record.display());
    let step = |what: &str, found: &dyn Fn(&str) -> bool| -> usize {
        before
            .iter()
            .rposition(|l| found(l))
            .unwrap_or_else(|| panic!("no {what} before the send:\n{}", before.join("\n")))
    };
    let written = step("write of the record", &|l| {
        (l.contains("write(") || l.contains("writev(")) && l.contains(&tmp)
    });
    let synced = step("fsync of the record", &|l| {
        (l.contains("fdatasync(") || l.contains("fsync(")) && l.contains(&tmp)
    });
    // The destination in quotes: strace may cut the call (`<unfinished ...>`) before its `)`.
    let renamed = step("rename of the record", &|l| {
        l.contains("rename") && l.contains(&format!("\"{}\"", record.display()))
    });
    let folder = step("fsync of the state dir", &|l| {
        l.contains("fsync(") && l.contains(&format!("<{}>)", state.display()))
    });
    assert!(
        written < synced && synced < renamed && renamed < folder,
        "out of order: write {written}, sync {synced}, rename {renamed}, folder sync {folder}"
    );
    // Nothing `fsync`s the store's log between the record's write and the send.
    let is_log = |l: &str| l.contains("/store/db>");
    let log_synced: Vec<&&str> = before[written..]
        .iter()
        .filter(|l| is_log(l) && (l.contains("fsync(") || l.contains("fdatasync(")))
        .collect();
    assert!(
        log_synced.is_empty(),
        "the store's log was fsynced for the export: {log_synced:?}"
    );
    assert_eq!(receiver.data_requests().len(), 2);
    common::assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

/// History arrives as the counter's first value, and every later `once` continues the one
/// stream: a backend keeping the newest value of each series has the truth after every run,
/// and a run with nothing new sends the same values again (an export is idempotent).
#[test]
fn every_once_continues_the_one_stream_from_its_history() {
    let receiver = Receiver::http();
    let fx = Fixture::new();
    let mut model = Model::default();
    let mut generator = Generator::new(71);
    let all_days = days(4);
    for (i, day) in all_days.iter().enumerate() {
        let text = generator.day_file(day, 50 * (1 + i));
        fx.append(&format!("{day}.jsonl"), text.as_bytes());
        model.feed(text.as_bytes());
        assert_success(&fx.export_to(&receiver));
        assert_eq!(receiver.newest_values(), model.expected.totals(), "after {day}");
    }
    let before = receiver.data_requests().len();
    assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.data_requests().len(), before + 1);
    assert_eq!(receiver.newest_values(), model.expected.totals());
    assert_eq!(receiver.check_one_stream(), Ok(()));
}

/// A usage line of `model` at `ts`, priced.
fn usage_of(model: &str, ts: &str) -> String {
    format!(
        r#"{{"ts":"{ts}","model":"{model}","source":"code","prompt":900,"completion":40,"reasoning":0,"cache_hit":600,"cache_miss":300,"total":940,"requests":1,"usage_source":"provider","cost_amount":"0.002","cost_currency":"CNY","cost_complete":true,"display_complete":true,"display_status":"matched","billing_mode":"payg"}}"#
    )
}

/// A store whose first export (one deepseek-chat line, its history) `receiver` took; then a
/// line of kimi-k2, a model new to the stream, not exported yet.
fn store_with_a_new_model(receiver: &Receiver) -> Fixture {
    let fx = Fixture::new();
    let day = "2026-11-30.jsonl";
    fx.append_lines(day, &[&usage_of("deepseek-chat", "2026-11-30T10:00:00+08:00")]);
    assert_success(&fx.export_to(receiver));
    fx.append_lines(day, &[&usage_of("kimi-k2", "2026-11-30T10:01:00+08:00")]);
    fx
}

#[test]
fn a_store_restored_from_a_backup_dates_its_zeros_before_every_value_it_lost() {
    let receiver = Receiver::http();
    let fx = store_with_a_new_model(&receiver);
    let backup = fx.root.path().join("backup");
    copy_tree(&fx.state, &backup);
    // Exports the backup does not know of: the new model born with a zero, then its values.
    assert_success(&fx.export_to(&receiver));
    fx.append_lines(
        "2026-11-30.jsonl",
        &[&usage_of("kimi-k2", "2026-11-30T10:02:00+08:00")],
    );
    assert_success(&fx.export_to(&receiver));
    let lost = receiver.data_requests().len();
    std::fs::remove_dir_all(&fx.state).unwrap();
    copy_tree(&backup, &fx.state);
    assert_success(&fx.export_to(&receiver));
    assert!(
        receiver.data_requests().len() > lost + 1,
        "the restored store sends kimi-k2's birth again"
    );
    assert_eq!(receiver.check_never_down_in_time(), Ok(()));
    let expected = [("deepseek-chat", 940), ("kimi-k2", 1880)];
    let newest = receiver.newest_values();
    for (model, total) in expected {
        let (_, values) = newest.iter().find(|(s, _)| s.0.contains(model)).unwrap();
        assert_eq!(values[5], total, "{model}");
    }
}

#[test]
fn a_store_that_exported_delta_sends_no_zero_when_it_turns_cumulative() {
    let receiver = Receiver::http();
    let fx = store_with_a_new_model(&receiver);
    let delta = fx
        .command(&["once", "--otlp-endpoint", &receiver.endpoint])
        .env("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
        .output()
        .unwrap();
    assert_success(&delta);
    let before = receiver.requests().len();
    assert_success(&fx.export_to(&receiver));
    let after = receiver.requests().len();
    assert_eq!(
        after,
        before + 1,
        "one export of values, no birth: kimi-k2 reached the backend as delta"
    );
}
