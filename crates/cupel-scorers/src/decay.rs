//! [`DecayScorer`]: absolute time decay against an injected clock, and its
//! [`DecayCurve`]s.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use cupel_core::{ContextItem, CupelError, Scorer, TimeProvider};

/// One step of a [`DecayCurve::Step`]: items younger than `max_age` (and not
/// younger than the previous step's `max_age`) score `score`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepWindow {
    /// Exclusive upper age bound of the window; must be `> 0`.
    pub max_age: Duration,
    /// Score for ages in the window; must be within `[0, 1]`.
    pub score: f64,
}

impl StepWindow {
    /// A window ending (exclusively) at `max_age`.
    pub fn new(max_age: Duration, score: f64) -> Self {
        Self { max_age, score }
    }
}

impl From<(Duration, f64)> for StepWindow {
    fn from((max_age, score): (Duration, f64)) -> Self {
        Self { max_age, score }
    }
}

/// How a [`DecayScorer`] turns an item's age into a score in `[0, 1]`.
///
/// Durations are [`std::time::Duration`]s (nanosecond resolution, so
/// fractional seconds are exact to the nanosecond; never negative). Build
/// curves with the checked factories ([`exponential`](Self::exponential),
/// [`step`](Self::step), [`window`](Self::window), or their `*_secs`
/// variants) to get errors early; [`DecayScorer::new`] validates again, so an
/// invalid curve built from the variants directly can never score.
#[derive(Debug, Clone, PartialEq)]
pub enum DecayCurve {
    /// `2^(-age / half_life)`: 1.0 at age 0, 0.5 at one half-life, tending to 0.
    Exponential {
        /// Must be `> 0`.
        half_life: Duration,
    },
    /// The score of the first window whose `max_age` is strictly greater than
    /// the age; ages at or beyond the last boundary get the last window's score.
    Step {
        /// Youngest first: at least one, every `max_age > 0`, strictly increasing.
        windows: Vec<StepWindow>,
    },
    /// 1.0 for ages in `[0, max_age)`, 0.0 from `max_age` on.
    Window {
        /// Must be `> 0`.
        max_age: Duration,
    },
}

fn config_error(message: String) -> CupelError {
    CupelError::ScorerConfig(format!("DecayScorer: {message}"))
}

fn secs_to_duration(name: &str, secs: f64) -> Result<Duration, CupelError> {
    if secs.is_nan() || secs <= 0.0 {
        return Err(config_error(format!(
            "{name} must be greater than zero (got {secs} s)"
        )));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| {
        config_error(format!(
            "{name} is not a representable duration (got {secs} s)"
        ))
    })
}

impl DecayCurve {
    /// A checked [`DecayCurve::Exponential`].
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming `half_life` when it is zero.
    pub fn exponential(half_life: Duration) -> Result<Self, CupelError> {
        let curve = Self::Exponential { half_life };
        curve.validate()?;
        Ok(curve)
    }

    /// [`exponential`](Self::exponential) with the half-life in (fractional) seconds.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming `half_life` when it is not a finite
    /// number `> 0` of seconds.
    pub fn exponential_secs(half_life: f64) -> Result<Self, CupelError> {
        Self::exponential(secs_to_duration("half_life", half_life)?)
    }

    /// A checked [`DecayCurve::Step`] from windows listed youngest first
    /// (`StepWindow`s or `(Duration, f64)` pairs).
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming `windows` when there are none, when
    /// a window's `max_age` is zero or not greater than the previous one's, or
    /// when a window's score is outside `[0, 1]`.
    pub fn step<I, W>(windows: I) -> Result<Self, CupelError>
    where
        I: IntoIterator<Item = W>,
        W: Into<StepWindow>,
    {
        let curve = Self::Step {
            windows: windows.into_iter().map(Into::into).collect(),
        };
        curve.validate()?;
        Ok(curve)
    }

    /// [`step`](Self::step) with `(max_age in seconds, score)` pairs.
    ///
    /// # Errors
    /// As [`step`](Self::step); a `max_age` that is not a finite number `> 0`
    /// of seconds is reported as `windows[i].max_age`.
    pub fn step_secs<I>(windows: I) -> Result<Self, CupelError>
    where
        I: IntoIterator<Item = (f64, f64)>,
    {
        let mut list = Vec::new();
        for (i, (max_age, score)) in windows.into_iter().enumerate() {
            let max_age = secs_to_duration(&format!("windows[{i}].max_age"), max_age)?;
            list.push(StepWindow { max_age, score });
        }
        Self::step(list)
    }

