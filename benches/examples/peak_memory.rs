//! Runs the standard pipeline case once over N items (default 1,000,000), for
//! peak-memory measurement: `/usr/bin/time -v target/release/examples/peak_memory`.
//! Prints the window size. Arguments, in any order: a number of items;
//! `items` to stop after building the items (their footprint alone);
//! `grouped` to run the grouped workload (anything else is an error, so
//! that a mistyped mode never measures the plain workload in its place).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use cupel_benches::{grouped_items, items, standard_pipeline};

fn main() {
    // Arguments in any order: a number is N; `items` or `grouped` the mode.
    let mut n = 1_000_000usize;
    let mut mode: Option<String> = None;
    for arg in std::env::args().skip(1) {
        if let Ok(count) = arg.parse() {
            n = count;
        } else if arg == "items" || arg == "grouped" {
            mode = Some(arg);
        } else {
            eprintln!("unknown argument {arg:?}: expected a number of items, `items` or `grouped`");
            std::process::exit(2);
        }
    }
    let only_items = mode.as_deref() == Some("items");
    let items = if mode.as_deref() == Some("grouped") {
        grouped_items(n)
    } else {
        items(n)
    };
    if only_items {
        println!("{} items built", items.len());
        return;
    }
    let p = standard_pipeline(&items).unwrap();
    let window = p.run(&items).unwrap();
    println!("{} items, window of {}", items.len(), window.len());
}
