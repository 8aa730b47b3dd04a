//! (d) The conformance vector reader and runner on arbitrary text: never a
//! panic (the runner's own panic guard is bypassed here).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = cupel_conformance::run_text_unguarded(text);
    }
});
