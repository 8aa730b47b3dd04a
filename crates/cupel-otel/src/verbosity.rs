//! [`CupelVerbosity`]: how much of a run becomes telemetry.

use std::fmt;

/// How much of a pipeline run the OpenTelemetry bridge records.
///
/// Each tier records everything the tiers before it record. The order of the
/// variants is the order of detail, so tiers compare with `<` / `>=`.
///
/// | tier | records | for |
/// | --- | --- | --- |
/// | [`StageOnly`](Self::StageOnly) | the root span and five stage spans with item counts | production |
/// | [`StageAndExclusions`](Self::StageAndExclusions) | plus one `cupel.exclusion` event per excluded item and `cupel.exclusion.count` on the stage span that excluded it | staging |
/// | [`Full`](Self::Full) | plus one `cupel.item.included` event per item of the window, on the `cupel.stage.place` span | development |
///
/// ```
/// use cupel_otel::CupelVerbosity;
/// assert!(CupelVerbosity::Full > CupelVerbosity::StageAndExclusions);
/// assert_eq!(CupelVerbosity::default(), CupelVerbosity::StageOnly);
/// assert_eq!(CupelVerbosity::StageAndExclusions.name(), "StageAndExclusions");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum CupelVerbosity {
    /// Root and stage spans with counts only: about six spans per run.
    #[default]
    StageOnly,
    /// Adds one event per excluded item, on the span of the stage that excluded it.
    StageAndExclusions,
    /// Adds one event per included item, on the Place span. High cardinality:
    /// do not enable in production without sampling.
    Full,
}

impl CupelVerbosity {
    /// The three tiers, least detailed first.
    pub const ALL: [CupelVerbosity; 3] = [
        CupelVerbosity::StageOnly,
        CupelVerbosity::StageAndExclusions,
        CupelVerbosity::Full,
    ];

    /// The tier's name as recorded in the `cupel.verbosity` attribute
    /// (`"StageOnly"`, `"StageAndExclusions"` or `"Full"`).
    pub fn name(self) -> &'static str {
        match self {
            CupelVerbosity::StageOnly => "StageOnly",
            CupelVerbosity::StageAndExclusions => "StageAndExclusions",
            CupelVerbosity::Full => "Full",
        }
    }

    /// Whether this tier records exclusion events.
    pub fn records_exclusions(self) -> bool {
        self >= CupelVerbosity::StageAndExclusions
    }

    /// Whether this tier records included-item events.
    pub fn records_inclusions(self) -> bool {
        self >= CupelVerbosity::Full
    }
}

impl fmt::Display for CupelVerbosity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_ordered_and_named() {
        let names: Vec<&str> = CupelVerbosity::ALL.iter().map(|v| v.name()).collect();
        assert_eq!(names, ["StageOnly", "StageAndExclusions", "Full"]);
        assert!(!CupelVerbosity::StageOnly.records_exclusions());
        assert!(CupelVerbosity::StageAndExclusions.records_exclusions());
        assert!(!CupelVerbosity::StageAndExclusions.records_inclusions());
        assert!(CupelVerbosity::Full.records_exclusions());
        assert!(CupelVerbosity::Full.records_inclusions());
        assert_eq!(CupelVerbosity::Full.to_string(), "Full");
    }
}
