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
        let f = Features::scan(&code);
        if f.words == 0 || f.looks_python() || f.looks_java_or_js() || f.is_prose() {
            return CodeLanguage::Unknown;
        }
        if f.csharp_score() >= 4 {
            return CodeLanguage::Dotnet;
        }
        if f.sql {
            return CodeLanguage::Sql;
        }
        CodeLanguage::Unknown
    }
}

/// Everything the rules look at, gathered in one pass over the stripped
/// code's words, without keeping the words: memory is constant beyond the
/// stripped copy of the text (issue 31: a `String` per word cost about 40
/// times the text). A word is a run of letters, digits, `_`, `@` and `#`,
/// compared in its Unicode upper case.
#[derive(Default)]
struct Features {
    /// Words in the whole text.
    words: usize,
    python_lines: usize,
    self_dots: usize,
    java: bool,
    triple_equals: bool,
    js_words: usize,
    has_begin: bool,
    stop_words: usize,
    has_brace: bool,
    csharp_lines: usize,
    has_access: bool,
    has_type: bool,
    property_shape: bool,
    /// Bit `i` set when `HINTS[i]` occurs.
    hints: u32,
    has_arrow: bool,
    has_semicolon: bool,
    /// Some word starts a SQL statement shape (see [`SqlScan`]).
    sql: bool,
}

const PYTHON_BLOCKS: &[&str] = &[
    "IF", "ELIF", "ELSE", "FOR", "WHILE", "CLASS", "TRY", "EXCEPT", "WITH",
];
const JS_WORDS: &[&str] = &["FUNCTION", "LET", "EXPORT", "REQUIRE", "CONSOLE"];
/// English function words: a high share of them means prose.
const STOP: &[&str] = &[
    "THE", "ARE", "WAS", "WERE", "OF", "YOU", "WE", "THIS", "THAT", "WILL", "PLEASE", "SHOULD",
    "WOULD", "CAN", "IT", "HOW", "WHAT", "WHY", "OUR", "YOUR", "THERE", "HAVE", "HAS", "BE", "AN",
    "I", "MY", "THEY", "ITS", "IT'S", "NEED",
];
const ACCESS: &[&str] = &["PUBLIC", "PRIVATE", "PROTECTED", "INTERNAL"];
const TYPES: &[&str] = &["CLASS", "INTERFACE", "RECORD", "STRUCT", "ENUM"];
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
const SQL_OBJECTS: &[&str] = &[
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

impl Features {
    fn scan(code: &str) -> Features {
        let mut f = Features {
            self_dots: code.matches("self.").count(),
            java: code.contains("System.out."),
            triple_equals: code.contains("==="),
            has_brace: code.contains('{'),
            property_shape: has_property_shape(code),
            has_arrow: code.contains("=>"),
            has_semicolon: code.contains(';'),
            ..Features::default()
        };
        let mut sql = SqlScan::default();
        let mut upper = String::new();
        for raw in code.lines() {
            let t = raw.trim_end();
            let mut first: Option<&'static str> = None;
            let mut in_line = 0usize;
            for w in raw
                .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '@' | '#')))
                .filter(|w| !w.is_empty())
            {
                upper.clear();
                upper.extend(w.chars().flat_map(char::to_uppercase));
                let u = upper.as_str();
                if in_line == 0 {
                    first = FIRST_WORDS.iter().copied().find(|k| *k == u);
                    // Marks a line whose first word is something else.
                    if first.is_none() {
                        first = Some("");
                    }
                }
                in_line += 1;
                f.words += 1;
                f.js_words += usize::from(JS_WORDS.contains(&u));
                f.has_begin |= u == "BEGIN";
                f.stop_words += usize::from(STOP.contains(&u));
                f.has_access |= ACCESS.contains(&u);
                f.has_type |= TYPES.contains(&u);
                if let Some(i) = HINTS.iter().position(|h| *h == u) {
                    f.hints |= 1 << i;
                }
                f.sql |= sql.word(u);
            }
            let first = first.unwrap_or("");
            let block = t.ends_with(':');
            if block && first == "DEF" {
                f.python_lines += 3;
            } else if block && PYTHON_BLOCKS.contains(&first) {
                f.python_lines += 1;
            }
            let trimmed = t.trim_start();
            if (trimmed.starts_with("import ")
                || trimmed.starts_with("from ") && t.contains(" import "))
                && !t.ends_with(';')
            {
                f.python_lines += 2;
            }
            if matches!(first, "PACKAGE" | "IMPORT") && t.ends_with(';') {
                f.java = true;
            }
            if first == "USING" && t.ends_with(';') && in_line >= 2 {
                f.csharp_lines += 3;
            }
            if first == "NAMESPACE" {
                f.csharp_lines += 3;
            }
        }
        f
    }

    fn looks_python(&self) -> bool {
        self.python_lines + self.self_dots.min(3) >= 3
    }

    fn looks_java_or_js(&self) -> bool {
        self.java || self.triple_equals || self.js_words >= 2 && !self.has_begin
    }

    /// 1 in 10 words a function word: common in English, rare in code.
    fn is_prose(&self) -> bool {
        self.stop_words * 10 >= self.words && self.stop_words >= 2
    }

    fn csharp_score(&self) -> usize {
        if !self.has_brace {
            return 0;
        }
        let mut score = self.csharp_lines;
        if self.has_access && self.has_type {
            score += 3;
        }
        if self.property_shape {
            score += 2;
        }
        score += (self.hints.count_ones() as usize).min(5);
        score + usize::from(self.has_arrow) + usize::from(self.has_semicolon)
    }
}

