//! Usage traces: CSV files with one row per agent per cycle.
//!
//! ```text
//! cycle,agent,tokens
//! 1,A,5
//! 2,B,30
//! 3,A,5
//! ```
//!
//! The header names the three columns (in any order, each once). Cycles are
//! non-negative integers in ascending order; the rows of a cycle are
//! consecutive. An agent seen earlier that has no row in a cycle was idle.
//! Every error names the file and the line.

use std::collections::BTreeMap;
use std::io::Read;

use crate::error::CliError;

/// The three columns of a trace, in the order we print them.
pub(crate) const COLUMNS: [&str; 3] = ["cycle", "agent", "tokens"];

/// One cycle of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceCycle {
    /// The cycle number written in the file.
    pub(crate) cycle: u64,
    /// The line of the cycle's first row.
    pub(crate) line: u64,
    /// `(agent, tokens)` in file order; each agent once.
    pub(crate) usage: Vec<(String, i64)>,
}

/// How messages name the trace read from `path`.
pub(crate) fn source_name(path: &str) -> &str {
    if path == "-" { "<stdin>" } else { path }
}

/// Reads a trace from `path` (`-` is stdin).
pub(crate) fn read(path: &str) -> Result<Vec<TraceCycle>, CliError> {
    let (name, text) = if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| CliError::input(format!("cannot read the trace from stdin: {e}")))?;
        let name = source_name(path).to_string();
        let text = crate::input::utf8_text(bytes, &name, 1)?;
        (name, text)
    } else {
        let bytes = std::fs::read(path)
            .map_err(|e| CliError::input(format!("cannot read trace `{path}`: {e}")))?;
        (path.to_string(), crate::input::utf8_text(bytes, path, 1)?)
    };
    parse(&name, &text)
}

/// The header's column index of cycle, agent and tokens, and its line.
fn columns(
    name: &str,
    records: &mut csv::StringRecordsIter<'_, &[u8]>,
) -> Result<([usize; 3], u64), CliError> {
    let at = |line: u64, msg: String| CliError::input(format!("{name}:{line}: {msg}"));
    let header_hint = "the first line must be the header `cycle,agent,tokens`";
    let header = match records.next() {
        None => {
            return Err(at(1, "missing header: the trace is empty".into()).hint(header_hint));
        }
        Some(r) => r.map_err(|e| csv_error(name, &e))?,
    };
    let header_line = line_of(&header);
    if header
        .iter()
        .next()
        .is_some_and(|f| f.parse::<i64>().is_ok())
    {
        return Err(at(
            header_line,
            format!("missing header: found the data row `{}`", join(&header)),
        )
        .hint(header_hint));
    }
    // Column index of cycle, agent, tokens.
    let mut index: [Option<usize>; 3] = [None; 3];
    for (i, field) in header.iter().enumerate() {
        let Some(k) = COLUMNS.iter().position(|c| *c == field) else {
            return Err(at(
                header_line,
                format!("unknown column `{field}` (the columns are cycle, agent, tokens)"),
            ));
        };
        if index[k].is_some() {
            return Err(at(header_line, format!("column `{field}` appears twice")));
        }
        index[k] = Some(i);
    }
    let [Some(c_cycle), Some(c_agent), Some(c_tokens)] = index else {
        let missing: Vec<&str> = COLUMNS
            .iter()
            .zip(index)
            .filter(|(_, i)| i.is_none())
            .map(|(c, _)| *c)
            .collect();
        return Err(at(
            header_line,
            format!("missing column `{}` in the header", missing.join("`, `")),
        )
        .hint(header_hint));
    };
    Ok(([c_cycle, c_agent, c_tokens], header_line))
}

/// A data row's cycle, agent and tokens (columns `cols`), checked.
fn fields<'r>(
    name: &str,
    record: &'r csv::StringRecord,
    line: u64,
    [c_cycle, c_agent, c_tokens]: [usize; 3],
) -> Result<(u64, &'r str, i64), CliError> {
    let at = |line: u64, msg: String| CliError::input(format!("{name}:{line}: {msg}"));
    let field = |i: usize| record.get(i).unwrap_or("");
    let cycle_text = field(c_cycle);
    let cycle: u64 = cycle_text.parse().map_err(|_| {
        at(
            line,
            format!("cycle must be a non-negative integer (got `{cycle_text}`)"),
        )
    })?;
    let agent = field(c_agent);
    if agent.is_empty() {
        return Err(at(line, "agent name must not be empty".into()));
    }
    let tokens_text = field(c_tokens);
    let tokens: i64 = match tokens_text.parse::<i64>() {
        Ok(t) if t >= 0 => t,
        Ok(t) => return Err(at(line, format!("tokens must be >= 0 (got {t})"))),
        Err(_) => {
            return Err(at(
                line,
                format!("tokens must be a non-negative 64-bit integer (got `{tokens_text}`)"),
            ));
        }
    };
    Ok((cycle, agent, tokens))
}

