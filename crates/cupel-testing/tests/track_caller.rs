//! The panicking chain reports the caller's line, not this crate's.
//!
//! Alone in its own test binary because it installs a process-wide panic hook.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::panic::{catch_unwind, set_hook, take_hook};
use std::sync::{Arc, Mutex};

use cupel_core::SelectionReport;
use cupel_testing::SelectionReportAssertions;

#[test]
fn a_failed_assertion_panics_at_the_calling_line() {
    let seen: Arc<Mutex<Option<(String, u32)>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let previous = take_hook();
    set_hook(Box::new(move |info| {
        *sink.lock().unwrap() = info.location().map(|l| (l.file().to_string(), l.line()));
    }));

    let report = SelectionReport::default();
    let before = line!();
    let outcome = catch_unwind(|| {
        report
            .should()
            .have_at_least_n_exclusions(0)
            .have_kind_coverage_count(1);
    });
    let after = line!();
    set_hook(previous);

    assert!(outcome.is_err());
    let (file, line) = seen.lock().unwrap().clone().expect("panic location");
    assert_eq!(file, file!());
    assert!(
        before < line && line < after,
        "line {line} not in {before}..{after}"
    );
}