/// The first words some line rules look at.
const FIRST_WORDS: &[&str] = &[
    "DEF",
    "IF",
    "ELIF",
    "ELSE",
    "FOR",
    "WHILE",
    "CLASS",
    "TRY",
    "EXCEPT",
    "WITH",
    "PACKAGE",
    "IMPORT",
    "USING",
    "NAMESPACE",
];

/// Whether the code, with whitespace removed, contains a C# property shape:
/// `{get;`, `get;set;` or `{get=>`. Scans once with a window of the last
/// eight non-blank characters instead of building a whitespace-free copy.
fn has_property_shape(code: &str) -> bool {
    const SHAPES: [&[u8]; 3] = [b"{get;", b"get;set;", b"{get=>"];
    let mut window = [0u8; 8];
    let mut filled = 0usize;
    for c in code.chars().filter(|c| !c.is_whitespace()) {
        // Only ASCII bytes can be part of a shape; anything else breaks it.
        let b = if c.is_ascii() { c as u8 } else { 0 };
        window.rotate_left(1);
        window[7] = b;
        filled = (filled + 1).min(8);
        let tail = &window[8 - filled..];
        if SHAPES.iter().any(|s| tail.ends_with(s)) {
            return true;
        }
    }
    false
}

/// The SQL statement shapes, found in one pass over the words: a statement
/// word followed within a few words by its partner (`SELECT … FROM` within
/// 200 words, `INSERT INTO`, `UPDATE … SET` within 40, `DELETE FROM` within
/// 3, `CREATE|ALTER|DROP` and an object kind within 4, `DECLARE @x`, `MERGE
/// INTO` or `MERGE … USING`, `TRUNCATE TABLE`, `EXEC` followed by anything).
/// Each statement word remembers only where it last occurred: the nearest
/// earlier occurrence is the one that can be within reach of a partner.
#[derive(Default)]
struct SqlScan {
    /// Index of the next word.
    at: usize,
    select: Option<usize>,
    insert: Option<usize>,
    update: Option<usize>,
    delete: Option<usize>,
    create: Option<usize>,
    declare: Option<usize>,
    merge: Option<usize>,
    truncate: Option<usize>,
    exec: Option<usize>,
}

