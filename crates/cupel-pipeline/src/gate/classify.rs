//! [`BuiltinClassifier`]: tells SQL from C#/.NET from everything else.

use cupel_core::{CodeLanguage, LanguageClassifier};

/// The built-in [`LanguageClassifier`]: a deterministic scoring heuristic over
/// the text's words, with string literals and comments removed first.
///
/// * Text that reads as Python (`def f(...):`, `import x`, `self.`), Java
///   (`package x;`, `import java...;`) or prose (a high share of English
///   function words such as "the", "you", "this") is
///   [`Unknown`](CodeLanguage::Unknown), even if it quotes SQL.
/// * Text with braces and C# structure (`using X;`, `namespace`, access
///   modifiers with `class`/`interface`/`record`/`struct`, `{ get; set; }`,
///   `async Task`, `var`, ...) is [`Dotnet`](CodeLanguage::Dotnet) — whether
///   or not its strings hold SQL (those are not looked at).
/// * Text with a SQL statement shape (`SELECT … FROM`, `INSERT INTO`,
///   `UPDATE … SET`, `DELETE FROM`, `CREATE PROCEDURE|TABLE|VIEW|…`,
///   `ALTER …`, `DECLARE @x`, `MERGE INTO`, `EXEC proc`, ...) is
///   [`Sql`](CodeLanguage::Sql).
/// * Anything else is `Unknown`.
///
/// ```
/// use cupel_core::{CodeLanguage, LanguageClassifier};
/// use cupel_pipeline::BuiltinClassifier;
/// let c = BuiltinClassifier;
/// assert_eq!(c.classify("SELECT id, name FROM users WHERE active = 1;"), CodeLanguage::Sql);
/// assert_eq!(
///     c.classify("public class Repo {\n  public int Count() { return db.Query(\"SELECT COUNT(*) FROM t\"); }\n}"),
///     CodeLanguage::Dotnet
/// );
/// assert_eq!(c.classify("Select the rows you need from the table."), CodeLanguage::Unknown);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuiltinClassifier;

impl LanguageClassifier for BuiltinClassifier {
    fn classify(&self, text: &str) -> CodeLanguage {
        let code = strip(text);
        let lines: Vec<Vec<String>> = code.lines().map(words).collect();
        let all: Vec<&str> = lines.iter().flatten().map(String::as_str).collect();
        if all.is_empty() || looks_python(&code, &lines) || looks_java_or_js(&code, &lines, &all) {
            return CodeLanguage::Unknown;
        }
        if is_prose(&all) {
            return CodeLanguage::Unknown;
        }
        if csharp_score(&code, &lines, &all) >= 4 {
            return CodeLanguage::Dotnet;
        }
        if has_sql_statement(&all) {
            return CodeLanguage::Sql;
        }
        CodeLanguage::Unknown
    }
}

/// The text with comments and the *contents* of string literals removed
/// (quotes kept as `""`), so that code-shaped words inside strings or
/// comments do not count. Line breaks outside literals are kept.
fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut seg = 0; // start of the pending verbatim segment
    let push_until = |out: &mut String, from: usize, to: usize| out.push_str(&text[from..to]);
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        let skip_to = match c {
            b'-' if next == Some(b'-') => Some((eol(b, i), " ")),
            b'/' if next == Some(b'/') => Some((eol(b, i), " ")),
            b'#' if matches!(next, None | Some(b' ' | b'!' | b'\n' | b'\r')) => {
                Some((eol(b, i), " "))
            }
            b'/' if next == Some(b'*') => Some((
                b[i + 2..]
                    .windows(2)
                    .position(|w| w == b"*/")
                    .map_or(b.len(), |p| i + 2 + p + 2),
                " ",
            )),
            b'"' if b[i..].starts_with(b"\"\"\"") => Some((
                b[i + 3..]
                    .windows(3)
                    .position(|w| w == b"\"\"\"")
                    .map_or(b.len(), |p| i + 3 + p + 3),
                "\"\"",
            )),
            b'@' if next == Some(b'"') => Some((quoted_end(b, i + 1, b'"', false), "\"\"")),
            b'"' => Some((quoted_end(b, i, b'"', true), "\"\"")),
            b'\'' => Some((quoted_end(b, i, b'\'', true), "''")),
            _ => None,
        };
        match skip_to {
            Some((end, with)) => {
                push_until(&mut out, seg, i);
                out.push_str(with);
                i = end.max(i + 1);
                seg = i;
            }
            None => i += 1,
        }
    }
    push_until(&mut out, seg.min(b.len()), b.len());
    out
}

