//! `cargo +nightly fuzz run decode_line`: the line decoder on arbitrary bytes.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::decode_line(data));
