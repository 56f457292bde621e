//! Micro-benchmarks of the per-line work: decode, hash, and the store's dedup and commit.
//! `cargo bench --bench micro`. The whole-process numbers are in bench/run.py.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

#[path = "../tests/common/generator.rs"]
mod generator;

use reasonix_exporter::ingest;
use reasonix_exporter::ledger::decode::decode;
use reasonix_exporter::store::Store;
use xxhash_rust::xxh3::xxh3_128;

fn realistic_lines(n: usize) -> Vec<String> {
    let mut g = generator::Generator::new(7);
    generator::days(30)
        .iter()
        .cycle()
        .take(n)
        .map(|day| g.line(day))
        .collect()
}

fn decode_and_hash(c: &mut Criterion) {
    let lines = realistic_lines(10_000);
    let bytes: u64 = lines.iter().map(|l| l.len() as u64 + 1).sum();
    let mut group = c.benchmark_group("per line");
    group.throughput(Throughput::Bytes(bytes));
    group.bench_function("decode 10k realistic lines", |b| {
        b.iter(|| {
            lines
                .iter()
                .filter(|l| {
                    matches!(
                        decode(black_box(l.as_bytes())),
                        reasonix_exporter::ledger::decode::Decoded::Row(_)
                    )
                })
                .count()
        })
    });
    group.bench_function("xxh3-128 10k realistic lines", |b| {
        b.iter(|| {
            lines
                .iter()
                .fold(0u128, |acc, l| acc ^ xxh3_128(black_box(l.as_bytes())))
        })
    });
    group.finish();
}

fn store(c: &mut Criterion) {
    let lines = realistic_lines(100_000);
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let mut group = c.benchmark_group("store");
    group.sample_size(10);
    group.throughput(Throughput::Elements(lines.len() as u64));
    group.bench_function(
        "ingest 100k lines into a fresh store (dedup, totals, commit)",
        |b| {
            b.iter_with_setup(
                || {
                    let dir = tempfile::tempdir().unwrap();
                    std::fs::create_dir(dir.path().join("stats")).unwrap();
                    std::fs::write(dir.path().join("stats/2026-08-01.jsonl"), &text).unwrap();
                    let store = Store::open(&dir.path().join("state"), false).unwrap();
                    (dir, store)
                },
                |(dir, mut store)| {
                    let report = ingest::poll(&mut store, &dir.path().join("stats")).unwrap();
                    assert_eq!(report.counts.read(), lines.len() as u64);
                },
            )
        },
    );
    group.bench_function("re-read 100k known lines (all duplicates)", |b| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("stats")).unwrap();
        std::fs::write(dir.path().join("stats/2026-08-01.jsonl"), &text).unwrap();
        let mut store = Store::open(&dir.path().join("state"), false).unwrap();
        ingest::poll(&mut store, &dir.path().join("stats")).unwrap();
        let mut n = 0;
        b.iter(|| {
            // A copy under a new name: every line is read again and found in the seen set.
            n += 1;
            std::fs::write(dir.path().join(format!("stats/copy-{n}.jsonl")), &text).unwrap();
            let report = ingest::poll(&mut store, &dir.path().join("stats")).unwrap();
            assert_eq!(report.counts.duplicate, lines.len() as u64);
        })
    });
    group.finish();
}

criterion_group!(benches, decode_and_hash, store);
criterion_main!(benches);
