//! [`BuiltinClassifier`]: tells SQL from C#/.NET from everything else, with
//! the scores and thresholds of the original gate's classifier.
//!
//! The rules (spec/17-context-gate.md, "Language detection") in short:
//!
//! 1. Comments (`//`, `--`, `/* */`) are dropped and every string literal
//!    (`"…"`, `@"…"`, `$"…"`, `$@"…"`, `"""…"""`, `'…'`) is set aside and
//!    replaced by a placeholder word; the rest is the *code*.
//! 2. The code gets a .NET score (using/namespace lines, type and modifier
//!    keywords, `=>`, attributes, generics, LINQ calls, try/catch,
//!    punctuation, EF migration and SQL call-site patterns) and a SQL score
//!    (distinct and total SQL keywords, DDL and T-SQL shapes, statement
//!    structures). Each string literal that reads as SQL adds to an
//!    embedded-SQL score.
//! 3. INI/CFG-looking text with weak scores is `unknown`; EF migrations that
//!    call `migrationBuilder.Sql(…)` are .NET with SQL; otherwise the scores
//!    are compared with thresholds that are lower for snippets under 60
//!    words (14 instead of 18; 12 instead of 14 for embedded SQL).
//!
//! The scan keeps no per-word data: one copy of the code, one reusable
//! buffer for the literal being read, and a bounded buffer (about 4,000
//! characters) for SQL split across several literals.

use std::collections::VecDeque;
use std::sync::LazyLock;

use crate::{CodeLanguage, CodeNode, LanguageClassifier};
use regex::Regex;

/// The four answers of the original classifier; the gate maps them onto
/// [`CodeLanguage`] with [`CodeKind::language`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeKind {
    /// C#/.NET source.
    Dotnet,
    /// SQL.
    Sql,
    /// C#/.NET source whose string literals hold SQL.
    DotnetWithSql,
    /// Anything else.
    Unknown,
}

impl CodeKind {
    /// The gate's language: `Dotnet` and `DotnetWithSql` are
    /// [`CodeLanguage::Dotnet`], `Sql` is [`CodeLanguage::Sql`], the rest
    /// [`CodeLanguage::Unknown`].
    pub const fn language(self) -> CodeLanguage {
        match self {
            CodeKind::Dotnet | CodeKind::DotnetWithSql => CodeLanguage::Dotnet,
            CodeKind::Sql => CodeLanguage::Sql,
            CodeKind::Unknown => CodeLanguage::Unknown,
        }
    }

    /// `dotnet`, `sql`, `dotnet_with_sql` or `unknown`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CodeKind::Dotnet => "dotnet",
            CodeKind::Sql => "sql",
            CodeKind::DotnetWithSql => "dotnet_with_sql",
            CodeKind::Unknown => "unknown",
        }
    }
}

/// The numbers behind one classification (see [`BuiltinClassifier::scores`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ClassifierScores {
    /// The answer.
    pub kind: CodeKind,
    /// The .NET score of the code (outside literals and comments).
    pub dotnet: f64,
    /// The SQL score of the code.
    pub sql: f64,
    /// The embedded-SQL score of the string literals.
    pub embedded_sql: f64,
    /// Identifier-like words (`[A-Za-z_][A-Za-z0-9_]*`) in the code; under
    /// 60 the lower thresholds apply.
    pub words: usize,
    /// Whether the text looks like an INI/CFG file.
    pub config_like: bool,
}

/// The built-in [`LanguageClassifier`]: the original gate classifier's
/// scoring, reimplemented (see the module documentation and
/// `spec/17-context-gate.md`).
///
/// [`classify_node`](LanguageClassifier::classify_node) lets the node's path
/// decide first: `.sql` is SQL, `.cs` and `.csproj` are .NET
/// ([`CodeLanguage::from_path`]); otherwise the text is scored.
///
/// ```
/// use cupel_gate::{CodeLanguage, CodeNode, LanguageClassifier};
/// use cupel_gate::BuiltinClassifier;
/// let c = BuiltinClassifier;
/// assert_eq!(c.classify("SELECT i.id FROM invoices i WHERE i.paid = 0;"), CodeLanguage::Sql);
/// assert_eq!(
///     c.classify("namespace Shop.Orders;\npublic record OrderCreated(int Id, decimal Total);"),
///     CodeLanguage::Dotnet
/// );
/// assert_eq!(c.classify("hello there"), CodeLanguage::Unknown);
/// let node = CodeNode::new("hello there").with_path(Some("db/report.sql"));
/// assert_eq!(c.classify_node(node), CodeLanguage::Sql);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BuiltinClassifier;

impl LanguageClassifier for BuiltinClassifier {
    fn classify(&self, text: &str) -> CodeLanguage {
        self.scores(text).kind.language()
    }

    fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
        node.path
            .and_then(CodeLanguage::from_path)
            .unwrap_or_else(|| self.classify(node.text))
    }
}

