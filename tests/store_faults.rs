//! Contract §4: a corrupted store is refused with a one-line message naming the path and the fix,
//! never silently reset; `--reset-state` rebuilds it from the ledger exactly.

mod common;

use common::Fixture;
use common::generator::Generator;
use common::model::Model;

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
