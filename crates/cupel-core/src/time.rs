//! Clocks: the [`TimeProvider`] trait and the two clocks that ship.

use std::sync::Arc;

use chrono::{DateTime, Utc};

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