impl BuiltinClassifier {
    /// The scores and the answer for `text` (the path plays no part here).
    ///
    /// ```
    /// use cupel_gate::{BuiltinClassifier, CodeKind};
    /// let s = BuiltinClassifier.scores("DELETE FROM sessions WHERE expired = 1;");
    /// assert_eq!(s.kind, CodeKind::Sql);
    /// // DELETE, FROM, WHERE: 3 × 2.2 + 3 × 0.18 = 7.14; DELETE … FROM: + 9.
    /// assert!((s.sql - 16.14).abs() < 1e-9);
    /// ```
    pub fn scores(&self, text: &str) -> ClassifierScores {
        let mut embedded = Embedded::default();
        let code = lex(text, |quote, content, multiline| {
            embedded.literal(quote, content, multiline);
        });
        let words = identifier_words(&code);
        let dotnet = DotnetScore::of(&code);
        let sql = sql_score(&code);
        let mut embedded_sql = embedded.score;
        let config_like = is_config_like(text);
        let scores = |kind, embedded_sql| ClassifierScores {
            kind,
            dotnet: dotnet.score,
            sql,
            embedded_sql,
            words,
            config_like,
        };
        // INI/CFG text with weak scores is not code.
        if config_like && dotnet.score < 16.0 && sql < 16.0 {
            return scores(CodeKind::Unknown, embedded_sql);
        }
        // An EF migration that runs SQL is .NET with SQL, however short the SQL.
        if dotnet.migration && dotnet.migration_sql {
            return scores(CodeKind::DotnetWithSql, embedded_sql);
        }
        // SQL split over several literals counts when the code runs SQL.
        if dotnet.sql_callsite {
            embedded_sql += embedded.combined_boost();
        }
        let (dotnet_th, sql_th, embedded_th) = if words < 60 {
            (14.0, 14.0, 12.0)
        } else {
            (18.0, 18.0, 14.0)
        };
        let d = dotnet.score;
        let dotnet_strong = d >= dotnet_th;
        let sql_strong = sql >= sql_th;
        let embedded_strong = embedded_sql >= embedded_th;
        let kind =
            if dotnet_strong && (embedded_strong || (dotnet.sql_callsite && embedded_sql >= 8.5)) {
                CodeKind::DotnetWithSql
            } else if sql_strong && !dotnet_strong {
                CodeKind::Sql
            } else if dotnet_strong && sql < sql_th - 2.0 && embedded_sql < 8.0 {
                CodeKind::Dotnet
            } else if d >= dotnet_th - 2.0 && embedded_sql >= 9.0 {
                CodeKind::DotnetWithSql
            } else if sql >= sql_th - 2.0 && d < dotnet_th - 2.0 {
                CodeKind::Sql
            } else if d >= dotnet_th - 2.0 && sql < sql_th - 2.0 {
                CodeKind::Dotnet
            } else {
                CodeKind::Unknown
            };
        scores(kind, embedded_sql)
    }
}

/// How a string literal was quoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    /// `"…"` with any C# prefix.
    Double,
    /// `"""…"""`.
    Triple,
    /// `'…'`.
    Single,
}

