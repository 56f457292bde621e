//! The practical limit on one core (BENCHMARKS.md, "Machine and method"): read every ledger file, split lines,
//! xxh3-128 each line, and decode the allow-listed fields. No store, no dedup, no export.
//! `cargo run --release --example baseline -- STATS_DIR` prints lines, bytes and seconds.

use std::io::Read;
use std::time::Instant;

use reasonix_exporter::ledger::decode::{Decoded, decode};
use reasonix_exporter::ledger::discover::ledger_files;
use xxhash_rust::xxh3::xxh3_128;

fn main() -> std::io::Result<()> {
    let dir = std::env::args().nth(1).expect("usage: baseline STATS_DIR");
    let started = Instant::now();
    let (mut lines, mut bytes, mut rows, mut check) = (0u64, 0u64, 0u64, 0u128);
    let mut buf = vec![0u8; 1 << 20];
    let mut carry = Vec::new();
    for file in ledger_files(dir.as_ref())? {
        let mut f = std::fs::File::open(file.path(dir.as_ref()))?;
        carry.clear();
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            bytes += n as u64;
            carry.extend_from_slice(&buf[..n]);
            let Some(last) = memchr::memrchr(b'\n', &carry) else {
                continue;
            };
            let mut start = 0;
            for end in memchr::memchr_iter(b'\n', &carry[..=last]) {
                let line = &carry[start..end];
                start = end + 1;
                lines += 1;
                check ^= xxh3_128(line);
                if let Decoded::Row(_) = decode(line) {
                    rows += 1;
                }
            }
            carry.drain(..=last);
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "lines {lines} rows {rows} bytes {bytes} seconds {secs:.3} check {:x}",
        check & 0xff
    );
    Ok(())
}
