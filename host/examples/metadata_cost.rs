//! The baseline of the large-table benchmark: what parsing a table metadata file once
//! and writing it once cost, with the same `iceberg` spec types and the same file
//! write the server uses. Prints the median of `rounds` of each, in milliseconds.
//!
//! Usage: metadata_cost <metadata.json> [rounds]

use std::time::Instant;

use iceberg::spec::TableMetadata;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let file = args.next().expect("usage: metadata_cost <metadata.json> [rounds]");
    let rounds: usize = args.next().map(|r| r.parse().expect("rounds")).unwrap_or(50);
    let bytes = std::fs::read(&file).expect("reading the metadata file");
    let out = std::env::temp_dir().join(format!("metadata-cost-{}.json", std::process::id()));
    let (mut parse, mut write) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let start = Instant::now();
        let metadata: TableMetadata = serde_json::from_slice(&bytes).expect("parsing the metadata");
        parse.push(start.elapsed().as_secs_f64() * 1e3);
        let start = Instant::now();
        std::fs::write(&out, serde_json::to_vec(&metadata).expect("serializing")).expect("writing");
        write.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let _ = std::fs::remove_file(&out);
    println!("{} bytes: parse {:.2} ms, write {:.2} ms", bytes.len(), median(parse), median(write));
}