/// The code of `text`: comments dropped, each closed string literal replaced
/// by the word `__STR__` and handed to `literal` (quote, content with its
/// escapes resolved, whether it is multi-line). A literal still open at the
/// end of the text is dropped with its content.
fn lex(text: &str, mut literal: impl FnMut(Quote, &str, bool)) -> String {
    let b = text.as_bytes();
    let n = b.len();
    let at = |i: usize, s: &[u8]| b.get(i..).is_some_and(|t| t.starts_with(s));
    let mut out = String::with_capacity(n);
    let mut buf = String::new();
    let mut i = 0;
    while i < n {
        // Raw literals first: `"""…"""`, closed by three quotes not followed
        // by a fourth.
        if at(i, b"$\"\"\"") || at(i, b"\"\"\"") {
            i += if b[i] == b'$' { 4 } else { 3 };
            let closed = scan_triple(text, &mut i, &mut buf);
            if closed {
                literal(Quote::Triple, &buf, true);
                out.push_str("__STR__");
            }
            continue;
        }
        let double = if at(i, b"$@\"") || at(i, b"@$\"") {
            Some((3, true))
        } else if at(i, b"@\"") {
            Some((2, true))
        } else if at(i, b"$\"") {
            Some((2, false))
        } else if b[i] == b'"' {
            Some((1, false))
        } else {
            None
        };
        if let Some((skip, verbatim)) = double {
            i += skip;
            let (closed, multiline) = scan_double(text, &mut i, verbatim, &mut buf);
            if closed {
                literal(Quote::Double, &buf, multiline);
                out.push_str("__STR__");
            }
            continue;
        }
        if b[i] == b'\'' {
            i += 1;
            let (closed, multiline) = scan_single(text, &mut i, &mut buf);
            if closed {
                literal(Quote::Single, &buf, multiline);
                out.push_str("__STR__");
            }
            continue;
        }
        if at(i, b"/*") {
            i = b[i + 2..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(n, |p| i + 2 + p + 2);
            continue;
        }
        if at(i, b"//") || at(i, b"--") {
            // The line break itself stays.
            i = b[i..].iter().position(|&c| c == b'\n').map_or(n, |p| i + p);
            continue;
        }
        push_char(&mut out, text, &mut i);
    }
    out
}

/// The content of a `"""…"""` literal from byte `*i` (after its opening
/// quotes) into `buf`, `*i` past its closing quotes (three not followed by
/// a fourth); whether it was closed.
fn scan_triple(text: &str, i: &mut usize, buf: &mut String) -> bool {
    let b = text.as_bytes();
    let at = |i: usize, s: &[u8]| b.get(i..).is_some_and(|t| t.starts_with(s));
    buf.clear();
    while *i < b.len() {
        if at(*i, b"\"\"\"") && !at(*i, b"\"\"\"\"") {
            *i += 3;
            return true;
        }
        push_char(buf, text, i);
    }
    false
}

/// The content of a `"…"` literal (`verbatim`: `@"…"`, where `""` is a
/// quote and `\\` no escape) from byte `*i` into `buf`; whether it was
/// closed and whether it is multi-line (a verbatim one always counts as
/// multi-line, as in the original).
fn scan_double(text: &str, i: &mut usize, verbatim: bool, buf: &mut String) -> (bool, bool) {
    let b = text.as_bytes();
    let n = b.len();
    buf.clear();
    let mut multiline = verbatim;
    while *i < n {
        match b[*i] {
            b'"' if verbatim && b.get(*i + 1) == Some(&b'"') => {
                buf.push('"');
                *i += 2;
            }
            b'"' => {
                *i += 1;
                return (true, multiline);
            }
            b'\\' if !verbatim => {
                buf.push('\\');
                *i += 1;
                if *i < n {
                    push_char(buf, text, i);
                }
            }
            c => {
                multiline |= c == b'\n';
                push_char(buf, text, i);
            }
        }
    }
    (false, multiline)
}

/// The content of a `'…'` literal (`''` is a quote) from byte `*i` into
/// `buf`; whether it was closed and whether it is multi-line.
fn scan_single(text: &str, i: &mut usize, buf: &mut String) -> (bool, bool) {
    let b = text.as_bytes();
    buf.clear();
    let mut multiline = false;
    while *i < b.len() {
        match b[*i] {
            b'\'' if b.get(*i + 1) == Some(&b'\'') => {
                buf.push('\'');
                *i += 2;
            }
            b'\'' => {
                *i += 1;
                return (true, multiline);
            }
            c => {
                multiline |= c == b'\n';
                push_char(buf, text, i);
            }
        }
    }
    (false, multiline)
}

/// Appends the character at byte `i` and steps past it.
fn push_char(buf: &mut String, text: &str, i: &mut usize) {
    match text.get(*i..).and_then(|t| t.chars().next()) {
        Some(c) => {
            buf.push(c);
            *i += c.len_utf8();
        }
        None => *i += 1,
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// One word (a maximal run of letters, digits and `_`) with its position.
struct Word<'a> {
    text: &'a str,
    /// Character index of the first character.
    start: usize,
    /// Character index just past the last character.
    end: usize,
    /// Byte index just past the last character.
    end_byte: usize,
}

fn for_each_word<'a>(text: &'a str, mut f: impl FnMut(&Word<'a>)) {
    let mut start: Option<(usize, usize)> = None;
    let mut chars = 0;
    for (byte, c) in text.char_indices() {
        match (is_word_char(c), start) {
            (true, None) => start = Some((byte, chars)),
            (false, Some((sb, sc))) => {
                f(&Word {
                    text: &text[sb..byte],
                    start: sc,
                    end: chars,
                    end_byte: byte,
                });
                start = None;
            }
            _ => {}
        }
        chars += 1;
    }
    if let Some((sb, sc)) = start {
        f(&Word {
            text: &text[sb..],
            start: sc,
            end: chars,
            end_byte: text.len(),
        });
    }
}

/// Words shaped like identifiers, `[A-Za-z_][A-Za-z0-9_]*` (ASCII only).
fn identifier_words(code: &str) -> usize {
    let b = code.as_bytes();
    let mut count = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            count += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    count
}

/// Compiles one of this file's constant patterns (each is compiled by the
/// `every_pattern_compiles` test, so no input can reach a failure here).
#[allow(clippy::expect_used)]
fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("a constant pattern of the classifier")
}

macro_rules! pattern {
    ($name:ident, $p:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| re($p));
    };
}

