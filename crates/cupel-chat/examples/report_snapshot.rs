//! Untracked check: every public transcript x budgets x modes through
//! `cupel_chat::trim` with its report; prints the report's JSON and each
//! item's Debug text and metadata map, to diff before/after a change.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use cupel_chat::{
    AgeToolResults, Granularity, RecallOptions, Transcript, Trim, document_options, trim,
};

fn main() {
    let mut files: Vec<_> = std::fs::read_dir("/work/transcripts")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().to_string();
            n.ends_with(".json") && !n.ends_with(".usage.json") && n != "sources.json"
        })
        .collect();
    files.sort();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let Ok(doc) = Transcript::parse(&text) else {
            println!("{}: unparsed", f.display());
            continue;
        };
        for budget in [300i64, 1_000, 4_000, 16_000, 64_000] {
            let base = Trim::new(doc.format(), budget);
            let modes: Vec<(&str, Trim)> = vec![
                ("default", base.clone()),
                ("exchange", base.clone().granularity(Granularity::Exchange)),
                ("turn", base.clone().granularity(Granularity::Turn)),
                (
                    "aging",
                    base.clone().age_tool_results(AgeToolResults::new(1)),
                ),
                ("orphans", base.clone().keep_orphans(true)),
                ("recall", base.clone().recall(RecallOptions::new())),
                ("nopin", base.clone().pin_system(false)),
            ];
            for (name, opts) in modes {
                let opts = document_options(&doc, &opts);
                println!(
                    "== {} {budget} {name}",
                    f.file_name().unwrap().to_string_lossy()
                );
                match trim(doc.messages(), &opts) {
                    Err(e) => println!("error: {e}"),
                    Ok(out) => {
                        println!("{}", serde_json::to_string(&out.report).unwrap());
                        for i in &out.report.included {
                            println!(
                                "in {:?} {:?} {} {:?}",
                                i.item,
                                i.item.metadata(),
                                i.score,
                                i.reason
                            );
                        }
                        for e in &out.report.excluded {
                            println!(
                                "ex {:?} {:?} {} {}",
                                e.item,
                                e.item.metadata(),
                                e.score,
                                e.reason
                            );
                        }
                        print!("{}", out.explain());
                    }
                }
            }
        }
    }
}
