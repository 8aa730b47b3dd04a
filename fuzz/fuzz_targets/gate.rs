//! (e) The context gate end to end: a gate document (TOML and JSON: context,
//! `[gate]` configuration with compaction rules, nodes, inbox) through the
//! CLI's reading, the classifier, both compactors and the decision, plus the
//! compactors and classifier alone on the raw bytes. Asserts no panic (no
//! stack overflow on deep nesting), identical output for identical input,
//! and that compaction is idempotent and never grows a text.
#![no_main]

use cupel_cli::harness::{Format, gate};
use cupel_gate::{BuiltinClassifier, compact_csharp, compact_sql};
use cupel_gate::{CodeLanguage, LanguageClassifier};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for format in [Format::Toml, Format::Json] {
        let first = gate(data, format);
        assert_eq!(
            first,
            gate(data, format),
            "same gate input, different output"
        );
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for compact in [compact_sql, compact_csharp] {
        let once = compact(text);
        assert!(once.len() <= text.len(), "compaction grew the text");
        assert_eq!(compact(&once), once, "compaction is not idempotent");
    }
    let language = BuiltinClassifier.classify(text);
    assert!(matches!(
        language,
        CodeLanguage::Sql | CodeLanguage::Dotnet | CodeLanguage::Unknown
    ));
    assert_eq!(BuiltinClassifier.classify(text), language);
});