pattern!(USING_LINE, r"(?m)^\s*using\s+[A-Za-z0-9_.]+\s*;\s*$");
pattern!(NAMESPACE_LINE, r"(?m)^\s*namespace\s+[A-Za-z0-9_.]+\s*[{;]");
pattern!(GET_SET, r"\bget\s*;\s*set\s*;\b");
pattern!(
    ATTRIBUTE_LINE,
    r"(?m)^\s*\[[A-Za-z_][A-Za-z0-9_\.]*.*?\]\s*$"
);
pattern!(
    GENERIC,
    r"\b[A-Za-z_][A-Za-z0-9_]*\s*<\s*[A-Za-z0-9_,\s\.\?]+\s*>"
);
pattern!(
    LINQ,
    r"\.\s*(Select|Where|ToList|FirstOrDefault|Any|All|Join|GroupBy|OrderBy)\s*\("
);
pattern!(TRY_CATCH, r"\btry\s*\{|\bcatch\s*\(|\bfinally\s*\{");
pattern!(MIGRATION_SQL, r"\bmigrationBuilder\s*\.\s*Sql\s*\(");
pattern!(
    SQL_CALLSITE,
    r"\bFromSqlRaw\s*\(|\bFromSqlInterpolated\s*\(|\bExecuteSqlRaw\s*\(|\bExecuteSqlRawAsync\s*\(|\bExecuteSqlInterpolated\s*\(|\bDbCommand\b|\bSqlCommand\b|\bCommandText\b|\bDapper\b|\bExecuteAsync\s*\(|\bQueryAsync\s*\(|\bExecuteScalarAsync\s*\("
);
pattern!(CREATE_TABLE, r"(?i)\bCREATE\s+TABLE\b");
pattern!(CREATE_INDEX, r"(?i)\bCREATE\s+(UNIQUE\s+)?INDEX\b");
pattern!(
    CREATE_FUNCTION,
    r"(?i)\bCREATE\s+(OR\s+ALTER\s+)?FUNCTION\b"
);
pattern!(CREATE_VIEW, r"(?i)\bCREATE\s+(OR\s+ALTER\s+)?VIEW\b");
pattern!(CREATE_TRIGGER, r"(?i)\bCREATE\s+(OR\s+ALTER\s+)?TRIGGER\b");
pattern!(
    CREATE_PROCEDURE,
    r"(?i)\bCREATE\s+(OR\s+ALTER\s+)?PROCEDURE\b|\bCREATE\s+PROC\b"
);
pattern!(TSQL_VARIABLE, r"(?i)\bDECLARE\s+@\w+|\bSET\s+@\w+");
pattern!(GO_LINE, r"(?mi)^\s*GO\s*$");
pattern!(NOLOCK, r"(?i)\bWITH\s*\(\s*NOLOCK\s*\)");
pattern!(BEGIN_TRY, r"(?i)\bBEGIN\s+TRY\b");
pattern!(BEGIN_TRAN, r"(?i)\bBEGIN\s+TRAN\b|\bBEGIN\s+TRANSACTION\b");
pattern!(INI_SECTION, r"(?m)^\s*\[[^\]]+\]\s*$");
pattern!(KEY_VALUE_LINE, r"(?m)^\s*[A-Za-z0-9_.-]+\s*=\s*.+$");

/// The .NET score of the code and the hints that steer the decision.
struct DotnetScore {
    score: f64,
    /// EF migration structure (two or more migration patterns).
    migration: bool,
    /// `migrationBuilder.Sql(…)`.
    migration_sql: bool,
    /// Code that runs SQL (EF raw SQL, Dapper, `SqlCommand`, …).
    sql_callsite: bool,
}

/// The type keywords, then the modifiers, in the original's order.
const DOTNET_WORDS: [&str; 13] = [
    "class",
    "struct",
    "record",
    "interface",
    "public",
    "private",
    "internal",
    "protected",
    "static",
    "async",
    "await",
    "var",
    "new",
];

/// A count as a score term (counts beyond 2^53 lose precision, harmlessly).
#[allow(clippy::cast_precision_loss)]
fn num(n: usize) -> f64 {
    n as f64
}

impl DotnetScore {
    fn of(code: &str) -> Self {
        let mut score = 0.0;
        let using = USING_LINE.find_iter(code).count();
        let namespace = NAMESPACE_LINE.find_iter(code).count();
        if using > 0 {
            score += 8.0 + 1.5 * num(using);
        }
        if namespace > 0 {
            score += 10.0 + 2.0 * num(namespace);
        }
        let mut hits = [0usize; DOTNET_WORDS.len()];
        for_each_word(code, |w| {
            if let Some(k) = DOTNET_WORDS.iter().position(|k| *k == w.text) {
                hits[k] += 1;
            }
        });
        for (k, &v) in hits.iter().enumerate() {
            if v == 0 {
                continue;
            }
            score += match k {
                // class, struct, record, interface
                0..=3 => 8.0 + num(v),
                // async, await
                9 | 10 => 3.0 + 0.7 * num(v),
                _ => 1.5 + 0.3 * num(v),
            };
        }
        let get_set = GET_SET.find_iter(code).count();
        if get_set > 0 {
            score += 1.5 + 0.3 * num(get_set);
        }
        let lambdas = code.matches("=>").count();
        if lambdas > 0 {
            score += 6.0 + 0.4 * num(lambdas);
        }
        let attributes = ATTRIBUTE_LINE.find_iter(code).count();
        if attributes > 0 {
            score += 6.0 + 0.8 * num(attributes);
        }
        let generics = GENERIC.find_iter(code).count();
        if generics > 0 {
            score += 4.0 + 0.5 * num(generics);
        }
        let linq = LINQ.find_iter(code).count();
        if linq > 0 {
            score += 3.0 + 0.4 * num(linq);
        }
        let try_catch = TRY_CATCH.find_iter(code).count();
        if try_catch > 0 {
            score += 2.0 + 0.4 * num(try_catch);
        }
        let semis = code.matches(';').count();
        let braces = code.matches(['{', '}']).count();
        if semis >= 3 && braces >= 2 {
            score += 2.5;
        }
        if semis >= 15 {
            score += 3.0;
        }
        // How many of the 13 migration patterns occur (each counts once).
        let migration_hits = MIGRATION.iter().filter(|r| r.is_match(code)).count();
        let migration = migration_hits >= 2;
        if migration {
            score += 6.0 + num(migration_hits);
        }
        let migration_sql = MIGRATION_SQL.is_match(code);
        let mut sql_callsite = migration_sql;
        if migration_sql {
            score += 4.0;
        }
        if SQL_CALLSITE.is_match(code) {
            sql_callsite = true;
            score += 3.5;
        }
        DotnetScore {
            score,
            migration,
            migration_sql,
            sql_callsite,
        }
    }
}

