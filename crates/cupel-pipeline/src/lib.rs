//! Skeleton: the `cupel-pipeline` crate is being built (see its issue). Nothing here works yet.