impl SqlScan {
    /// Feeds the next (upper-cased) word; `true` when it completes a shape.
    fn word(&mut self, w: &str) -> bool {
        let j = self.at;
        self.at += 1;
        // Is the last `what` at most `n` words before this one?
        let near = |what: Option<usize>, n: usize| what.is_some_and(|k| j - k <= n);
        let hit = match w {
            "FROM" => near(self.select, 200) || near(self.delete, 3),
            "@@ROWCOUNT" | "@@IDENTITY" => near(self.select, 3),
            "INTO" => near(self.insert, 1) || near(self.merge, 2),
            "VALUES" => near(self.insert, 3),
            "SET" => near(self.update, 40),
            "USING" => near(self.merge, 30),
            _ => false,
        } || (w == "SELECT" && near(self.insert, 3))
            || (SQL_OBJECTS.contains(&w) && near(self.create, 4))
            || (w == "TABLE" && near(self.truncate, 1))
            || (w.starts_with('@') && near(self.declare, 1))
            || self.exec.is_some();
        match w {
            "SELECT" => self.select = Some(j),
            "INSERT" => self.insert = Some(j),
            "UPDATE" => self.update = Some(j),
            "DELETE" => self.delete = Some(j),
            "CREATE" | "ALTER" | "DROP" => self.create = Some(j),
            "DECLARE" => self.declare = Some(j),
            "MERGE" => self.merge = Some(j),
            "TRUNCATE" => self.truncate = Some(j),
            "EXEC" | "EXECUTE" => self.exec = Some(j),
            _ => {}
        }
        hit
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

/// The classifier as it was before issue 31 (a `String` per word), kept only
/// as a test oracle: the one-pass scan must classify every text the same.
#[cfg(test)]
#[allow(clippy::all, clippy::pedantic)]
mod reference {
    use cupel_core::CodeLanguage;

    pub(super) fn classify(text: &str) -> CodeLanguage {
        {
            let code = super::strip(text);
            let lines: Vec<Vec<String>> = code.lines().map(words).collect();
            let all: Vec<&str> = lines.iter().flatten().map(String::as_str).collect();
            if all.is_empty()
                || looks_python(&code, &lines)
                || looks_java_or_js(&code, &lines, &all)
            {
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
            "THE", "ARE", "WAS", "WERE", "OF", "YOU", "WE", "THIS", "THAT", "WILL", "PLEASE",
            "SHOULD", "WOULD", "CAN", "IT", "HOW", "WHAT", "WHY", "OUR", "YOUR", "THERE", "HAVE",
            "HAS", "BE", "AN", "I", "MY", "THEY", "ITS", "IT'S", "NEED",
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

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// The one-pass scan classifies exactly as the word-list classifier
        /// did, on code-shaped random texts.
        #[test]
        fn matches_the_word_list_oracle(words in proptest::collection::vec(
            proptest::sample::select(vec![
                "SELECT", "select", "FROM", "from", "INSERT", "INTO", "VALUES", "UPDATE", "SET",
                "DELETE", "CREATE", "TABLE", "PROCEDURE", "ALTER", "DROP", "DECLARE", "@x",
                "@@ROWCOUNT", "MERGE", "USING", "using", "TRUNCATE", "EXEC", "namespace",
                "public", "class", "record", "{", "}", "{ get; set; }", "get;", "=>", ";", ":",
                "def", "if", "import", "from x import y", "self.a", "package", "===",
                "function", "let", "BEGIN", "the", "you", "this", "it", "ıf", "ſelect", "void",
                "async", "Task", "var", "return", "\n", "\n", " ", "'s'", "-- c", "x", "1",
                "System.out.", "\"q\"", "#t", "é",
            ]),
            0..40,
        )) {
            let text = words.join(" ");
            proptest::prop_assert_eq!(lang(&text), reference::classify(&text), "{:?}", text);
        }
    }
}
