//! Cache-aware windows: provider cache profiles and a cost model, sessions
//! that keep the previous window's prefix, Anthropic breakpoints, and a
//! turn-by-turn simulation of what each strategy pays.

mod anthropic;
mod error;
mod profile;
mod prompt;
mod session;
mod sim;

pub use anthropic::{
    MAX_CACHE_MARKERS, apply_breakpoints, cache_marker_paths, count_cache_markers,
};
pub use error::CacheError;
pub use profile::{CacheMode, CacheProfile, CacheUsage};
pub(crate) use prompt::Frame;
pub use prompt::{Block, PromptCache, plan_breakpoints};
pub use session::{
    AttributeValue, CacheRow, CacheSession, CacheStatus, CacheTurn, Cut, CutFront, Expiry,
    LowWater, PrefixBreak,
};
pub use sim::{
    SimStrategy, SimTurn, Simulation, StrategyRun, request_ends, simulate, simulate_with,
};