/// Parses a trace; `name` prefixes every error message.
pub(crate) fn parse(name: &str, text: &str) -> Result<Vec<TraceCycle>, CliError> {
    let at = |line: u64, msg: String| CliError::input(format!("{name}:{line}: {msg}"));
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let mut records = reader.records();

    let ([c_cycle, c_agent, c_tokens], header_line) = columns(name, &mut records)?;

    let mut cycles: Vec<TraceCycle> = Vec::new();
    // Agents of the current cycle -> the line where each first appeared.
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    // The current cycle's total so far (it must fit an i64).
    let mut total: i128 = 0;
    for record in records {
        let record = record.map_err(|e| csv_error(name, &e))?;
        let line = line_of(&record);
        if record.len() != COLUMNS.len() {
            return Err(at(
                line,
                format!(
                    "expected 3 fields (cycle, agent, tokens), found {}",
                    record.len()
                ),
            ));
        }
        let (cycle, agent, tokens) = fields(name, &record, line, [c_cycle, c_agent, c_tokens])?;
        let same_cycle = cycles.last().is_some_and(|c| c.cycle == cycle);
        total = if same_cycle { total } else { 0 } + i128::from(tokens);
        if total > i128::from(i64::MAX) {
            return Err(at(
                line,
                format!(
                    "the tokens of cycle {cycle} add up to {total} here, beyond the 64-bit range"
                ),
            ));
        }
        match cycles.last_mut() {
            Some(last) if last.cycle == cycle => {
                if let Some(first) = seen.get(agent) {
                    return Err(at(
                        line,
                        format!(
                            "agent `{agent}` appears twice in cycle {cycle} (first on line {first})"
                        ),
                    ));
                }
                last.usage.push((agent.to_string(), tokens));
            }
            Some(last) if last.cycle > cycle => {
                return Err(at(
                    line,
                    format!(
                        "cycle {cycle} comes after cycle {} (line {}): cycles must be in ascending order",
                        last.cycle, last.line
                    ),
                ));
            }
            _ => {
                seen.clear();
                cycles.push(TraceCycle {
                    cycle,
                    line,
                    usage: vec![(agent.to_string(), tokens)],
                });
            }
        }
        seen.insert(agent.to_string(), line);
    }
    if cycles.is_empty() {
        return Err(at(
            header_line,
            "the trace has no rows after the header".into(),
        ));
    }
    Ok(cycles)
}

fn line_of(record: &csv::StringRecord) -> u64 {
    record.position().map_or(1, csv::Position::line)
}

fn join(record: &csv::StringRecord) -> String {
    record.iter().collect::<Vec<_>>().join(",")
}

/// A CSV syntax error (invalid UTF-8, an unterminated quote), with its line.
fn csv_error(name: &str, e: &csv::Error) -> CliError {
    let line = e.position().map_or(1, csv::Position::line);
    let what = match e.kind() {
        csv::ErrorKind::Utf8 { .. } => "the trace is not valid UTF-8".to_string(),
        _ => format!("malformed CSV: {e}"),
    };
    CliError::input(format!("{name}:{line}: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        // An unexpected success gives "", which fails the comparison.
        parse("t.csv", text)
            .err()
            .map(|e| e.message)
            .unwrap_or_default()
    }

    #[test]
    fn rows_group_into_cycles_in_file_order() {
        let cycles = parse(
            "t.csv",
            "cycle,agent,tokens\n1,A,5\n2,B,30\n2, A ,0\n7,A,5\n",
        )
        .unwrap_or_default();
        assert_eq!(cycles.len(), 3);
        assert_eq!((cycles[1].cycle, cycles[1].line), (2, 3));
        assert_eq!(cycles[1].usage, vec![("B".into(), 30), ("A".into(), 0)]);
        assert_eq!((cycles[2].cycle, cycles[2].line), (7, 5));
    }

    #[test]
    fn columns_may_come_in_any_order() {
        let cycles = parse("t.csv", "tokens,cycle,agent\n5,1,A\n").unwrap_or_default();
        assert_eq!(cycles[0].usage, vec![("A".into(), 5)]);
    }

    #[test]
    fn every_error_names_the_line() {
        assert_eq!(err(""), "t.csv:1: missing header: the trace is empty");
        assert_eq!(
            err("1,A,5\n"),
            "t.csv:1: missing header: found the data row `1,A,5`"
        );
        assert_eq!(
            err("cycle,agent,tokens,cost\n"),
            "t.csv:1: unknown column `cost` (the columns are cycle, agent, tokens)"
        );
        assert_eq!(
            err("cycle,agent\n1,A\n"),
            "t.csv:1: missing column `tokens` in the header"
        );
        assert_eq!(
            err("cycle,cycle,tokens\n"),
            "t.csv:1: column `cycle` appears twice"
        );
        assert_eq!(
            err("cycle,agent,tokens\n"),
            "t.csv:1: the trace has no rows after the header"
        );
        let h = "cycle,agent,tokens\n1,A,5\n";
        assert_eq!(
            err(&format!("{h}2,A,-3\n")),
            "t.csv:3: tokens must be >= 0 (got -3)"
        );
        assert_eq!(
            err(&format!("{h}2,A,lots\n")),
            "t.csv:3: tokens must be a non-negative 64-bit integer (got `lots`)"
        );
        assert_eq!(
            err(&format!("{h}2,A,9223372036854775808\n")),
            "t.csv:3: tokens must be a non-negative 64-bit integer (got `9223372036854775808`)"
        );
        assert_eq!(
            err(&format!("{h}x,A,1\n")),
            "t.csv:3: cycle must be a non-negative integer (got `x`)"
        );
        assert_eq!(
            err(&format!("{h}0,A,1\n")),
            "t.csv:3: cycle 0 comes after cycle 1 (line 2): cycles must be in ascending order"
        );
        assert_eq!(
            err(&format!("{h}1,A,2\n")),
            "t.csv:3: agent `A` appears twice in cycle 1 (first on line 2)"
        );
        assert_eq!(
            err(&format!("{h}2,,1\n")),
            "t.csv:3: agent name must not be empty"
        );
        assert_eq!(
            err(&format!("{h}2,A\n")),
            "t.csv:3: expected 3 fields (cycle, agent, tokens), found 2"
        );
    }
}
