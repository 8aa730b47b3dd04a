//! Finding vector files: every `*.toml` under a directory, recursively, in path order.

use std::io;
use std::path::{Path, PathBuf};

/// Every `.toml` file under `dir` (recursively), sorted by path.
///
/// Symbolic links to directories are not followed (a cycle would never end);
/// links to files are read like files.
pub(crate) fn toml_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(dir).follow_links(false) {
        let entry = entry.map_err(io::Error::from)?;
        let path = entry.path();
        let file_type = entry.file_type();
        if !file_type.is_dir() && is_toml(path) && (file_type.is_file() || path.is_file()) {
            out.push(path.to_path_buf());
        }
    }
    out.sort();
    Ok(out)
}

fn is_toml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn finds_nested_toml_files_in_path_order() {
        let dir =
            std::env::temp_dir().join(format!("cupel-conformance-discover-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("b/deeper")).unwrap();
        fs::create_dir_all(dir.join("a")).unwrap();
        fs::write(dir.join("b/deeper/z.toml"), "").unwrap();
        fs::write(dir.join("b/y.TOML"), "").unwrap();
        fs::write(dir.join("a/x.toml"), "").unwrap();
        fs::write(dir.join("a/notes.md"), "").unwrap();
        let found: Vec<String> = toml_files(&dir)
            .unwrap()
            .iter()
            .map(|p| {
                p.strip_prefix(&dir)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/")
            })
            .collect();
        assert_eq!(found, ["a/x.toml", "b/deeper/z.toml", "b/y.TOML"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        assert!(toml_files(Path::new("/definitely/not/here/cupel")).is_err());
    }
}