/// The EF Core migration patterns.
static MIGRATION: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"\bMigration\b",
        r"\bMigrationBuilder\b",
        r"\bmigrationBuilder\b",
        r"\bprotected\s+override\s+void\s+Up\s*\(",
        r"\bprotected\s+override\s+void\s+Down\s*\(",
        r"\bCreateTable\s*\(",
        r"\bAlterColumn\s*\(",
        r"\bAddColumn\s*\(",
        r"\bDropTable\s*\(",
        r"\bRenameColumn\s*\(",
        r"\bRenameTable\s*\(",
        r"\bSql\s*\(",
        r"\bModelSnapshot\b",
    ]
    .into_iter()
    .map(re)
    .collect()
});

/// The SQL keywords whose distinct and total occurrences count.
const SQL_WORDS: [&str; 44] = [
    "SELECT",
    "FROM",
    "WHERE",
    "JOIN",
    "LEFT",
    "RIGHT",
    "INNER",
    "OUTER",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "UNION",
    "INSERT",
    "INTO",
    "UPDATE",
    "DELETE",
    "MERGE",
    "CREATE",
    "ALTER",
    "DROP",
    "PROCEDURE",
    "PROC",
    "DECLARE",
    "SET",
    "BEGIN",
    "END",
    "EXEC",
    "EXECUTE",
    "WITH",
    "TOP",
    "DISTINCT",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "AS",
    "RETURNS",
    "TRY",
    "CATCH",
    "THROW",
    "TRAN",
    "COMMIT",
    "ROLLBACK",
];

/// The SQL score of the code (keywords compared in upper case).
fn sql_score(code: &str) -> f64 {
    let mut hits = [0usize; SQL_WORDS.len()];
    let mut upper = String::new();
    // Statement structures: a statement word, then its partner at most so
    // many characters further on. The nearest earlier statement word is the
    // one that can be in reach.
    let mut last = [None::<usize>; 4]; // SELECT, UPDATE, INSERT, DELETE
    let mut structure = [false; 4]; // SELECT…FROM, UPDATE…SET, INSERT…INTO, DELETE…FROM
    let near = |l: Option<usize>, at: usize, gap: usize| l.is_some_and(|e| at - e <= gap);
    for_each_word(code, |w| {
        upper.clear();
        upper.extend(w.text.chars().flat_map(char::to_uppercase));
        let u = upper.as_str();
        if let Some(k) = SQL_WORDS.iter().position(|k| *k == u) {
            hits[k] += 1;
        }
        match u {
            "FROM" => {
                structure[0] |= near(last[0], w.start, 2000);
                structure[3] |= near(last[3], w.start, 120);
            }
            "SET" => structure[1] |= near(last[1], w.start, 2000),
            "INTO" => structure[2] |= near(last[2], w.start, 120),
            _ => {}
        }
        match u {
            "SELECT" => last[0] = Some(w.end),
            "UPDATE" => last[1] = Some(w.end),
            "INSERT" => last[2] = Some(w.end),
            "DELETE" => last[3] = Some(w.end),
            _ => {}
        }
    });
    let distinct = hits.iter().filter(|&&h| h > 0).count();
    let total: usize = hits.iter().sum();
    let mut score = 0.0;
    if distinct > 0 {
        score += 2.2 * num(distinct) + 0.18 * num(total);
    }
    for (re, add) in [
        (&CREATE_TABLE, 12.0),
        (&CREATE_INDEX, 7.0),
        (&CREATE_FUNCTION, 12.0),
        (&CREATE_VIEW, 10.0),
        (&CREATE_TRIGGER, 10.0),
        (&CREATE_PROCEDURE, 12.0),
        (&TSQL_VARIABLE, 9.0),
        (&GO_LINE, 6.0),
        (&NOLOCK, 4.0),
    ] {
        if re.is_match(code) {
            score += add;
        }
    }
    for (hit, add) in structure.iter().zip([10.0, 9.0, 9.0, 9.0]) {
        if *hit {
            score += add;
        }
    }
    if BEGIN_TRY.is_match(code) && BEGIN_TRAN.is_match(code) {
        score += 8.0;
    }
    score
}

