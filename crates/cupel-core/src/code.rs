//! The context gate's injected services: [`LanguageClassifier`] and [`Compactor`].
//!
//! The gate (in `cupel-pipeline`) compacts retrieved code before it admits it
//! into a context window. Which language a text is in, and how a text of that
//! language is compacted, are behind these two narrow traits so callers can
//! plug in their own; the built-in implementations live next to the gate.

use std::fmt;
use std::sync::Arc;

/// The languages the context gate tells apart.
///
/// Only [`Sql`](CodeLanguage::Sql) and [`Dotnet`](CodeLanguage::Dotnet) can
/// carry a compaction rule; [`Unknown`](CodeLanguage::Unknown) never matches
/// one. On the wire the names are `sql`, `dotnet` and `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
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
    /// use cupel_core::CodeLanguage;
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

/// Decides which [`CodeLanguage`] a text is written in.
///
/// One required method. Implementations must be deterministic (the same text
/// always gets the same answer) and must not panic on any input.
pub trait LanguageClassifier: Send + Sync {
    /// The language of `text`; [`CodeLanguage::Unknown`] when unsure.
    fn classify(&self, text: &str) -> CodeLanguage;
}

impl<T: LanguageClassifier + ?Sized> LanguageClassifier for &T {
    fn classify(&self, text: &str) -> CodeLanguage {
        (**self).classify(text)
    }
}
impl<T: LanguageClassifier + ?Sized> LanguageClassifier for Box<T> {
    fn classify(&self, text: &str) -> CodeLanguage {
        (**self).classify(text)
    }
}
impl<T: LanguageClassifier + ?Sized> LanguageClassifier for Arc<T> {
    fn classify(&self, text: &str) -> CodeLanguage {
        (**self).classify(text)
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
