//! `cargo +nightly fuzz run tail_chunks`: the tailer's line splitting under arbitrary chunking.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::tail_chunks(data));
