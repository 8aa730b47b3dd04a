//! (b) PolicyConfig parsing (TOML and JSON) and building. Asserts no panic,
//! and that a policy that reads and checks also builds or fails cleanly.
#![no_main]

use cupel_pipeline::PolicyConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for parsed in [
        PolicyConfig::from_toml_str(text),
        PolicyConfig::from_json_str(text),
    ] {
        if let Ok(cfg) = parsed {
            let _ = cfg.check_keys();
            let _ = cfg.build();
            // What serialises reads back the same.
            if let Ok(s) = serde_json::to_string(&cfg) {
                if let Ok(back) = PolicyConfig::from_json_str(&s) {
                    assert_eq!(format!("{back:?}"), format!("{cfg:?}"));
                }
            }
        }
    }
});