/// INI/CFG-looking text: a `[section]` line with a `key = value` line, or
/// three `key = value` lines in under 800 characters.
fn is_config_like(text: &str) -> bool {
    let sections = INI_SECTION.is_match(text);
    let pairs = KEY_VALUE_LINE.find_iter(text).count();
    (sections && pairs >= 1) || (pairs >= 3 && text.chars().count() < 800)
}

/// Phrases that suggest SQL inside a literal (substrings of its lower case).
const LITERAL_PHRASES: [&str; 26] = [
    "select",
    "from",
    "where",
    "join",
    "group by",
    "order by",
    "having",
    "insert into",
    "update",
    "delete from",
    "merge",
    "create table",
    "create procedure",
    "create proc",
    "alter table",
    "drop table",
    "create index",
    "drop index",
    "create view",
    "create trigger",
    "declare",
    "set",
    "exec",
    "execute",
    "with (nolock)",
    "union all",
];

/// SQL functions that suggest SQL inside a literal (whole words).
const LITERAL_FUNCTIONS: [&str; 8] = [
    "isnull",
    "coalesce",
    "datediff",
    "dateadd",
    "getdate",
    "cast",
    "convert",
    "sysutcdatetime",
];

/// Words that cannot start the object after `FROM`, `INTO`, `UPDATE` or `EXEC`.
const NOT_AN_OBJECT: [&str; 14] = [
    "where", "join", "inner", "left", "right", "full", "group", "order", "having", "union",
    "select", "on", "cross", "outer",
];

/// The embedded-SQL score, literal by literal, plus the buffer of C#
/// literals joined for SQL split across several of them.
#[derive(Default)]
struct Embedded {
    score: f64,
    scratch: String,
    /// The C# literals so far, trimmed, joined by one space, white space
    /// collapsed, lower case; no more are added once 4,000 characters are in.
    combined: String,
    combined_parts: usize,
    combined_chars: usize,
}

impl Embedded {
    fn literal(&mut self, quote: Quote, content: &str, multiline: bool) {
        let raw = content.trim();
        if raw.is_empty() {
            return;
        }
        if quote != Quote::Single && self.combined_chars < 4000 {
            if !self.combined.is_empty() {
                self.combined.push(' ');
            }
            collapse_lower(raw, &mut self.combined);
            self.combined_parts += 1;
            self.combined_chars += raw.chars().count();
        }
        self.scratch.clear();
        let len = collapse_lower(raw, &mut self.scratch);
        let low = self.scratch.as_str();
        let evidence = Evidence::of(low);
        let major = evidence.major();
        // Short literals need a statement; longer ones without a statement
        // need four SQL words or two parameters.
        if !major && (len < 60 || (evidence.distinct < 4 && evidence.params < 2)) {
            return;
        }
        let mut local = 2.1 * num(evidence.distinct) + 1.1 * num(evidence.params.min(6));
        for (hit, add) in [
            (evidence.select_from, 9.0),
            (evidence.update_set, 8.0),
            (evidence.insert_into, 8.0),
            (evidence.delete_from, 8.0),
            (evidence.exec, 7.0),
        ] {
            if hit {
                local += add;
            }
        }
        if multiline {
            local += 2.0;
        }
        if quote != Quote::Single {
            local *= 1.07;
        }
        if local >= 7.0 {
            self.score += local;
        }
    }

    /// The boost for SQL split over two or more C# literals, at most 22.
    fn combined_boost(&self) -> f64 {
        if self.combined_parts < 2 {
            return 0.0;
        }
        let evidence = Evidence::of(&self.combined);
        if !evidence.major() {
            return 0.0;
        }
        (1.6 * num(evidence.distinct) + num(evidence.params.min(6)) + 10.0).min(22.0)
    }
}

/// Appends `text` with every run of white space made one space, in lower
/// case; returns the number of characters before lower-casing.
fn collapse_lower(text: &str, out: &mut String) -> usize {
    let mut count = 0;
    let mut blank = false;
    for c in text.chars() {
        if c.is_whitespace() {
            blank = true;
            continue;
        }
        if blank {
            out.push(' ');
            count += 1;
            blank = false;
        }
        out.extend(c.to_lowercase());
        count += 1;
    }
    count
}

/// What a literal (collapsed, lower case) shows of SQL.
#[derive(Default)]
struct Evidence {
    /// Distinct phrases and functions.
    distinct: usize,
    /// `@name` parameters.
    params: usize,
    select_from: bool,
    update_set: bool,
    insert_into: bool,
    delete_from: bool,
    exec: bool,
}

