//! `cargo xtask bench [--quick] [--summary-only] [BENCH...]`: runs the criterion
//! benchmarks (or, with `--summary-only`, reuses the last results) and prints
//! one summary line per case: `NAME  median_ms  floor_ms  ratio`.
//!
//! Every benchmark group measures a `floor` function (a stable sort of N
//! `(f64, u32)` pairs) at the same sizes as its cases, in the same process; the
//! ratio is a case's median over the floor's median at the same N.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{cargo, run_step, workspace_root};

/// The global allocator the bench binaries are built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Allocator {
    /// The platform's allocator (glibc malloc on Linux).
    System,
    /// mimalloc (the `mimalloc` feature of `cupel-benches`).
    Mimalloc,
}

pub(crate) fn run(
    quick: bool,
    summary_only: bool,
    allocator: Allocator,
    names: &[String],
) -> Result<(), String> {
    let run_benches = !summary_only;
    let mut benches: Vec<&str> = names.iter().map(String::as_str).collect();
    if benches.is_empty() {
        benches.push("pipeline");
    }
    let root = workspace_root();
    for bench in benches.iter().filter(|_| run_benches) {
        let mut cmd = cargo();
        // Criterion runs from the package directory; keep its output in the workspace target.
        cmd.env("CRITERION_HOME", root.join("target").join("criterion"));
        cmd.current_dir(&root)
            .args(["bench", "-p", "cupel-benches", "--bench", bench]);
        if allocator == Allocator::Mimalloc {
            cmd.args(["--features", "mimalloc"]);
        }
        cmd.arg("--");
        if quick {
            // Fewer samples and shorter windows; the benches read this too.
            cmd.env("CUPEL_BENCH_QUICK", "1");
            cmd.arg("--quick");
        }
        run_step(&format!("cargo bench --bench {bench}"), cmd)?;
    }
    let criterion = root.join("target").join("criterion");
    let rows = summarize(&criterion, &benches)?;
    print_table(&rows);
    Ok(())
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub(crate) name: String,
    pub(crate) median_ms: f64,
    pub(crate) floor_ms: Option<f64>,
}

/// Reads `target/criterion/<group>/<function>/<n>/new/estimates.json` for the
/// groups of each bench: the group named like the bench, and groups named
/// `<bench>/<part>` (criterion stores those as `<bench>_<part>`).
fn summarize(criterion: &Path, benches: &[&str]) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for bench in benches {
        let groups: Vec<PathBuf> = sorted_dirs(criterion)?
            .into_iter()
            .filter(|d| {
                let name = file_name(d);
                name == *bench || name.starts_with(&format!("{bench}_"))
            })
            .collect();
        if groups.is_empty() {
            return Err(format!(
                "no criterion results for `{bench}` under {}",
                criterion.display()
            ));
        }
        for dir in groups {
            let group = file_name(&dir).replacen('_', "/", 1);
            let floor_dir = dir.join("floor");
            for function in sorted_dirs(&dir)? {
                let fname = file_name(&function);
                if fname == "floor" || fname == "report" {
                    continue;
                }
                for size_dir in sorted_dirs(&function)? {
                    let size = file_name(&size_dir);
                    let Some(median) = median_ms(&size_dir)? else {
                        continue;
                    };
                    let floor = median_ms(&floor_dir.join(floor_size(&size)))?;
                    rows.push(Row {
                        name: format!("{group}/{fname}/{size}"),
                        median_ms: median,
                        floor_ms: floor,
                    });
                }
            }
        }
    }
    Ok(rows)
}

/// The N a case is measured at: the parameter itself (`1000`), or the digits
/// after a leading `n` in a descriptive one (`n1000-target250000-bucket10`).
fn floor_size(param: &str) -> String {
    match param.strip_prefix('n') {
        Some(rest) => rest.chars().take_while(char::is_ascii_digit).collect(),
        None => param.to_string(),
    }
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    // Numeric sizes sort numerically, names alphabetically.
    out.sort_by_key(|p| {
        let name = file_name(p);
        (name.parse::<u64>().unwrap_or(u64::MAX), name)
    });
    Ok(out)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The median point estimate in milliseconds, if the benchmark has results.
fn median_ms(dir: &Path) -> Result<Option<f64>, String> {
    let path = dir.join("new").join("estimates.json");
    let Ok(text) = fs::read_to_string(&path) else {
        return Ok(None);
    };
    parse_median_ns(&text)
        .map(|ns| Some(ns / 1e6))
        .ok_or_else(|| format!("{}: no median.point_estimate", path.display()))
}

/// Extracts `median.point_estimate` (nanoseconds) from criterion's estimates.json.
pub(crate) fn parse_median_ns(json: &str) -> Option<f64> {
    let at = json.find("\"median\"")?;
    let rest = &json[at..];
    let key = "\"point_estimate\":";
    let start = rest.find(key)? + key.len();
    let num: String = rest[start..]
        .chars()
        .skip_while(|c| c.is_whitespace())
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
        .collect();
    num.parse().ok()
}

fn print_table(rows: &[Row]) {
    let width = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    println!(
        "{:<width$}  {:>12}  {:>12}  {:>8}",
        "NAME", "median_ms", "floor_ms", "ratio"
    );
    for r in rows {
        match r.floor_ms {
            Some(f) if f > 0.0 => println!(
                "{:<width$}  {:>12.4}  {:>12.4}  {:>8.2}",
                r.name,
                r.median_ms,
                f,
                r.median_ms / f
            ),
            _ => println!(
                "{:<width$}  {:>12.4}  {:>12}  {:>8}",
                r.name, r.median_ms, "-", "-"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_size_reads_plain_and_descriptive_parameters() {
        assert_eq!(floor_size("1000"), "1000");
        assert_eq!(floor_size("n10000-target2500000-bucket100"), "10000");
    }

    #[test]
    fn reads_the_median_not_the_mean() {
        let json = r#"{"mean":{"confidence_interval":{},"point_estimate":5.0,"standard_error":1},"median":{"confidence_interval":{"lower_bound":1.0},"point_estimate":1234567.5,"standard_error":2.0}}"#;
        assert_eq!(parse_median_ns(json), Some(1_234_567.5));
        assert_eq!(parse_median_ns("{}"), None);
    }
}
