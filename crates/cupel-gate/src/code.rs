//! The context gate's injected services: [`LanguageClassifier`] and [`Compactor`].
//!
//! The gate ([`ContextGate`](crate::ContextGate)) compacts retrieved code
//! before it admits it into a context window. Which language a text is in,
//! and how a text of that language is compacted, are behind these two narrow
//! traits so callers can plug in their own; the built-ins
//! ([`BuiltinClassifier`](crate::BuiltinClassifier),
//! [`BuiltinCompactor`](crate::BuiltinCompactor)) live in this crate too.

use std::fmt;
use std::sync::Arc;

/// The languages the context gate tells apart.
///
/// Only [`Sql`](CodeLanguage::Sql) and [`Dotnet`](CodeLanguage::Dotnet) can
/// carry a compaction rule; [`Unknown`](CodeLanguage::Unknown) never matches
/// one. On the wire the names are `sql`, `dotnet` and `unknown`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum CodeLanguage {
    /// SQL: ANSI queries, T-SQL scripts and procedures, other dialects.
    Sql,
    /// C#/.NET source, with or without SQL embedded in its strings.
    Dotnet,
    /// Anything else: other languages, prose, data.
    Unknown,
}

impl CodeLanguage {
    /// The wire name: `sql`, `dotnet` or `unknown`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CodeLanguage::Sql => "sql",
            CodeLanguage::Dotnet => "dotnet",
            CodeLanguage::Unknown => "unknown",
        }
    }

    /// Parses a wire name (exact, lowercase), `None` for anything else.
    ///
    /// ```
    /// use cupel_gate::CodeLanguage;
    /// assert_eq!(CodeLanguage::from_name("dotnet"), Some(CodeLanguage::Dotnet));
    /// assert_eq!(CodeLanguage::from_name("python"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "sql" => Some(CodeLanguage::Sql),
            "dotnet" => Some(CodeLanguage::Dotnet),
            "unknown" => Some(CodeLanguage::Unknown),
            _ => None,
        }
    }
}

impl fmt::Display for CodeLanguage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl CodeLanguage {
    /// The language a file name decides on its own, by its extension
    /// (case-insensitive): `.sql` is [`Sql`](CodeLanguage::Sql), `.cs` and
    /// `.csproj` are [`Dotnet`](CodeLanguage::Dotnet); any other extension,
    /// or none, decides nothing (`None`) and the text must be read.
    ///
    /// ```
    /// use cupel_gate::CodeLanguage;
    /// assert_eq!(CodeLanguage::from_path("db/Reports.SQL"), Some(CodeLanguage::Sql));
    /// assert_eq!(CodeLanguage::from_path(r"src\Shop\Order.cs"), Some(CodeLanguage::Dotnet));
    /// assert_eq!(CodeLanguage::from_path("Shop.csproj"), Some(CodeLanguage::Dotnet));
    /// assert_eq!(CodeLanguage::from_path("notes.md"), None);
    /// assert_eq!(CodeLanguage::from_path("Makefile"), None);
    /// ```
    pub fn from_path(path: &str) -> Option<Self> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let (_, ext) = name.rsplit_once('.')?;
        if ext.eq_ignore_ascii_case("sql") {
            Some(CodeLanguage::Sql)
        } else if ext.eq_ignore_ascii_case("cs") || ext.eq_ignore_ascii_case("csproj") {
            Some(CodeLanguage::Dotnet)
        } else {
            None
        }
    }
}

/// What a [`LanguageClassifier`] may look at for one retrieved node: its
/// text, and the id and path it came with.
///
/// `path` is the node's best-effort location (its path, else its source, as
/// the gate prints it in the block header).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CodeNode<'a> {
    /// The node's text.
    pub text: &'a str,
    /// The node's id, if any.
    pub id: Option<&'a str>,
    /// The node's path (or source), if any.
    pub path: Option<&'a str>,
}

impl<'a> CodeNode<'a> {
    /// A node with `text` only.
    pub fn new(text: &'a str) -> Self {
        Self {
            text,
            id: None,
            path: None,
        }
    }

    /// Sets the id.
    #[must_use]
    pub fn with_id(mut self, id: Option<&'a str>) -> Self {
        self.id = id;
        self
    }

    /// Sets the path.
    #[must_use]
    pub fn with_path(mut self, path: Option<&'a str>) -> Self {
        self.path = path;
        self
    }
}

/// Decides which [`CodeLanguage`] a text is written in.
///
/// One required method, [`classify`](Self::classify), on the text alone.
/// The gate calls the provided [`classify_node`](Self::classify_node), which
/// sees the whole node (its path too); by default it asks `classify` about
/// the text. Override `classify_node` to use the path or the id.
///
/// Implementations must be deterministic (the same input always gets the
/// same answer) and must not panic on any input.
pub trait LanguageClassifier: Send + Sync {
    /// The language of `text`; [`CodeLanguage::Unknown`] when unsure.
    fn classify(&self, text: &str) -> CodeLanguage;