impl Evidence {
    fn of(low: &str) -> Self {
        let phrases = LITERAL_PHRASES.iter().filter(|p| low.contains(*p)).count();
        let mut functions = [false; LITERAL_FUNCTIONS.len()];
        let mut select_from = Clause::new("select", "from", 2000);
        let mut insert_into = Clause::new("insert", "into", 120);
        let mut delete_from = Clause::new("delete", "from", 120);
        let mut update_set = UpdateSet::default();
        for_each_word(low, |w| {
            if let Some(k) = LITERAL_FUNCTIONS.iter().position(|k| *k == w.text) {
                functions[k] = true;
            }
            select_from.word(w, low);
            insert_into.word(w, low);
            delete_from.word(w, low);
            update_set.word(w, low);
        });
        Evidence {
            distinct: phrases + functions.iter().filter(|&&x| x).count(),
            params: parameters(low),
            select_from: select_from.holds(low),
            update_set: update_set.holds(low),
            insert_into: insert_into.holds(low),
            delete_from: delete_from.holds(low),
            exec: exec_object(low),
        }
    }

    fn major(&self) -> bool {
        self.select_from || self.update_set || self.insert_into || self.delete_from || self.exec
    }
}

/// `@` followed by a word, counted without overlap.
fn parameters(low: &str) -> usize {
    let mut count = 0;
    let mut chars = low.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '@' && chars.peek().is_some_and(|&n| is_word_char(n)) {
            count += 1;
            while chars.peek().is_some_and(|&n| is_word_char(n)) {
                chars.next();
            }
        }
    }
    count
}

/// Whether the word at byte `end` is followed by a blank and one more character.
fn blank_then_more(low: &str, end: usize) -> bool {
    low.as_bytes().get(end) == Some(&b' ') && end + 1 < low.len()
}

/// Whether `s` starts with an object name: `[`, `#` (if `hash`), a letter or
/// `_`, and not a clause word such as `where` or `join`.
fn object_start(s: &str, hash: bool) -> bool {
    let s = s.trim_start();
    let lead = s.split(|c: char| !is_word_char(c)).next().unwrap_or("");
    if NOT_AN_OBJECT.contains(&lead) {
        return false;
    }
    match s.chars().next() {
        Some('[') => true,
        Some('#') => hash,
        Some(c) => c.is_ascii_alphabetic() || c == '_',
        None => false,
    }
}

/// `first … second <object>`: the leftmost `first` with a `second` at most
/// `gap` characters after it (followed by a blank); of those, the last
/// `second` in reach decides, by what follows it.
struct Clause {
    first: &'static str,
    second: &'static str,
    gap: usize,
    /// Ends of the `first` words still in reach (at most `gap` characters back).
    window: VecDeque<usize>,
    anchor: Option<usize>,
    /// Byte index of what follows the chosen `second` and its blank.
    tail: Option<usize>,
}

impl Clause {
    fn new(first: &'static str, second: &'static str, gap: usize) -> Self {
        Self {
            first,
            second,
            gap,
            window: VecDeque::new(),
            anchor: None,
            tail: None,
        }
    }

    fn word(&mut self, w: &Word<'_>, low: &str) {
        if let Some(a) = self.anchor {
            if w.start <= a + self.gap && w.text == self.second && blank_then_more(low, w.end_byte)
            {
                self.tail = Some(w.end_byte + 1);
            }
            return;
        }
        if w.text == self.second && blank_then_more(low, w.end_byte) {
            while self.window.front().is_some_and(|&s| w.start - s > self.gap) {
                self.window.pop_front();
            }
            if let Some(&s) = self.window.front() {
                self.anchor = Some(s);
                self.tail = Some(w.end_byte + 1);
                return;
            }
        }
        if w.text == self.first {
            while self.window.front().is_some_and(|&s| w.end - s > self.gap) {
                self.window.pop_front();
            }
            self.window.push_back(w.end);
        }
    }

    fn holds(&self, low: &str) -> bool {
        self.tail
            .and_then(|t| low.get(t..))
            .is_some_and(|tail| object_start(tail, true))
    }
}

/// `update <object> set`: the leftmost `update` (followed by a blank) with a
/// `set` 1 to 80 characters after that blank; the object is what follows it.
#[derive(Default)]
struct UpdateSet {
    /// (character index, byte index) just past each `update` and its blank.
    window: VecDeque<(usize, usize)>,
    head: Option<usize>,
}

impl UpdateSet {
    fn word(&mut self, w: &Word<'_>, low: &str) {
        if self.head.is_some() {
            return;
        }
        if w.text == "set" {
            while self
                .window
                .front()
                .is_some_and(|&(c, _)| w.start.saturating_sub(c) > 80)
            {
                self.window.pop_front();
            }
            if let Some(&(c, b)) = self.window.front()
                && w.start - c >= 1
            {
                self.head = Some(b);
                return;
            }
        }
        if w.text == "update" && blank_then_more(low, w.end_byte) {
            self.window.push_back((w.end + 1, w.end_byte + 1));
        }
    }

    fn holds(&self, low: &str) -> bool {
        self.head
            .and_then(|h| low.get(h..))
            .is_some_and(|head| object_start(head, true))
    }
}