    /// A checked [`DecayCurve::Window`].
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming `max_age` when it is zero.
    pub fn window(max_age: Duration) -> Result<Self, CupelError> {
        let curve = Self::Window { max_age };
        curve.validate()?;
        Ok(curve)
    }

    /// [`window`](Self::window) with `max_age` in (fractional) seconds.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming `max_age` when it is not a finite
    /// number `> 0` of seconds.
    pub fn window_secs(max_age: f64) -> Result<Self, CupelError> {
        Self::window(secs_to_duration("max_age", max_age)?)
    }

    /// Checks the curve's parameters (see each factory for the rules).
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming the offending parameter and value.
    pub fn validate(&self) -> Result<(), CupelError> {
        match self {
            Self::Exponential { half_life } => {
                if half_life.is_zero() {
                    return Err(config_error(format!(
                        "half_life must be greater than zero (got {half_life:?})"
                    )));
                }
            }
            Self::Window { max_age } => {
                if max_age.is_zero() {
                    return Err(config_error(format!(
                        "max_age must be greater than zero (got {max_age:?})"
                    )));
                }
            }
            Self::Step { windows } => {
                if windows.is_empty() {
                    return Err(config_error(
                        "windows must contain at least one window (got 0)".into(),
                    ));
                }
                let mut previous: Option<Duration> = None;
                for (i, w) in windows.iter().enumerate() {
                    if w.max_age.is_zero() {
                        return Err(config_error(format!(
                            "windows[{i}].max_age must be greater than zero (got {:?}); \
                             zero-width windows are not allowed",
                            w.max_age
                        )));
                    }
                    if let Some(prev) = previous
                        && w.max_age <= prev
                    {
                        return Err(config_error(format!(
                            "windows must be listed youngest first with strictly increasing max_age \
                             (windows[{i}].max_age = {:?} follows {prev:?})",
                            w.max_age
                        )));
                    }
                    if !(0.0..=1.0).contains(&w.score) {
                        return Err(config_error(format!(
                            "windows[{i}].score must be within [0, 1] (got {})",
                            w.score
                        )));
                    }
                    previous = Some(w.max_age);
                }
            }
        }
        Ok(())
    }