fn eol(b: &[u8], i: usize) -> usize {
    b[i..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |p| i + p)
}

/// End of a quoted literal opened at `i`: doubled quotes always escape,
/// backslashes too when `backslash`.
fn quoted_end(b: &[u8], i: usize, q: u8, backslash: bool) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' if backslash => j += 2,
            c if c == q && b.get(j + 1) == Some(&q) => j += 2,
            c if c == q => return j + 1,
            _ => j += 1,
        }
    }
    b.len()
}

/// The words of a line, upper-cased: runs of letters, digits, `_`, `@`, `#`.
fn words(line: &str) -> Vec<String> {
    line.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '@' | '#')))
        .filter(|w| !w.is_empty())
        .map(str::to_uppercase)
        .collect()
}

fn first_is(line: &[String], w: &str) -> bool {
    line.first().is_some_and(|f| f == w)
}

fn looks_python(code: &str, lines: &[Vec<String>]) -> bool {
    let mut score = 0;
    for (raw, ws) in code.lines().zip(lines) {
        let t = raw.trim_end();
        let block = t.ends_with(':');
        if block && first_is(ws, "DEF") {
            score += 3;
        } else if block
            && ws.first().is_some_and(|f| {
                [
                    "IF", "ELIF", "ELSE", "FOR", "WHILE", "CLASS", "TRY", "EXCEPT", "WITH",
                ]
                .contains(&f.as_str())
            })
        {
            score += 1;
        }
        let trimmed = t.trim_start();
        if (trimmed.starts_with("import ")
            || trimmed.starts_with("from ") && t.contains(" import "))
            && !t.ends_with(';')
        {
            score += 2;
        }
    }
    score += code.matches("self.").count().min(3);
    score >= 3
}

fn looks_java_or_js(code: &str, lines: &[Vec<String>], all: &[&str]) -> bool {
    let java = code.lines().zip(lines).any(|(raw, ws)| {
        (first_is(ws, "PACKAGE") || first_is(ws, "IMPORT")) && raw.trim_end().ends_with(';')
    }) || code.contains("System.out.");
    let js = code.contains("===")
        || all
            .iter()
            .filter(|w| matches!(**w, "FUNCTION" | "LET" | "EXPORT" | "REQUIRE" | "CONSOLE"))
            .count()
            >= 2
            && !all.contains(&"BEGIN");
    java || js
}

/// A high share of English function words means prose.
fn is_prose(all: &[&str]) -> bool {
    const STOP: &[&str] = &[
        "THE", "ARE", "WAS", "WERE", "OF", "YOU", "WE", "THIS", "THAT", "WILL", "PLEASE", "SHOULD",
        "WOULD", "CAN", "IT", "HOW", "WHAT", "WHY", "OUR", "YOUR", "THERE", "HAVE", "HAS", "BE",
        "AN", "I", "MY", "THEY", "ITS", "IT'S", "NEED",
    ];
    let stop = all.iter().filter(|w| STOP.contains(w)).count();
    // 1 in 10 words: common in English, rare in code (keywords and names).
    stop * 10 >= all.len() && stop >= 2
}