/// The literal starts with `exec` or `execute`, a blank and an object name.
fn exec_object(low: &str) -> bool {
    let lead = low.split(|c: char| !is_word_char(c)).next().unwrap_or("");
    if lead != "exec" && lead != "execute" {
        return false;
    }
    blank_then_more(low, lead.len()) && object_start(&low[lead.len() + 1..], false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex_all(t: &str) -> (String, Vec<(Quote, String, bool)>) {
        let mut lits = Vec::new();
        let code = lex(t, |q, c, m| lits.push((q, c.to_string(), m)));
        (code, lits)
    }

    #[test]
    fn every_pattern_compiles() {
        for r in [
            &USING_LINE,
            &NAMESPACE_LINE,
            &GET_SET,
            &ATTRIBUTE_LINE,
            &GENERIC,
            &LINQ,
            &TRY_CATCH,
            &MIGRATION_SQL,
            &SQL_CALLSITE,
            &CREATE_TABLE,
            &CREATE_INDEX,
            &CREATE_FUNCTION,
            &CREATE_VIEW,
            &CREATE_TRIGGER,
            &CREATE_PROCEDURE,
            &TSQL_VARIABLE,
            &GO_LINE,
            &NOLOCK,
            &BEGIN_TRY,
            &BEGIN_TRAN,
            &INI_SECTION,
            &KEY_VALUE_LINE,
        ] {
            assert!(!r.as_str().is_empty());
        }
        assert_eq!(MIGRATION.len(), 13);
    }

    #[test]
    fn lexer_sets_literals_aside_and_drops_comments() {
        let (code, lits) =
            lex_all("a -- c\nb 'x ''y' \"z\\\"\" /* w\n */ c @\"v\"\"w\" $\"\"\"r\"\"\"");
        assert_eq!(code, "a \nb __STR__ __STR__  c __STR__ __STR__");
        assert_eq!(
            lits,
            [
                (Quote::Single, "x 'y".to_string(), false),
                (Quote::Double, "z\\\"".to_string(), false),
                (Quote::Double, "v\"w".to_string(), true),
                (Quote::Triple, "r".to_string(), true),
            ]
        );
        // An unclosed literal is dropped with everything after it.
        assert_eq!(lex_all("x = 'abc").0, "x = ");
    }

    #[test]
    fn identifier_words_are_ascii_runs() {
        // "a1", "_b", "c" (the "2" before it does not start a word); "é" is not ASCII.
        assert_eq!(identifier_words("a1 _b 2c é"), 3);
    }

    #[test]
    fn clauses_need_an_object() {
        let e = Evidence::of("select id from users where x = @a and y = @b");
        assert!(e.select_from);
        assert_eq!(e.params, 2);
        // select, from, where: 3 phrases; no function.
        assert_eq!(e.distinct, 3);
        assert!(!Evidence::of("select from where").select_from);
        assert!(!Evidence::of("select a from where b").select_from);
        assert!(Evidence::of("update dbo.t set a = 1").update_set);
        assert!(!Evidence::of("update set a = 1").update_set);
        assert!(!Evidence::of("update where set").update_set);
        assert!(Evidence::of("insert into #tmp values (1)").insert_into);
        assert!(Evidence::of("delete from [orders] where id = 1").delete_from);
        assert!(Evidence::of("exec dbo.usp_x 1").exec);
        assert!(!Evidence::of("exec #x").exec);
        assert!(!Evidence::of("please exec dbo.usp_x").exec);
        // The last FROM in reach decides: here the second one, followed by `where`.
        assert!(!Evidence::of("select a from t, b from where").select_from);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Scores are finite and never negative, the answer is stable, and
        /// the language follows the kind.
        #[test]
        fn scores_are_finite_and_stable(words in proptest::collection::vec(
            proptest::sample::select(vec![
                "SELECT", "select", "FROM", "from", "INSERT", "INTO", "UPDATE", "SET", "DELETE",
                "CREATE", "TABLE", "PROCEDURE", "DECLARE", "@x", "GO\n", "using System;\n",
                "namespace A;", "public", "class", "record", "{", "}", "=>", ";", "[Attr]\n",
                "Task<int>", ".Select(", "try {", "migrationBuilder.Sql(", "\"SELECT a FROM b\"",
                "@\"UPDATE t SET a = 1\"", "'x'", "-- c\n", "/* c */", "a = b\n", "[s]\n", "é",
                "ſelect", "\n", " ",
            ]),
            0..60,
        )) {
            let text = words.join(" ");
            let s = BuiltinClassifier.scores(&text);
            proptest::prop_assert!(s.dotnet.is_finite() && s.dotnet >= 0.0);
            proptest::prop_assert!(s.sql.is_finite() && s.sql >= 0.0);
            proptest::prop_assert!(s.embedded_sql.is_finite() && s.embedded_sql >= 0.0);
            proptest::prop_assert_eq!(s, BuiltinClassifier.scores(&text));
            proptest::prop_assert_eq!(BuiltinClassifier.classify(&text), s.kind.language());
        }
    }
}