    /// The language of a whole node. By default: `classify(node.text)`.
    ///
    /// ```
    /// use cupel_gate::{CodeLanguage, CodeNode, LanguageClassifier};
    /// /// Trusts the file extension, and says "unknown" otherwise.
    /// struct ByPath;
    /// impl LanguageClassifier for ByPath {
    ///     fn classify(&self, _text: &str) -> CodeLanguage {
    ///         CodeLanguage::Unknown
    ///     }
    ///     fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
    ///         node.path.and_then(CodeLanguage::from_path).unwrap_or(CodeLanguage::Unknown)
    ///     }
    /// }
    /// let node = CodeNode::new("x").with_path(Some("q/report.sql"));
    /// assert_eq!(ByPath.classify_node(node), CodeLanguage::Sql);
    /// ```
    fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
        self.classify(node.text)
    }
}

impl<T: LanguageClassifier + ?Sized> LanguageClassifier for &T {
    fn classify(&self, text: &str) -> CodeLanguage {
        (**self).classify(text)
    }
    fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
        (**self).classify_node(node)
    }
}
impl<T: LanguageClassifier + ?Sized> LanguageClassifier for Box<T> {
    fn classify(&self, text: &str) -> CodeLanguage {
        (**self).classify(text)
    }
    fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
        (**self).classify_node(node)
    }
}
impl<T: LanguageClassifier + ?Sized> LanguageClassifier for Arc<T> {
    fn classify(&self, text: &str) -> CodeLanguage {
        (**self).classify(text)
    }
    fn classify_node(&self, node: CodeNode<'_>) -> CodeLanguage {
        (**self).classify_node(node)
    }
}

/// Shrinks source text without changing what it means.
///
/// One required method. A compactor removes what a reader (or a model) does
/// not need — comments, indentation, blank lines, runs of spaces — and must
/// leave every string literal and every token that carries meaning as it was.
/// It must be idempotent (compacting compacted text changes nothing) and must
/// not panic on any input, including malformed source.
pub trait Compactor: Send + Sync {
    /// The compacted form of `text`, which is written in `language`.
    ///
    /// For a language the compactor does not handle it returns `text` unchanged.
    fn compact(&self, language: CodeLanguage, text: &str) -> String;
}

impl<T: Compactor + ?Sized> Compactor for &T {
    fn compact(&self, language: CodeLanguage, text: &str) -> String {
        (**self).compact(language, text)
    }
}
impl<T: Compactor + ?Sized> Compactor for Box<T> {
    fn compact(&self, language: CodeLanguage, text: &str) -> String {
        (**self).compact(language, text)
    }
}
impl<T: Compactor + ?Sized> Compactor for Arc<T> {
    fn compact(&self, language: CodeLanguage, text: &str) -> String {
        (**self).compact(language, text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;
    impl LanguageClassifier for Fixed {
        fn classify(&self, _text: &str) -> CodeLanguage {
            CodeLanguage::Sql
        }
    }
    struct Upper;
    impl Compactor for Upper {
        fn compact(&self, _language: CodeLanguage, text: &str) -> String {
            text.to_uppercase()
        }
    }

    fn classify_via<T: LanguageClassifier>(t: T) -> CodeLanguage {
        t.classify("x")
    }
    fn compact_via<T: Compactor>(t: T) -> String {
        t.compact(CodeLanguage::Sql, "ab")
    }

    #[test]
    fn pointers_forward() {
        let b: Box<dyn LanguageClassifier> = Box::new(Fixed);
        assert_eq!(classify_via(&b), CodeLanguage::Sql);
        assert_eq!(classify_via(b), CodeLanguage::Sql);
        let a: Arc<dyn LanguageClassifier> = Arc::new(Fixed);
        assert_eq!(classify_via(a), CodeLanguage::Sql);
        let c: Arc<dyn Compactor> = Arc::new(Upper);
        assert_eq!(compact_via(&c), "AB");
        assert_eq!(compact_via(c), "AB");
        assert_eq!(compact_via(Box::new(Upper)), "AB");
    }

    #[test]
    fn names_round_trip() {
        for l in [
            CodeLanguage::Sql,
            CodeLanguage::Dotnet,
            CodeLanguage::Unknown,
        ] {
            assert_eq!(CodeLanguage::from_name(l.as_str()), Some(l));
            assert_eq!(l.to_string(), l.as_str());
        }
        assert_eq!(CodeLanguage::from_name("SQL"), None);
    }
}
