//! (f) Adaptive budgets: a usage trace (CSV `cycle,agent,tokens`) through the
//! CLI's trace reader, the `UsageRecorder` replay, the text, JSON and SVG
//! renderings, with a margin taken from the input. Asserts no panic and
//! identical output for identical input.
#![no_main]

use cupel_cli::harness::budget_trace;
use libfuzzer_sys::fuzz_target;

const MARGINS: [&str; 4] = ["0", "0.1", "-0.5", "2.75"];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let margin = MARGINS[usize::from(pick) % MARGINS.len()];
    let first = budget_trace(text, margin);
    assert_eq!(
        first,
        budget_trace(text, margin),
        "same trace, different output"
    );
});
