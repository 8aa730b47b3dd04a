//! The `cupel` command-line tool (skeleton).
fn main() {}
