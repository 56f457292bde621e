//! Writes a realistic, seeded Reasonix ledger for benchmarks and manual tries:
//! `cargo run --release --example gen_ledger -- DIR LINES [DAYS] [SEED] [FIRST_DAY]`
//! (`FIRST_DAY` as `YYYY-MM-DD`, 2026-08-01 unless given).

#[path = "../tests/common/generator.rs"]
mod generator;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(lines)) = (args.first(), args.get(1).and_then(|n| n.parse::<usize>().ok())) else {
        eprintln!("usage: gen_ledger DIR LINES [DAYS] [SEED] [FIRST_DAY]");
        std::process::exit(2);
    };
    let days: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(365);
    let seed: u64 = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(1);
    let first = args.get(4).map_or(Some((2026, 8, 1)), |d| {
        let mut parts = d.split('-').map(|p| p.parse::<u32>().ok());
        Some((parts.next()??, parts.next()??, parts.next()??))
    });
    let Some(first) = first else {
        eprintln!("gen_ledger: FIRST_DAY is YYYY-MM-DD");
        std::process::exit(2);
    };
    std::fs::create_dir_all(dir)?;
    let mut generator = generator::Generator::new(seed);
    let per_day = lines.div_ceil(days);
    let mut left = lines;
    for day in generator::days_from(first, days) {
        if left == 0 {
            break;
        }
        let n = per_day.min(left);
        std::fs::write(format!("{dir}/{day}.jsonl"), generator.day_file(&day, n))?;
        left -= n;
    }
    Ok(())
}
