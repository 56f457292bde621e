//! Contract §4: a corrupted store is refused with a one-line message naming the path and the fix,
//! never silently reset; `--reset-state` rebuilds it from the ledger exactly. A store that comes
//! back behind what was exported catches up from the ledger before it exports, or holds the
//! points it cannot bring back: no exported value ever goes down.

mod common;

use common::Fixture;
use common::files::copy_tree;
use common::generator::Generator;
use common::model::Model;
use common::receiver::Receiver;

/// Appends `lines` generated lines to `day`'s file, and to the model.
fn add_day(fx: &Fixture, model: &mut Model, generator: &mut Generator, day: &str, lines: usize) {
    let text = generator.day_file(day, lines);
    fx.append(&format!("{day}.jsonl"), text.as_bytes());
    model.feed(text.as_bytes());
}

fn garble(path: &std::path::Path) {
    let mut bytes = std::fs::read(path).unwrap();
    for i in (0..bytes.len()).step_by(97) {
        bytes[i] = bytes[i].wrapping_add(77);
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn corrupted_store_is_refused_with_its_path_and_the_fix_then_reset_rebuilds_it_exactly() {
    let fx = Fixture::new();
    let mut model = Model::default();
    let text = Generator::new(51).day_file("2026-08-01", 200);
    fx.append("2026-08-01.jsonl", text.as_bytes());
    model.feed(text.as_bytes());
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());

    garble(&fx.state.join("store").join("db"));
    for args in [&["once", "--otlp", "off"][..], &["status", "--json"][..]] {
        let out = fx.run(args);
        assert!(!out.status.success(), "{args:?} must refuse a corrupted store");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.contains(&fx.state.join("store").display().to_string()),
            "names the path: {stderr}"
        );
        assert!(last.contains("--reset-state"), "names the fix: {stderr}");
        common::the_error_line(&out);
    }

    let out = fx.run(&["once", "--otlp", "off", "--reset-state"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        fx.status(),
        model.expected.status_json(),
        "rebuilt from the ledger, exactly"
    );
}

/// Three days exported one by one; returns the state dir as it was after the first export.
fn three_exports(fx: &Fixture, receiver: &Receiver, model: &mut Model, seed: u64) -> std::path::PathBuf {
    let mut generator = Generator::new(seed);
    add_day(fx, model, &mut generator, "2026-08-01", 200);
    common::assert_success(&fx.export_to(receiver));
    let backup = fx.root.path().join("state-backup");
    copy_tree(&fx.state, &backup);
    std::fs::remove_file(backup.join("lock")).ok();
    for (day, lines) in [("2026-08-02", 100), ("2026-08-03", 70)] {
        add_day(fx, model, &mut generator, day, lines);
        common::assert_success(&fx.export_to(receiver));
    }
    assert_eq!(receiver.newest_values(), model.expected.totals());
    backup
}

/// After `damage` to the state dir, the next `once` catches up from the ledger before it
/// exports: the collector's newest values are the truth and no value went down.
fn catches_up_after(seed: u64, damage: impl FnOnce(&Fixture, &std::path::Path), one_start: bool) {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let backup = three_exports(&fx, &receiver, &mut model, seed);
    damage(&fx, &backup);
    common::assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.newest_values(), model.expected.totals());
    assert_eq!(fx.status(), model.expected.status_json());
    let check = if one_start {
        receiver.check_one_stream()
    } else {
        receiver.check_never_down()
    };
    assert_eq!(check, Ok(()));
    // And it goes on exactly.
    add_day(&fx, &mut model, &mut Generator::new(seed + 1), "2026-08-04", 30);
    common::assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.newest_values(), model.expected.totals());
}

/// What a power cut does to a log that was not `fsync`ed: the store as it was two exports ago,
/// the stream record as it is.
#[test]
fn a_store_behind_what_was_exported_catches_up_before_it_exports() {
    catches_up_after(
        52,
        |fx, backup| {
            std::fs::remove_dir_all(fx.state.join("store")).unwrap();
            copy_tree(&backup.join("store"), &fx.state.join("store"));
        },
        true,
    );
}

#[test]
fn a_state_dir_put_back_from_a_backup_catches_up_before_it_exports() {
    catches_up_after(
        55,
        |fx, backup| {
            std::fs::remove_dir_all(&fx.state).unwrap();
            copy_tree(backup, &fx.state);
        },
        true,
    );
}

#[test]
fn a_store_rebuilt_by_reset_state_continues_the_stream() {
    catches_up_after(
        56,
        |fx, _| common::assert_success(&fx.run(&["once", "--otlp", "off", "--reset-state"])),
        true,
    );
}

/// Nothing is left to say when the stream started: a new one starts, from the ledger's totals.
#[test]
fn a_deleted_state_dir_starts_a_stream_that_never_goes_below_the_old_one() {
    catches_up_after(57, |fx, _| std::fs::remove_dir_all(&fx.state).unwrap(), false);
}

/// A store behind what was exported whose ledger lost lines too cannot catch up: its points
/// below what was sent are held, and said so, until the ledger brings them back.
#[test]
fn points_the_ledger_cannot_bring_back_are_held_and_said_so() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    let backup = three_exports(&fx, &receiver, &mut model, 58);
    let lost = fx.root.path().join("lost-day");
    std::fs::rename(fx.path("2026-08-03.jsonl"), &lost).unwrap();
    std::fs::remove_dir_all(fx.state.join("store")).unwrap();
    copy_tree(&backup.join("store"), &fx.state.join("store"));

    let out = fx.export_to(&receiver);
    common::assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("held back"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(receiver.check_one_stream(), Ok(()));

    std::fs::rename(&lost, fx.path("2026-08-03.jsonl")).unwrap();
    let out = fx.export_to(&receiver);
    common::assert_success(&out);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("held back"));
    assert_eq!(receiver.newest_values(), model.expected.totals());
    assert_eq!(receiver.check_one_stream(), Ok(()));
}

/// A stream record that is damaged cannot say what was sent: refused with the fix, never
/// guessed; `--reset-state` rebuilds from the ledger and starts a new stream.
#[test]
fn a_damaged_stream_record_is_refused_then_reset_rebuilds_it() {
    let fx = Fixture::new();
    let receiver = Receiver::http();
    let mut model = Model::default();
    add_day(&fx, &mut model, &mut Generator::new(53), "2026-08-01", 120);
    common::assert_success(&fx.export_to(&receiver));
    let record = fx.state.join("stream");
    let mut bytes = std::fs::read(&record).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&record, bytes).unwrap();

    let out = fx.export_to(&receiver);
    assert!(!out.status.success(), "a damaged record must be refused");
    let error = common::the_error_line(&out);
    assert!(
        error.contains("stream") && error.contains("--reset-state"),
        "{error}"
    );
    assert_eq!(receiver.data_requests().len(), 1, "nothing was sent");

    let out = fx.run(&["--reset-state", "once", "--otlp", "off"]);
    common::assert_success(&out);
    assert_eq!(fx.status(), model.expected.status_json());
    common::assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.newest_values(), model.expected.totals());
}
