//! Contract §4: a corrupted store is refused with a one-line message naming the path and the fix,
//! never silently reset; `--reset-state` rebuilds it from the ledger exactly. A store that lost
//! writes recovers exactly from the export record beside it.

mod common;

use common::Fixture;
use common::generator::Generator;
use common::model::Model;

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

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A store that lost writes made after its last export was recorded (what a power cut does to
/// a log that was not `fsync`ed, or an older copy put back): the export record beside it says
/// what the collector may have, so the export is settled again, the lines the store lost are
/// read again, and the collector's totals stay exact.
#[test]
fn store_older_than_its_export_record_recovers_exactly() {
    let fx = Fixture::new();
    let receiver = common::receiver::Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(52);
    add_day(&fx, &mut model, &mut generator, "2026-08-01", 200);
    common::assert_success(&fx.export_to(&receiver));
    let backup = fx.root.path().join("store-backup");
    copy_dir(&fx.state.join("store"), &backup);

    for (day, lines) in [("2026-08-02", 100), ("2026-08-03", 70)] {
        add_day(&fx, &mut model, &mut generator, day, lines);
        common::assert_success(&fx.export_to(&receiver));
    }
    assert_eq!(receiver.backend_totals(), model.expected.totals());

    // The store as it was two exports ago; the export record as it is.
    std::fs::remove_dir_all(fx.state.join("store")).unwrap();
    copy_dir(&backup, &fx.state.join("store"));
    let out = fx.export_to(&receiver);
    common::assert_success(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("behind its export record"),
        "the recovery is reported"
    );
    assert_eq!(receiver.backend_totals(), model.expected.totals());
    assert_eq!(fx.status(), model.expected.status_json());

    // And it goes on exactly.
    add_day(&fx, &mut model, &mut generator, "2026-08-04", 30);
    common::assert_success(&fx.export_to(&receiver));
    assert_eq!(receiver.backend_totals(), model.expected.totals());
}

/// A store folder deleted after exports starts over (contract §4: everything still on disk is
/// read again); the export record of the store that is gone does not stop the ones after it.
#[test]
fn a_store_deleted_after_exports_starts_over_and_goes_on() {
    let fx = Fixture::new();
    let receiver = common::receiver::Receiver::http();
    let mut model = Model::default();
    let mut generator = Generator::new(54);
    add_day(&fx, &mut model, &mut generator, "2026-08-01", 80);
    common::assert_success(&fx.export_to(&receiver));
    assert!(fx.state.join("store.export").exists());

    std::fs::remove_dir_all(fx.state.join("store")).unwrap();
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
    add_day(&fx, &mut model, &mut generator, "2026-08-02", 40);
    fx.ingest();
    assert_eq!(fx.status(), model.expected.status_json());
    common::assert_success(&fx.export_to(&receiver));
}

/// An export record that is damaged cannot say what the collector has: refused with the fix,
/// never guessed; `--reset-state` rebuilds from the ledger.
#[test]
fn a_damaged_export_record_is_refused_then_reset_rebuilds_it() {
    let fx = Fixture::new();
    let receiver = common::receiver::Receiver::http();
    let mut model = Model::default();
    add_day(&fx, &mut model, &mut Generator::new(53), "2026-08-01", 120);
    common::assert_success(&fx.export_to(&receiver));
    let record = fx.state.join("store.export");
    let mut bytes = std::fs::read(&record).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&record, bytes).unwrap();

    let out = fx.export_to(&receiver);
    assert!(!out.status.success(), "a damaged record must be refused");
    let error = common::the_error_line(&out);
    assert!(
        error.contains("store.export") && error.contains("--reset-state"),
        "{error}"
    );
    assert_eq!(receiver.data_requests().len(), 1, "nothing was sent");

    let out = fx.run(&["--reset-state", "once", "--otlp", "off"]);
    common::assert_success(&out);
    assert_eq!(fx.status(), model.expected.status_json());
}