    /// The curve's score for a (non-negative) age.
    pub fn score_for_age(&self, age: Duration) -> f64 {
        match self {
            Self::Exponential { half_life } => {
                (-(age.as_secs_f64() / half_life.as_secs_f64())).exp2()
            }
            Self::Step { windows } => windows
                .iter()
                .find(|w| w.max_age > age)
                .or_else(|| windows.last())
                .map_or(0.0, |w| w.score),
            Self::Window { max_age } => {
                if age < *max_age {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }
}

/// Scores an item by its age — the time from its timestamp to "now" on an
/// injected clock — through a [`DecayCurve`].
///
/// * An item without a timestamp scores `null_timestamp_score` (default 0.5,
///   neither reward nor penalty).
/// * A future-dated item (timestamp after now) has age zero — it is as fresh
///   as can be; the clamp happens before the curve.
///
/// The clock is a [`TimeProvider`] the caller must supply (use
/// [`SystemTimeProvider`](cupel_core::SystemTimeProvider) in production and
/// [`FixedTimeProvider`](cupel_core::FixedTimeProvider) in tests): there is
/// no default, so the time dependency stays visible. An absolute scorer: peers
/// are ignored.
///
/// # Performance
/// [`score`](Scorer::score) reads the clock on every call;
/// [`score_all`](Scorer::score_all) reads it once per pass, so one pass scores
/// every item against the same instant.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use cupel_core::{ContextItem, FixedTimeProvider, Scorer};
/// use cupel_scorers::{DecayCurve, DecayScorer};
///
/// let now = "2025-01-01T12:00:00Z".parse().unwrap();
/// let day_old = ContextItem::builder("x", 1).timestamp("2024-12-31T12:00:00Z".parse().unwrap()).build()?;
/// let undated = ContextItem::new("y", 1)?;
/// let scorer = DecayScorer::new(
///     Arc::new(FixedTimeProvider::new(now)),
///     DecayCurve::exponential(Duration::from_secs(24 * 3600))?,
/// )?;
/// // One half-life old -> 2^-1 = 0.5; undated -> the default 0.5.
/// assert_eq!(scorer.score_all(&[&day_old, &undated]), vec![0.5, 0.5]);
/// assert!(DecayCurve::exponential(Duration::ZERO).is_err());
/// # Ok::<(), cupel_core::CupelError>(())
/// ```
#[derive(Clone)]
pub struct DecayScorer {
    clock: Arc<dyn TimeProvider>,
    curve: DecayCurve,
    null_timestamp_score: f64,
}

impl DecayScorer {
    /// The default score for items without a timestamp.
    pub const DEFAULT_NULL_TIMESTAMP_SCORE: f64 = 0.5;

    /// A scorer reading `clock`, decaying along `curve`, with
    /// `null_timestamp_score` 0.5.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] when `curve` is invalid (see
    /// [`DecayCurve::validate`]).
    pub fn new(clock: Arc<dyn TimeProvider>, curve: DecayCurve) -> Result<Self, CupelError> {
        curve.validate()?;
        Ok(Self {
            clock,
            curve,
            null_timestamp_score: Self::DEFAULT_NULL_TIMESTAMP_SCORE,
        })
    }

    /// Sets the score for items without a timestamp.
    ///
    /// # Errors
    /// [`CupelError::ScorerConfig`] naming `null_timestamp_score` when it is
    /// outside `[0, 1]` or NaN.
    pub fn with_null_timestamp_score(mut self, score: f64) -> Result<Self, CupelError> {
        if !(0.0..=1.0).contains(&score) {
            return Err(config_error(format!(
                "null_timestamp_score must be within [0, 1] (got {score})"
            )));
        }
        self.null_timestamp_score = score;
        Ok(self)
    }

    /// The curve.
    pub fn curve(&self) -> &DecayCurve {
        &self.curve
    }

    /// The score for items without a timestamp.
    pub fn null_timestamp_score(&self) -> f64 {
        self.null_timestamp_score
    }

    fn score_at(&self, now: DateTime<Utc>, item: &ContextItem) -> f64 {
        self.score_stamp(now, item.timestamp())
    }

    fn score_stamp(&self, now: DateTime<Utc>, stamp: Option<DateTime<Utc>>) -> f64 {
        match stamp {
            None => self.null_timestamp_score,
            Some(ts) => {
                // Negative ages (future-dated items) fail `to_std` and clamp to zero.
                let age = now
                    .signed_duration_since(ts)
                    .to_std()
                    .unwrap_or(Duration::ZERO);
                self.curve.score_for_age(age)
            }
        }
    }
}

impl fmt::Debug for DecayScorer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DecayScorer")
            .field("curve", &self.curve)
            .field("null_timestamp_score", &self.null_timestamp_score)
            .finish_non_exhaustive()
    }
}

impl Scorer for DecayScorer {
    /// The decayed score (reads the clock); an out-of-range `index` scores `NaN`.
    fn score(&self, index: usize, items: &[&ContextItem]) -> f64 {
        let Some(item) = items.get(index) else {
            return f64::NAN;
        };
        self.score_at(self.clock.now(), item)
    }

