//! Skeleton: the `cupel-testing` crate is being built (see its issue). Nothing here works yet.
