//! (a) INPUT files through the CLI's own reading and `select` / `explain`
//! path: the same bytes as TOML, JSON and JSON Lines. Asserts no panic and
//! identical output for identical input; and that TOML read one
//! `[[items]]` table at a time agrees with TOML read as one document.
#![no_main]

use cupel_cli::harness::{Format, select_and_explain, toml_split_agrees};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(diff) = toml_split_agrees(text) {
            panic!("split and whole TOML parsing differ:\n{diff}");
        }
    }
    for format in [Format::Toml, Format::Json, Format::Jsonl] {
        // JSON Lines has no [budget]: give it one by flags.
        let (max, target) = match format {
            Format::Jsonl => (Some(1000), Some(800)),
            _ => (None, None),
        };
        let first = select_and_explain(data, format, max, target);
        let again = select_and_explain(data, format, max, target);
        assert_eq!(first, again, "same input, different output ({format:?})");
    }
});