    fn score_all(&self, items: &[&ContextItem]) -> Vec<f64> {
        let now = self.clock.now();
        // Gather the timestamps first (a branch-free pass whose memory reads
        // overlap), then compute from the local copy.
        let stamps: Vec<Option<DateTime<Utc>>> =
            items.iter().map(|item| item.timestamp()).collect();
        stamps
            .into_iter()
            .map(|stamp| self.score_stamp(now, stamp))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cupel_core::FixedTimeProvider;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const H: u64 = 3600;

    fn reference() -> DateTime<Utc> {
        "2025-01-01T12:00:00Z".parse().unwrap()
    }

    fn scorer(curve: DecayCurve) -> DecayScorer {
        DecayScorer::new(Arc::new(FixedTimeProvider::new(reference())), curve).unwrap()
    }

    fn at(ts: &str) -> ContextItem {
        ContextItem::builder("x", 1)
            .timestamp(ts.parse().unwrap())
            .build()
            .unwrap()
    }

    fn score(s: &DecayScorer, item: &ContextItem) -> f64 {
        let single = s.score(0, &[item]);
        assert_eq!(s.score_all(&[item]), vec![single]);
        single
    }

    fn hours(h: u64) -> Duration {
        Duration::from_secs(h * H)
    }

    fn example_steps() -> DecayCurve {
        DecayCurve::step([(hours(1), 0.9), (hours(24), 0.5), (hours(72), 0.1)]).unwrap()
    }

    // The five conformance vector outlines (reference time 2025-01-01T12:00Z).
    #[test]
    fn outline_1_exponential_one_half_life() {
        let s = scorer(DecayCurve::exponential(hours(24)).unwrap());
        // age 24h, half-life 24h: 2^(-24/24) = 0.5
        assert_eq!(score(&s, &at("2024-12-31T12:00:00Z")), 0.5);
    }

    #[test]
    fn outline_2_future_dated_is_age_zero() {
        let s = scorer(DecayCurve::exponential(hours(24)).unwrap());
        // timestamp 12h after now -> age clamps to 0 -> 2^0 = 1.0
        assert_eq!(score(&s, &at("2025-01-02T00:00:00Z")), 1.0);
    }

    #[test]
    fn outline_3_null_timestamp() {
        let undated = ContextItem::new("x", 1).unwrap();
        for curve in [
            DecayCurve::exponential(hours(24)).unwrap(),
            example_steps(),
            DecayCurve::window(hours(1)).unwrap(),
        ] {
            assert_eq!(score(&scorer(curve), &undated), 0.5);
        }
        let custom = scorer(DecayCurve::window(hours(1)).unwrap())
            .with_null_timestamp_score(0.1)
            .unwrap();
        assert_eq!(score(&custom, &undated), 0.1);
    }

    #[test]
    fn outline_4_step_second_window() {
        // age 6h: 1h > 6h false; 24h > 6h true -> 0.5
        assert_eq!(
            score(&scorer(example_steps()), &at("2025-01-01T06:00:00Z")),
            0.5
        );
    }

    #[test]
    fn outline_5_window_at_max_age() {
        let s = scorer(DecayCurve::window(hours(6)).unwrap());
        // age 6h, max_age 6h: 6h < 6h false -> 0.0
        assert_eq!(score(&s, &at("2025-01-01T06:00:00Z")), 0.0);
        // one nanosecond younger -> 1.0
        assert_eq!(score(&s, &at("2025-01-01T06:00:00.000000001Z")), 1.0);
    }

    // The step boundary table: 0h -> 0.9, 1h -> 0.5, 24h -> 0.1, 72h -> 0.1.
    #[test]
    fn step_boundary_table() {
        let c = example_steps();
        assert_eq!(c.score_for_age(hours(0)), 0.9);
        assert_eq!(c.score_for_age(hours(1)), 0.5);
        assert_eq!(c.score_for_age(hours(24)), 0.1);
        assert_eq!(c.score_for_age(hours(72)), 0.1);
        assert_eq!(c.score_for_age(hours(10_000)), 0.1);
    }

    // The edge-case table.
    #[test]
    fn edge_case_table() {
        // age exactly zero: Exponential 1.0, Step first window, Window 1.0
        let now = at("2025-01-01T12:00:00Z");
        assert_eq!(
            score(&scorer(DecayCurve::exponential(hours(1)).unwrap()), &now),
            1.0
        );
        assert_eq!(score(&scorer(example_steps()), &now), 0.9);
        assert_eq!(
            score(&scorer(DecayCurve::window(hours(1)).unwrap()), &now),
            1.0
        );
        // future-dated under every curve = the age-zero score
        let future = at("2030-01-01T00:00:00Z");
        assert_eq!(score(&scorer(example_steps()), &future), 0.9);
        assert_eq!(
            score(&scorer(DecayCurve::window(hours(1)).unwrap()), &future),
            1.0
        );
        // very large age: approaches 0, never negative
        let ancient = ContextItem::builder("x", 1)
            .timestamp(DateTime::<Utc>::MIN_UTC)
            .build()
            .unwrap();
        let e = score(
            &scorer(DecayCurve::exponential(Duration::from_secs(1)).unwrap()),
            &ancient,
        );
        assert!((0.0..1e-300).contains(&e), "{e}");
    }

    #[test]
    fn fractional_seconds_are_supported() {
        // half-life 1.5 s, age 3 s -> 2^-2 = 0.25
        let s = scorer(DecayCurve::exponential_secs(1.5).unwrap());
        assert_eq!(score(&s, &at("2025-01-01T11:59:57Z")), 0.25);
        // window 0.5 s: age 0.25 s -> 1.0; age 0.5 s -> 0.0
        let w = scorer(DecayCurve::window_secs(0.5).unwrap());
        assert_eq!(score(&w, &at("2025-01-01T11:59:59.750Z")), 1.0);
        assert_eq!(score(&w, &at("2025-01-01T11:59:59.500Z")), 0.0);
        let st = scorer(DecayCurve::step_secs([(0.5, 1.0), (2.0, 0.25)]).unwrap());
        assert_eq!(score(&st, &at("2025-01-01T11:59:59Z")), 0.25);
    }

    fn err_text(r: Result<DecayCurve, CupelError>) -> String {
        match r.unwrap_err() {
            CupelError::ScorerConfig(m) => m,
            other => panic!("wrong variant {other:?}"),
        }
    }

    #[test]
    fn invalid_curves_name_their_parameter() {
        assert_eq!(
            err_text(DecayCurve::exponential(Duration::ZERO)),
            "DecayScorer: half_life must be greater than zero (got 0ns)"
        );
        for bad in [0.0, -1.0, f64::NAN] {
            let m = err_text(DecayCurve::exponential_secs(bad));
            assert!(m.contains("half_life"), "{m}");
        }
        assert!(err_text(DecayCurve::exponential_secs(f64::INFINITY)).contains("half_life"));
        assert!(err_text(DecayCurve::window(Duration::ZERO)).contains("max_age"));
        assert!(err_text(DecayCurve::window_secs(-3.0)).contains("max_age"));
        assert_eq!(
            err_text(DecayCurve::step(Vec::<StepWindow>::new())),
            "DecayScorer: windows must contain at least one window (got 0)"
        );
        let m = err_text(DecayCurve::step([(hours(1), 0.9), (Duration::ZERO, 0.5)]));
        assert!(
            m.contains("windows[1].max_age") && m.contains("zero-width"),
            "{m}"
        );
        let m = err_text(DecayCurve::step([(hours(2), 0.9), (hours(1), 0.5)]));
        assert!(m.contains("windows") && m.contains("increasing"), "{m}");
        let m = err_text(DecayCurve::step([(hours(2), 0.9), (hours(2), 0.5)]));
        assert!(m.contains("windows[1]"), "{m}");
        let m = err_text(DecayCurve::step([(hours(2), 1.5)]));
        assert!(m.contains("windows[0].score") && m.contains("1.5"), "{m}");
        let m = err_text(DecayCurve::step_secs([(1.0, 0.5), (0.0, 0.1)]));
        assert!(m.contains("windows[1].max_age"), "{m}");
    }

    #[test]
    fn scorer_revalidates_hand_built_curves() {
        let clock: Arc<dyn TimeProvider> = Arc::new(FixedTimeProvider::new(reference()));
        let bad = DecayCurve::Exponential {
            half_life: Duration::ZERO,
        };
        assert!(DecayScorer::new(clock.clone(), bad).is_err());
        let bad = DecayCurve::Step { windows: vec![] };
        assert!(DecayScorer::new(clock, bad).is_err());
    }

    #[test]
    fn null_timestamp_score_is_validated() {
        let s = scorer(DecayCurve::window(hours(1)).unwrap());
        assert_eq!(s.null_timestamp_score(), 0.5);
        for bad in [-0.1, 1.1, f64::NAN] {
            let e = s.clone().with_null_timestamp_score(bad).unwrap_err();
            assert!(
                matches!(&e, CupelError::ScorerConfig(m) if m.contains("null_timestamp_score")),
                "{e}"
            );
        }
        assert!(s.clone().with_null_timestamp_score(0.0).is_ok());
        assert!(s.with_null_timestamp_score(1.0).is_ok());
    }

    #[test]
    fn score_all_reads_the_clock_once() {
        struct Counting(AtomicUsize, DateTime<Utc>);
        impl TimeProvider for Counting {
            fn now(&self) -> DateTime<Utc> {
                self.0.fetch_add(1, Ordering::Relaxed);
                self.1
            }
        }
        let clock = Arc::new(Counting(AtomicUsize::new(0), reference()));
        let s = DecayScorer::new(clock.clone(), DecayCurve::window(hours(1)).unwrap()).unwrap();
        let items: Vec<ContextItem> = (0..5).map(|_| at("2025-01-01T11:30:00Z")).collect();
        let refs: Vec<&ContextItem> = items.iter().collect();
        assert_eq!(s.score_all(&refs), vec![1.0; 5]);
        assert_eq!(clock.0.load(Ordering::Relaxed), 1);
    }
}
