//! Skeleton: the `cupel-analytics` crate is being built (see its issue). Nothing here works yet.
