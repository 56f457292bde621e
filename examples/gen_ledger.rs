//! Writes a realistic, seeded Reasonix ledger for benchmarks and manual tries:
//! `cargo run --release --example gen_ledger -- DIR LINES [DAYS] [SEED]`.

#[path = "../tests/common/generator.rs"]
mod generator;

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dir), Some(lines)) = (args.first(), args.get(1).and_then(|n| n.parse::<usize>().ok())) else {
        eprintln!("usage: gen_ledger DIR LINES [DAYS] [SEED]");
        std::process::exit(2);
    };
    let days: usize = args.get(2).and_then(|n| n.parse().ok()).unwrap_or(365);
    let seed: u64 = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(1);
    std::fs::create_dir_all(dir)?;
    let mut generator = generator::Generator::new(seed);
    let per_day = lines.div_ceil(days);
    let mut left = lines;
    for day in generator::days(days) {
        if left == 0 {
            break;
        }
        let n = per_day.min(left);
        std::fs::write(format!("{dir}/{day}.jsonl"), generator.day_file(&day, n))?;
        left -= n;
    }
    Ok(())
}
