//! Skeleton: the `cupel-scorers` crate is being built (see its issue). Nothing here works yet.
