//! `expect_error = "<kind>"`: which [`CupelError`] a vector's name means.

use cupel_core::CupelError;
use toml::{Table, Value};

use crate::toml_util::normalise;

/// What a vector's `[expected] expect_error` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpectedError {
    /// A specific failure; the string is the vector's spelling.
    Named(String),
    /// Any error: `expect_error = true`, or a name this runner does not know.
    Any(String),
}

impl ExpectedError {
    /// Reads `expect_error` from an `[expected]` table (`None` when absent or `false`).
    pub(crate) fn from_expected(expected: Option<&Table>) -> Result<Option<Self>, String> {
        let Some(value) = expected.and_then(|t| t.get("expect_error")) else {
            return Ok(None);
        };
        match value {
            Value::String(name) if known(name) => Ok(Some(ExpectedError::Named(name.clone()))),
            Value::String(name) => Ok(Some(ExpectedError::Any(name.clone()))),
            Value::Boolean(true) => Ok(Some(ExpectedError::Any("true".into()))),
            Value::Boolean(false) => Ok(None),
            other => Err(format!(
                "[expected]: `expect_error` must be a string or a boolean, found {}",
                other.type_str()
            )),
        }
    }

    /// Whether `err` is the failure this expectation names.
    pub(crate) fn matches(&self, err: &CupelError) -> bool {
        match self {
            ExpectedError::Any(_) => true,
            ExpectedError::Named(name) => error_matches(name, err).unwrap_or(true),
        }
    }

    /// The vector's spelling, for messages.
    pub(crate) fn name(&self) -> &str {
        match self {
            ExpectedError::Named(n) | ExpectedError::Any(n) => n,
        }
    }
}

fn known(name: &str) -> bool {
    error_matches(name, &CupelError::EmptyContent).is_some()
}

/// `Some(true/false)` for a known error name, `None` for an unknown one.
///
/// Names compare ignoring case, `_` and `-`:
///
/// | vector name | [`CupelError`] variant |
/// | --- | --- |
/// | `pinned_budget_exceeded` | `PinnedBudgetExceeded` |
/// | `budget_overflow`, `overflow` | `BudgetOverflow` |
/// | `count_requirement_not_met`, `scarcity` | `CountRequirementNotMet` |
/// | `table_too_large` | `TableTooLarge` |
/// | `token_overflow` | `TokenOverflow` |
pub(crate) fn error_matches(name: &str, err: &CupelError) -> Option<bool> {
    let is = match normalise(name).as_str() {
        "pinnedbudgetexceeded" => matches!(err, CupelError::PinnedBudgetExceeded { .. }),
        "budgetoverflow" | "overflow" => matches!(err, CupelError::BudgetOverflow { .. }),
        "countrequirementnotmet" | "scarcity" => {
            matches!(err, CupelError::CountRequirementNotMet { .. })
        }
        "tabletoolarge" => matches!(err, CupelError::TableTooLarge { .. }),
        "tokenoverflow" => matches!(err, CupelError::TokenOverflow { .. }),
        _ => return None,
    };
    Some(is)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overflow() -> CupelError {
        CupelError::BudgetOverflow {
            selected_tokens: 10,
            target_tokens: 5,
        }
    }

    #[test]
    fn names_map_case_and_separator_insensitively() {
        let pinned = CupelError::PinnedBudgetExceeded {
            pinned_tokens: 10,
            available_tokens: 5,
        };
        for n in [
            "pinned_budget_exceeded",
            "PinnedBudgetExceeded",
            "pinned-budget-exceeded",
        ] {
            assert_eq!(error_matches(n, &pinned), Some(true), "{n}");
            assert_eq!(error_matches(n, &overflow()), Some(false), "{n}");
        }
        for n in ["budget_overflow", "overflow", "BudgetOverflow"] {
            assert_eq!(error_matches(n, &overflow()), Some(true), "{n}");
        }
        let scarce = CupelError::CountRequirementNotMet {
            slicer: "CountQuotaSlice",
            kind: "Memory".into(),
            satisfied: 1,
            required: 2,
        };
        for n in [
            "count_requirement_not_met",
            "scarcity",
            "CountRequirementNotMet",
        ] {
            assert_eq!(error_matches(n, &scarce), Some(true), "{n}");
        }
        let table = CupelError::TableTooLarge {
            candidates: 1,
            capacity: 2,
            cells: 2,
            keep_bytes: 8,
            // Two rows of 2 buckets at 4 bytes.
            row_bytes: 16,
            limit: cupel_core::TableLimit::Cells(1),
        };
        assert_eq!(error_matches("table_too_large", &table), Some(true));
        let tokens = CupelError::TokenOverflow {
            sign: cupel_core::TokenSign::Positive,
            total: i128::from(i64::MAX) + 1,
        };
        assert_eq!(error_matches("token_overflow", &tokens), Some(true));
        assert_eq!(error_matches("something_new", &tokens), None);
    }

    #[test]
    fn unknown_names_and_true_accept_any_error() {
        let t: Table = "expect_error = \"brand_new_failure\"".parse().unwrap();
        let e = ExpectedError::from_expected(Some(&t)).unwrap().unwrap();
        assert_eq!(e, ExpectedError::Any("brand_new_failure".into()));
        assert!(e.matches(&overflow()));

        let t: Table = "expect_error = true".parse().unwrap();
        let e = ExpectedError::from_expected(Some(&t)).unwrap().unwrap();
        assert!(e.matches(&overflow()));

        let t: Table = "expect_error = false".parse().unwrap();
        assert_eq!(ExpectedError::from_expected(Some(&t)).unwrap(), None);
        assert_eq!(ExpectedError::from_expected(None).unwrap(), None);

        let t: Table = "expect_error = \"pinned_budget_exceeded\"".parse().unwrap();
        let e = ExpectedError::from_expected(Some(&t)).unwrap().unwrap();
        assert!(!e.matches(&overflow()));
        assert_eq!(e.name(), "pinned_budget_exceeded");

        let t: Table = "expect_error = 3".parse().unwrap();
        assert!(ExpectedError::from_expected(Some(&t)).is_err());
    }
}
