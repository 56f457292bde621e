//! Replays the committed fuzz corpus (`fuzz/corpus/<target>/`) through the fuzz targets' checks
//! on stable Rust, so that every input the fuzzer ever kept stays a regression test. The fuzzing
//! itself: `cargo +nightly fuzz run decode_line` (see fuzz/README.md).

#[path = "../fuzz/checks.rs"]
mod checks;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        check(&std::fs::read(&path).unwrap());
        inputs += 1;
    }
    assert!(inputs >= 20, "{target}: only {inputs} corpus inputs");
}

#[test]
fn decode_line_corpus_replays_clean() {
    replay("decode_line", checks::decode_line);
}

#[test]
fn tail_chunks_corpus_replays_clean() {
    replay("tail_chunks", checks::tail_chunks);
}
