//! [`CliError`]: one message, an optional hint, and the exit code.

use std::fmt;

use cupel_core::CupelError;

/// Exit code for usage and input errors: bad flags, unreadable or malformed
/// files, invalid budgets, unknown presets, policy keys or encodings, token
/// counts that cannot be summed in 64 bits.
pub(crate) const EXIT_INPUT: u8 = 2;

/// Exit code for a selection that could not be made from valid input: pinned
/// items over the budget, an overflow under `throw`, a knapsack table over its
/// guard, an unmet count requirement under `scarcity_behavior = "throw"`.
pub(crate) const EXIT_SELECTION: u8 = 1;

/// An error the CLI reports on stderr as `error: <message>` (+ `hint: <hint>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    /// The one-line message (no `error:` prefix).
    pub(crate) message: String,
    /// What to try next, when there is something useful to say.
    pub(crate) hint: Option<String>,
    /// The process exit code.
    pub(crate) code: u8,
    /// What the command produced before it failed (a report that names
    /// the failures), written to stdout before the error line goes to
    /// stderr: `cupel cache-sim` prints its table even when some requests
    /// could not be windowed.
    pub(crate) output: Option<String>,
}

impl CliError {
    /// A usage or input error (exit code 2).
    pub(crate) fn input(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            code: EXIT_INPUT,
            output: None,
        }
    }

    /// A selection failure (exit code 1).
    pub(crate) fn selection(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            code: EXIT_SELECTION,
            output: None,
        }
    }

    /// Adds a hint line.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds the output printed (on stdout) before the error.
    #[cfg_attr(not(feature = "chat"), allow(dead_code))]
    pub(crate) fn with_output(mut self, output: impl Into<String>) -> Self {
        self.output = Some(output.into());
        self
    }

    /// Maps an error returned by a pipeline run, with a hint for the common ones.
    ///
    /// Token counts whose sum does not fit an `i64` are an input error (exit
    /// code 2); every other run error is a selection failure (exit code 1).
    pub(crate) fn from_run(err: &CupelError) -> Self {
        if let CupelError::TokenOverflow { .. } = err {
            return Self::input(err.to_string())
                .hint("check the items' `tokens`: their sum must fit in a signed 64-bit integer");
        }
        let e = Self::selection(err.to_string());
        match err {
            CupelError::PinnedBudgetExceeded { .. } => e.hint(
                "pinned items must fit max_tokens - output_reserve: unpin some items, \
                 raise --max-tokens or lower --output-reserve",
            ),
            CupelError::BudgetOverflow { .. } => e.hint(
                "pinned plus selected items exceed target_tokens: raise --target-tokens, \
                 pin less, or set overflow_strategy = \"truncate\" or \"proceed\" in the policy",
            ),
            CupelError::TableTooLarge { .. } => e.hint(
                "raise the knapsack `bucket_size` (or `max_table_bytes`) in the policy, \
                 lower --target-tokens, or use the greedy slicer",
            ),
            CupelError::CountRequirementNotMet { .. } => e.hint(
                "add candidates of that kind, lower `require_count`, \
                 or set scarcity_behavior = \"degrade\"",
            ),
            _ => e,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\nhint: {h}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_one_error_line_plus_optional_hint() {
        let e = CliError::input("bad thing");
        assert_eq!(e.to_string(), "error: bad thing");
        assert_eq!(e.code, 2);
        let e = CliError::selection("no room").hint("make room");
        assert_eq!(e.to_string(), "error: no room\nhint: make room");
        assert_eq!(e.code, 1);
    }

    #[test]
    fn run_errors_are_selection_failures_with_hints() {
        let e = CliError::from_run(&CupelError::BudgetOverflow {
            selected_tokens: 400,
            target_tokens: 300,
        });
        assert_eq!(e.code, EXIT_SELECTION);
        assert!(e.hint.as_deref().unwrap_or("").contains("truncate"));
    }

    #[test]
    fn token_overflow_is_an_input_error() {
        let e = CliError::from_run(&CupelError::TokenOverflow {
            sign: cupel_core::TokenSign::Positive,
            total: i128::from(i64::MAX) + 1,
        });
        assert_eq!(e.code, EXIT_INPUT);
        assert!(e.message.contains("9223372036854775808"), "{}", e.message);
    }
}
