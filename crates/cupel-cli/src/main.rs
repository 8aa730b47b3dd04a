//! The `cupel` command-line tool; everything lives in the `cupel_cli` library
//! (so the fuzz targets can drive the same input code).

fn main() -> std::process::ExitCode {
    cupel_cli::main()
}
