//! Clocks: the [`TimeProvider`] trait and the clocks that ship.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};

/// A source of "now", injected wherever scoring depends on the current time.
///
/// Injecting the clock keeps time-dependent scoring deterministic in tests
/// ([`FixedTimeProvider`]) and current in production ([`SystemTimeProvider`]).
pub trait TimeProvider: Send + Sync {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;
}

/// The system clock (`Utc::now()`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemTimeProvider;

impl TimeProvider for SystemTimeProvider {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// A clock frozen at one instant.
///
/// ```
/// use cupel_core::{FixedTimeProvider, TimeProvider};
/// let t = "2025-01-01T12:00:00Z".parse()?;
/// assert_eq!(FixedTimeProvider::new(t).now(), t);
/// # Ok::<(), chrono::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FixedTimeProvider(DateTime<Utc>);

impl FixedTimeProvider {
    /// A clock that always answers `now`.
    pub fn new(now: DateTime<Utc>) -> Self {
        Self(now)
    }
}

impl TimeProvider for FixedTimeProvider {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// A clock that moves only when told to: for tests of deadlines.
///
/// Clones share one reading, so a test keeps a clone and advances the clock
/// that a `cupel_run::LocalTracker` (or any other component)
/// reads.
///
/// ```
/// use chrono::TimeDelta;
/// use cupel_core::{ManualTimeProvider, TimeProvider};
/// let start = "2026-01-01T12:00:00Z".parse()?;
/// let clock = ManualTimeProvider::new(start);
/// let shared = clock.clone();
/// clock.advance(TimeDelta::seconds(5));
/// assert_eq!(shared.now(), start + TimeDelta::seconds(5));
/// # Ok::<(), chrono::ParseError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ManualTimeProvider(Arc<Mutex<DateTime<Utc>>>);

impl ManualTimeProvider {
    /// A clock reading `start` until moved.
    pub fn new(start: DateTime<Utc>) -> Self {
        Self(Arc::new(Mutex::new(start)))
    }

    /// Moves the clock by `delta` (backwards when negative), saturating at
    /// the representable range.
    pub fn advance(&self, delta: TimeDelta) {
        let mut now = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *now = now
            .checked_add_signed(delta)
            .unwrap_or(if delta < TimeDelta::zero() {
                DateTime::<Utc>::MIN_UTC
            } else {
                DateTime::<Utc>::MAX_UTC
            });
    }

    /// Sets the clock to `now`.
    pub fn set(&self, now: DateTime<Utc>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }
}

impl TimeProvider for ManualTimeProvider {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T: TimeProvider + ?Sized> TimeProvider for &T {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}
impl<T: TimeProvider + ?Sized> TimeProvider for Box<T> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}
impl<T: TimeProvider + ?Sized> TimeProvider for Arc<T> {
    fn now(&self) -> DateTime<Utc> {
        (**self).now()
    }
}