fn csharp_score(code: &str, lines: &[Vec<String>], all: &[&str]) -> usize {
    if !code.contains('{') {
        return 0;
    }
    let mut score = 0;
    for (raw, ws) in code.lines().zip(lines) {
        let t = raw.trim_end();
        if first_is(ws, "USING") && t.ends_with(';') && ws.len() >= 2 {
            score += 3;
        }
        if first_is(ws, "NAMESPACE") {
            score += 3;
        }
    }
    const ACCESS: &[&str] = &["PUBLIC", "PRIVATE", "PROTECTED", "INTERNAL"];
    const TYPES: &[&str] = &["CLASS", "INTERFACE", "RECORD", "STRUCT", "ENUM"];
    if all.iter().any(|w| ACCESS.contains(w)) && all.iter().any(|w| TYPES.contains(w)) {
        score += 3;
    }
    let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("{get;") || compact.contains("get;set;") || compact.contains("{get=>") {
        score += 2;
    }
    const HINTS: &[&str] = &[
        "PUBLIC",
        "PRIVATE",
        "PROTECTED",
        "INTERNAL",
        "VOID",
        "ASYNC",
        "AWAIT",
        "TASK",
        "VAR",
        "NEW",
        "STATIC",
        "READONLY",
        "OVERRIDE",
        "RETURN",
        "STRING",
        "BOOL",
        "CONST",
        "THIS",
        "FOREACH",
        "NULL",
        "SEALED",
        "PARTIAL",
        "VIRTUAL",
    ];
    let mut seen: Vec<&str> = all.iter().copied().filter(|w| HINTS.contains(w)).collect();
    seen.sort_unstable();
    seen.dedup();
    score += seen.len().min(5);
    if code.contains("=>") {
        score += 1;
    }
    if code.contains(';') {
        score += 1;
    }
    score
}

fn has_sql_statement(all: &[&str]) -> bool {
    let within = |k: usize, n: usize, targets: &[&str]| {
        all.iter().skip(k + 1).take(n).any(|w| targets.contains(w))
    };
    const OBJECTS: &[&str] = &[
        "PROCEDURE",
        "PROC",
        "TABLE",
        "VIEW",
        "FUNCTION",
        "INDEX",
        "TRIGGER",
        "SCHEMA",
        "DATABASE",
        "TYPE",
        "SEQUENCE",
    ];
    all.iter().enumerate().any(|(k, w)| match *w {
        "SELECT" => within(k, 200, &["FROM"]) || within(k, 3, &["@@ROWCOUNT", "@@IDENTITY"]),
        "INSERT" => within(k, 1, &["INTO"]) || within(k, 3, &["VALUES", "SELECT"]),
        "UPDATE" => within(k, 40, &["SET"]),
        "DELETE" => within(k, 3, &["FROM"]),
        "CREATE" | "ALTER" | "DROP" => within(k, 4, OBJECTS),
        "DECLARE" => all.get(k + 1).is_some_and(|n| n.starts_with('@')),
        "MERGE" => within(k, 2, &["INTO"]) || within(k, 30, &["USING"]),
        "TRUNCATE" => within(k, 1, &["TABLE"]),
        "EXEC" | "EXECUTE" => k + 1 < all.len(),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lang(t: &str) -> CodeLanguage {
        BuiltinClassifier.classify(t)
    }

    #[test]
    fn strip_removes_comments_and_literal_contents() {
        assert_eq!(
            strip("a -- c\nb 'x y' \"z\" /* w */ c"),
            "a  \nb '' \"\"   c"
        );
        assert_eq!(strip("x = @\"a \"\" b\" + 1"), "x = \"\" + 1");
        assert_eq!(strip("q = \"\"\"SELECT a FROM b\"\"\""), "q = \"\"");
        assert_eq!(
            strip("INSERT INTO #tmp VALUES (1) # note"),
            "INSERT INTO #tmp VALUES (1)  "
        );
    }

    #[test]
    fn empty_and_blank_are_unknown() {
        assert_eq!(lang(""), CodeLanguage::Unknown);
        assert_eq!(lang("  \n\t"), CodeLanguage::Unknown);
        assert_eq!(lang("-- just a comment"), CodeLanguage::Unknown);
    }
}
