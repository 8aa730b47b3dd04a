//! `cargo xtask release VERSION [--dry-run]`: cut a release.
//!
//! In order, stopping at the first failure:
//!
//! 1. **Checks.** VERSION is semver and not below the workspace version nor
//!    any earlier `v*` tag; its tag does not exist; the tree is clean; every
//!    publishable package has the metadata the registry shows (description,
//!    license, readme, documentation; no placeholder repository); no
//!    dependency declares a `rust-version` newer than ours (the MSRV check
//!    clippy cannot do); CHANGELOG's `Unreleased` section is not empty.
//! 2. **Bump.** `[workspace.package] version` and the `version` of every
//!    internal entry of `[workspace.dependencies]` become VERSION together
//!    (each crate inherits them), and `Cargo.lock` follows.
//! 3. **Changelog.** The `Unreleased` entries move under
//!    `## [VERSION] - YYYY-MM-DD` (UTC), leaving an empty `Unreleased`.
//! 4. **CI.** `cargo xtask ci`.
//! 5. **Package.** `cargo package --workspace`: every publishable crate is
//!    packaged and built from its packaged sources, with its workspace
//!    dependencies resolved to each other's packaged sources, not the
//!    registry's.
//! 6. **Files.** Each package's file list: `Cargo.toml`, `README.md` and
//!    `LICENSE` present; no build output, stray snapshot or editor file; no
//!    file over 1 MiB; each `.crate` under the registry's 10 MiB limit.
//! 7. **Semver.** `cargo semver-checks` against the previous tag, when both
//!    exist (otherwise the manual step is printed).
//! 8. **Commit and tag.** `release vVERSION` and an annotated tag `vVERSION`.
//!
//! `--dry-run` changes nothing: it copies the working tree to a temporary
//! directory, does steps 1–3 and 5–7 there (building in
//! `target/release-check/`) (step 4 is printed, since CI has
//! just run it on the same tree), prints what steps 4 and 8 would do, and
//! deletes the copy. `cargo xtask ci` runs such a dry run for the current
//! version (see [`ci_dry_run`]).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use semver::Version;
use toml_edit::{DocumentMut, value};

use crate::{cargo, run_step, workspace_root};

/// Largest `.crate` the registry accepts.
const MAX_CRATE_BYTES: u64 = 10 * 1024 * 1024;
/// Largest single file we let into a package without a reason.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

pub(crate) fn run(version: &str, dry_run: bool) -> Result<(), String> {
    let version = Version::parse(version.trim_start_matches('v')).map_err(|e| {
        format!("release: `{version}` is not a semver version (MAJOR.MINOR.PATCH): {e}")
    })?;
    let root = workspace_root();
    if dry_run {
        dry_run_release(&root, &version, DirtyTree::Refuse)
    } else {
        real_release(&root, &version)
    }
}

/// The dry run `cargo xtask ci` performs: the current workspace version when
/// it has no tag yet (the first release), otherwise the next patch version.
pub(crate) fn ci_dry_run() -> Result<(), String> {
    let root = workspace_root();
    let current = workspace_version(&root)?;
    // A minor bump, as the next feature release would be: it exercises every
    // place a version is written (a patch bump of 0.1.x keeps `"0.1"`
    // requirements satisfied and hid a stale one).
    let version = Version::new(current.major, current.minor + 1, 0);
    // CI may run on uncommitted work (a developer's `cargo xtask ci`): the
    // copy is what is checked, so the state of the tree does not matter here.
    dry_run_release(&root, &version, DirtyTree::Ignore)
}

/// A real release (or its dry run) refuses a dirty tree and an empty
/// `Unreleased` section; the dry run inside `cargo xtask ci` ignores both.
#[derive(Clone, Copy, PartialEq, Eq)]
enum DirtyTree {
    Refuse,
    Ignore,
}

fn real_release(root: &Path, version: &Version) -> Result<(), String> {
    step(&format!("release v{version}"));
    check_all(root, version, DirtyTree::Refuse)?;
    bump(root, version)?;
    let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
    move_changelog(root, version, &date)?;
    let undo = "the tree now holds the bump: `git checkout -- .` undoes it";
    let mut ci = cargo();
    ci.current_dir(root).args(["xtask", "ci"]);
    run_step("cargo xtask ci", ci).map_err(|e| format!("{e} ({undo})"))?;
    package_and_check(root, None).map_err(|e| format!("{e} ({undo})"))?;
    semver_check(root)?;
    let mut commit = Command::new("git");
    commit
        .current_dir(root)
        .args(["commit", "-qam", &format!("release v{version}")]);
    run_step("git commit", commit)?;
    let mut tag = Command::new("git");
    tag.current_dir(root).args([
        "tag",
        "-a",
        &format!("v{version}"),
        "-m",
        &format!("Cupel for Rust {version}"),
    ]);
    run_step(&format!("git tag v{version}"), tag)?;
    eprintln!(
        "==> released v{version}. Publish with `cargo publish --workspace` (dependencies first), \
         then push the commit and the tag."
    );
    Ok(())
}

fn dry_run_release(root: &Path, version: &Version, dirty: DirtyTree) -> Result<(), String> {
    step(&format!(
        "release v{version} --dry-run (nothing in {} changes)",
        root.display()
    ));
    check_all(root, version, dirty)?;
    let copy = TempCopy::of_working_tree(root)?;
    let dir = copy.path();
    let old = workspace_version(dir)?;
    bump(dir, version)?;
    eprintln!("    would bump every crate and [workspace.dependencies] from {old} to {version}");
    let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let moved = move_changelog(dir, version, &date)?;
    eprintln!("    would move {moved} CHANGELOG lines under `## [{version}] - {date}`");
    eprintln!("    would run `cargo xtask ci`");
    // A target directory of its own, kept between runs (dependencies stay
    // built) but apart from the workspace's: the packaged crates have the
    // workspace crates' names, and sharing would let one build's artifacts
    // stand in for the other's.
    package_and_check(dir, Some(&root.join("target").join("release-check")))?;
    semver_check(root)?;
    eprintln!("    would commit `release v{version}` and create the annotated tag v{version}");
    eprintln!("==> release dry run: all checks passed");
    Ok(())
}

fn step(name: &str) {
    eprintln!("==> {name}");
}

// ----- checks -----------------------------------------------------------------------------------

fn check_all(root: &Path, version: &Version, dirty: DirtyTree) -> Result<(), String> {
    let current = workspace_version(root)?;
    if *version < current {
        return Err(format!(
            "release: v{version} is below the workspace version {current}"
        ));
    }
    if let Some(prev) = latest_tag(root)?
        && *version <= prev
    {
        return Err(format!(
            "release: v{version} is not above the latest release tag v{prev}"
        ));
    }
    if tag_exists(root, &format!("v{version}"))? {
        return Err(format!("release: the tag v{version} exists already"));
    }
    if dirty == DirtyTree::Refuse {
        let status = git(root, &["status", "--porcelain"])?;
        if !status.trim().is_empty() {
            let first: Vec<&str> = status.lines().take(5).collect();
            return Err(format!(
                "release: the working tree has uncommitted changes; commit or stash them first:\n{}",
                first.join("\n")
            ));
        }
    }
    let meta = metadata(root)?;
    check_package_metadata(&meta)?;
    check_dependency_msrv(&meta)?;
    let changelog = read(&root.join("CHANGELOG.md"))?;
    if unreleased_section(&changelog)?.1.trim().is_empty() {
        let msg = "CHANGELOG.md has nothing under `## [Unreleased]`: say what changed first";
        if dirty == DirtyTree::Refuse {
            return Err(format!("release: {msg}"));
        }
        // CI right after a release (or inside one, once the entries have
        // moved) has nothing unreleased, and that is fine.
        eprintln!("    note: {msg} (a real release would refuse)");
    }
    eprintln!(
        "    checks passed: version, tag, tree, package metadata, dependency MSRV, changelog"
    );
    Ok(())
}

/// `cargo metadata` (with dependencies) as JSON.
fn metadata(root: &Path) -> Result<serde_json::Value, String> {
    cargo_metadata(root, &["--locked"])
}

/// `cargo metadata --format-version 1 ARGS...` in `root`, as JSON.
fn cargo_metadata(root: &Path, args: &[&str]) -> Result<serde_json::Value, String> {
    let out = cargo()
        .current_dir(root)
        .args(["metadata", "--format-version", "1"])
        .args(args)
        .output()
        .map_err(|e| format!("cargo metadata: could not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("cargo metadata: bad JSON: {e}"))
}

fn workspace_members(meta: &serde_json::Value) -> Vec<&serde_json::Value> {
    let ids: Vec<&str> = meta["workspace_members"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    meta["packages"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .filter(|p| p["id"].as_str().is_some_and(|id| ids.contains(&id)))
                .collect()
        })
        .unwrap_or_default()
}

/// `publish = false` shows in metadata as an empty registry list.
fn publishable(p: &serde_json::Value) -> bool {
    !p["publish"].as_array().is_some_and(Vec::is_empty)
}

fn check_package_metadata(meta: &serde_json::Value) -> Result<(), String> {
    let mut problems = Vec::new();
    for p in workspace_members(meta)
        .into_iter()
        .filter(|p| publishable(p))
    {
        let name = p["name"].as_str().unwrap_or("?");
        for field in [
            "description",
            "license",
            "readme",
            "documentation",
            "rust_version",
        ] {
            if p[field].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{name}: `{field}` is missing"));
            }
        }
        match p["repository"].as_str() {
            Some(r) if r.contains("example.") || r.contains(".invalid") => {
                problems.push(format!("{name}: `repository = \"{r}\"` is a placeholder"));
            }
            _ => {}
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "release: package metadata:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// No package our publishable crates can depend on may need a newer Rust
/// than our `rust-version`: users on our MSRV could not build it.
fn check_dependency_msrv(meta: &serde_json::Value) -> Result<(), String> {
    let members = workspace_members(meta);
    let ours = members
        .iter()
        .find_map(|p| p["rust_version"].as_str())
        .ok_or("release: no rust-version in the workspace")?;
    let ours = parse_rust_version(ours)?;
    let member_ids: Vec<&str> = members.iter().filter_map(|p| p["id"].as_str()).collect();
    let mut newer: BTreeMap<String, String> = BTreeMap::new();
    for p in meta["packages"].as_array().into_iter().flatten() {
        if p["id"].as_str().is_some_and(|id| member_ids.contains(&id)) {
            continue;
        }
        if let Some(rv) = p["rust_version"].as_str()
            && parse_rust_version(rv)? > ours
        {
            let name = p["name"].as_str().unwrap_or("?");
            let ver = p["version"].as_str().unwrap_or("?");
            newer.insert(format!("{name} {ver}"), rv.to_owned());
        }
    }
    if newer.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = newer
        .into_iter()
        .map(|(p, rv)| format!("{p} needs Rust {rv}"))
        .collect();
    Err(format!(
        "release: dependencies newer than our MSRV {}.{}.{}:\n  {}\n\
         Pin an older version in [workspace.dependencies] or raise rust-version (a minor release).",
        ours.major,
        ours.minor,
        ours.patch,
        list.join("\n  ")
    ))
}

/// `1.88` or `1.88.0`.
fn parse_rust_version(s: &str) -> Result<Version, String> {
    let full = if s.matches('.').count() == 1 {
        format!("{s}.0")
    } else {
        s.to_owned()
    };
    Version::parse(&full).map_err(|e| format!("bad rust-version `{s}`: {e}"))
}

// ----- versions and tags ------------------------------------------------------------------------

fn workspace_version(root: &Path) -> Result<Version, String> {
    let doc = manifest(root)?;
    let v = doc["workspace"]["package"]["version"]
        .as_str()
        .ok_or("Cargo.toml: [workspace.package] has no version")?;
    Version::parse(v).map_err(|e| format!("Cargo.toml: bad workspace version `{v}`: {e}"))
}

fn tag_exists(root: &Path, tag: &str) -> Result<bool, String> {
    Ok(!git(root, &["tag", "--list", tag])?.trim().is_empty())
}

/// The highest `vX.Y.Z` tag, if any.
fn latest_tag(root: &Path) -> Result<Option<Version>, String> {
    Ok(git(root, &["tag", "--list", "v*"])?
        .lines()
        .filter_map(|t| Version::parse(t.trim().trim_start_matches('v')).ok())
        .max())
}

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| format!("git {}: could not start: {e}", args.join(" ")))?;
    if !out.status.success() {
        return Err(format!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

// ----- bump and changelog -----------------------------------------------------------------------

fn manifest(root: &Path) -> Result<DocumentMut, String> {
    read(&root.join("Cargo.toml"))?
        .parse::<DocumentMut>()
        .map_err(|e| format!("Cargo.toml: {e}"))
}

/// Sets the workspace version and every internal (path) workspace
/// dependency's version to `version`, then updates `Cargo.lock`.
fn bump(root: &Path, version: &Version) -> Result<(), String> {
    let mut doc = manifest(root)?;
    let v = version.to_string();
    doc["workspace"]["package"]["version"] = value(v.as_str());
    let deps = doc["workspace"]["dependencies"]
        .as_table_like_mut()
        .ok_or("Cargo.toml: no [workspace.dependencies]")?;
    let mut bumped = 0;
    for (_, dep) in deps.iter_mut() {
        if let Some(t) = dep.as_table_like_mut()
            && t.contains_key("path")
        {
            t.insert("version", value(v.as_str()));
            bumped += 1;
        }
    }
    if bumped == 0 {
        return Err("Cargo.toml: no internal (path) entry in [workspace.dependencies]".into());
    }
    fs::write(root.join("Cargo.toml"), doc.to_string())
        .map_err(|e| format!("writing Cargo.toml: {e}"))?;
    // Members may name internal crates with their own `version` (the
    // downstream example does, as a real user would): bump those too, or
    // `cargo update` cannot resolve the new versions.
    for manifest in member_manifests(root)? {
        let text = read(&manifest)?;
        let mut member = text
            .parse::<DocumentMut>()
            .map_err(|e| format!("{}: {e}", manifest.display()))?;
        if bump_path_dependencies(member.as_table_mut(), &v) > 0 {
            fs::write(&manifest, member.to_string())
                .map_err(|e| format!("writing {}: {e}", manifest.display()))?;
        }
    }
    let mut update = cargo();
    update
        .current_dir(root)
        .args(["update", "--workspace", "--offline", "--quiet"]);
    run_step("cargo update --workspace (Cargo.lock)", update)
}

/// The manifests of the workspace's members (`cargo metadata --no-deps`),
/// in the order cargo lists them.
fn member_manifests(root: &Path) -> Result<Vec<PathBuf>, String> {
    let meta = cargo_metadata(root, &["--no-deps", "--offline"])?;
    Ok(meta["packages"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p["manifest_path"].as_str())
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default())
}

/// Sets `version` on every dependency with both a `path` and a `version`
/// in `table`'s dependency tables (`[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, and the same under `[target.*]`); returns how
/// many it changed. Workspace-inherited entries (`x.workspace = true`) have
/// no version of their own and are left alone.
fn bump_path_dependencies(table: &mut toml_edit::Table, version: &str) -> usize {
    let mut bumped = 0;
    for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
        if let Some(deps) = table.get_mut(kind).and_then(|d| d.as_table_like_mut()) {
            for (_, dep) in deps.iter_mut() {
                if let Some(t) = dep.as_table_like_mut()
                    && t.contains_key("path")
                    && t.contains_key("version")
                {
                    t.insert("version", value(version));
                    bumped += 1;
                }
            }
        }
    }
    if let Some(targets) = table.get_mut("target").and_then(|t| t.as_table_like_mut()) {
        for (_, target) in targets.iter_mut() {
            if let Some(t) = target.as_table_mut() {
                bumped += bump_path_dependencies(t, version);
            }
        }
    }
    bumped
}

/// The `## [Unreleased]` heading's line range end and its body.
fn unreleased_section(changelog: &str) -> Result<(usize, &str), String> {
    const HEAD: &str = "## [Unreleased]\n";
    let start = changelog
        .find(HEAD)
        .ok_or("CHANGELOG.md has no `## [Unreleased]` heading")?
        + HEAD.len();
    let end = changelog[start..]
        .find("\n## [")
        .map_or(changelog.len(), |i| start + i + 1);
    Ok((start, &changelog[start..end]))
}

/// Moves the Unreleased body under a new version heading; returns the
/// number of non-empty lines moved.
fn move_changelog(root: &Path, version: &Version, date: &str) -> Result<usize, String> {
    let path = root.join("CHANGELOG.md");
    let (text, moved) = changelog_for_release(&read(&path)?, version, date)?;
    fs::write(&path, text).map_err(|e| format!("writing CHANGELOG.md: {e}"))?;
    Ok(moved)
}

/// The changelog with an empty `Unreleased` section followed by
/// `## [version] - date` holding what `Unreleased` held.
fn changelog_for_release(
    text: &str,
    version: &Version,
    date: &str,
) -> Result<(String, usize), String> {
    let (start, body) = unreleased_section(text)?;
    let moved = body.lines().filter(|l| !l.trim().is_empty()).count();
    let new = format!(
        "{}\n## [{version}] - {date}\n{}{}",
        &text[..start],
        if body.starts_with('\n') { "" } else { "\n" },
        &text[start..]
    );
    Ok((new, moved))
}

// ----- package and file lists -------------------------------------------------------------------

fn package_and_check(dir: &Path, target_dir: Option<&Path>) -> Result<(), String> {
    let meta = metadata(dir)?;
    let packages: Vec<(String, String, PathBuf)> = workspace_members(&meta)
        .into_iter()
        .filter(|p| publishable(p))
        .filter_map(|p| {
            let manifest = PathBuf::from(p["manifest_path"].as_str()?);
            Some((
                p["name"].as_str()?.to_owned(),
                p["version"].as_str()?.to_owned(),
                manifest.parent()?.to_path_buf(),
            ))
        })
        .collect();
    let mut package = cargo();
    package
        .current_dir(dir)
        .args(["package", "--workspace", "--allow-dirty", "--locked"]);
    for p in workspace_members(&meta)
        .into_iter()
        .filter(|p| !publishable(p))
    {
        if let Some(name) = p["name"].as_str() {
            package.args(["--exclude", name]);
        }
    }
    let target = target_dir.map_or_else(|| dir.join("target"), Path::to_path_buf);
    // Packages of an unchanged version from an earlier run would otherwise
    // stand in for today's sources when the packages are verified together.
    let stale = target.join("package");
    if stale.exists() {
        fs::remove_dir_all(&stale).map_err(|e| format!("{}: {e}", stale.display()))?;
    }
    package.env("CARGO_TARGET_DIR", &target);
    // A packaged manifest carries no workspace profile: without this the
    // verification builds every crate again with full debug info (GBs).
    package.env("CARGO_PROFILE_DEV_DEBUG", "false");
    forget_extracted_packages(&packages)?;
    forget_built_packages(&target, &packages)?;
    run_step(
        &format!(
            "cargo package --workspace ({} crates, each built from its packaged sources)",
            packages.len()
        ),
        package,
    )?;
    let mut problems = Vec::new();
    for (name, version, pkg_dir) in &packages {
        let files = package_files(dir, name, &target)?;
        problems.extend(file_problems(name, &files, pkg_dir));
        let crate_file = target
            .join("package")
            .join(format!("{name}-{version}.crate"));
        let size = fs::metadata(&crate_file)
            .map_err(|e| format!("{}: {e}", crate_file.display()))?
            .len();
        if size > MAX_CRATE_BYTES {
            problems.push(format!(
                "{name}: the .crate is {size} bytes (limit {MAX_CRATE_BYTES})"
            ));
        }
        eprintln!(
            "    {name} {version}: {} files, {:.1} KiB packed",
            files.len(),
            size as f64 / 1024.0
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "release: package contents:\n  {}",
            problems.join("\n  ")
        ))
    }
}

/// Cargo verifies packages that depend on each other through a local
/// registry overlay and unpacks each `.crate` under
/// `$CARGO_HOME/registry/src/-<hash>/NAME-VERSION`. It never unpacks the
/// same name and version twice, so a package re-made with new sources but
/// an unchanged version would be verified against last run's copy. Those
/// unpacked copies of our own packages (only those, only in the overlays'
/// `-<hash>` directories) are removed first.
fn forget_extracted_packages(packages: &[(String, String, PathBuf)]) -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return Ok(());
    };
    let Ok(entries) = fs::read_dir(&src) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        for (name, version, _) in packages {
            let unpacked = entry.path().join(format!("{name}-{version}"));
            if unpacked.is_dir() {
                fs::remove_dir_all(&unpacked)
                    .map_err(|e| format!("{}: {e}", unpacked.display()))?;
            }
        }
    }
    Ok(())
}

/// Cargo treats registry packages as immutable, so the verification builds
/// of our packages from an earlier run (same name and version, through the
/// overlay) would count as fresh. Their fingerprints are removed so that
/// they are built again; third-party dependencies stay built.
fn forget_built_packages(
    target: &Path,
    packages: &[(String, String, PathBuf)],
) -> Result<(), String> {
    let fingerprints = target.join("debug").join(".fingerprint");
    let Ok(entries) = fs::read_dir(&fingerprints) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let file = entry.file_name();
        let file = file.to_string_lossy();
        let ours = packages.iter().any(|(name, _, _)| {
            file.strip_prefix(name.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|hash| !hash.contains('-'))
        });
        if ours {
            fs::remove_dir_all(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}

fn package_files(dir: &Path, name: &str, target: &Path) -> Result<Vec<String>, String> {
    let out = cargo()
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .args(["package", "--list", "--allow-dirty", "--locked", "-p", name])
        .output()
        .map_err(|e| format!("cargo package --list: could not start: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo package --list -p {name} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// What must be in a package, and what must not.
fn file_problems(name: &str, files: &[String], pkg_dir: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for required in ["Cargo.toml", "README.md", "LICENSE"] {
        if !files.iter().any(|f| f == required) {
            problems.push(format!("{name}: {required} is not in the package"));
        }
    }
    for f in files {
        let stray = f.starts_with("target/")
            || f.contains("/target/")
            || f.ends_with(".snap.new")
            || f.ends_with(".pending-snap")
            || (f.ends_with(".orig") && f != "Cargo.toml.orig")
            || f.ends_with(".rej")
            || f.ends_with(".swp")
            || f.ends_with('~')
            || f.ends_with(".DS_Store");
        if stray {
            problems.push(format!("{name}: stray file {f}"));
        }
        // Files cargo generates (.cargo_vcs_info.json, Cargo.toml.orig) do not exist on disk.
        if let Ok(m) = fs::metadata(pkg_dir.join(f))
            && m.len() > MAX_FILE_BYTES
        {
            problems.push(format!("{name}: {f} is {} bytes (over 1 MiB)", m.len()));
        }
    }
    problems
}

// ----- semver -----------------------------------------------------------------------------------

fn semver_check(root: &Path) -> Result<(), String> {
    let Some(prev) = latest_tag(root)? else {
        eprintln!(
            "    semver check: no earlier v* tag, so no public API to compare against (first release)"
        );
        return Ok(());
    };
    let available = cargo()
        .args(["semver-checks", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !available {
        eprintln!(
            "    semver check: cargo-semver-checks is not installed here; before publishing run\n      \
             cargo install cargo-semver-checks --locked && cargo semver-checks --workspace --baseline-rev v{prev}"
        );
        return Ok(());
    }
    let mut check = cargo();
    check.current_dir(root).args([
        "semver-checks",
        "--workspace",
        "--baseline-rev",
        &format!("v{prev}"),
    ]);
    run_step(&format!("cargo semver-checks against v{prev}"), check)
}

// ----- the temporary copy -----------------------------------------------------------------------

/// A copy of the working tree (tracked files and untracked, non-ignored
/// ones, as they are on disk) committed into a fresh repository; removed on
/// drop.
struct TempCopy {
    path: PathBuf,
}

impl TempCopy {
    fn of_working_tree(root: &Path) -> Result<Self, String> {
        let path = std::env::temp_dir().join(format!("cupel-release-{}", std::process::id()));
        if path.exists() {
            fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let copy = TempCopy { path };
        let files = git(
            root,
            &[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
        )?;
        for f in files.split('\0').filter(|f| !f.is_empty()) {
            let from = root.join(f);
            let to = copy.path.join(f);
            let Ok(meta) = fs::symlink_metadata(&from) else {
                continue; // deleted in the working tree
            };
            if let Some(parent) = to.parent() {
                fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            if meta.file_type().is_symlink() {
                copy_symlink(&from, &to)?;
            } else if meta.is_file() {
                fs::copy(&from, &to).map_err(|e| format!("copying {f}: {e}"))?;
            }
        }
        for args in [
            &["init", "-q"][..],
            &["add", "-A"][..],
            &[
                "-c",
                "user.name=cupel-release",
                "-c",
                "user.email=release@localhost",
                "commit",
                "-qm",
                "release dry run",
            ][..],
        ] {
            git(&copy.path, args)?;
        }
        Ok(copy)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempCopy {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

#[cfg(unix)]
fn copy_symlink(from: &Path, to: &Path) -> Result<(), String> {
    let target = fs::read_link(from).map_err(|e| format!("{}: {e}", from.display()))?;
    std::os::unix::fs::symlink(target, to).map_err(|e| format!("{}: {e}", to.display()))
}

#[cfg(not(unix))]
fn copy_symlink(from: &Path, to: &Path) -> Result<(), String> {
    fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("{}: {e}", from.display()))
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreleased_body_stops_at_the_next_version() {
        let text =
            "# Changelog\n\n## [Unreleased]\n\n### Added\n- x\n\n## [0.1.0] - 2026-01-01\n- y\n";
        let (_, body) = unreleased_section(text).unwrap_or((0, ""));
        assert_eq!(body, "\n### Added\n- x\n\n");
    }

    #[test]
    fn the_unreleased_entries_move_under_the_version() {
        let text =
            "# Changelog\n\n## [Unreleased]\n\n### Added\n- x\n\n## [0.1.0] - 2026-01-01\n- y\n";
        let (new, moved) =
            changelog_for_release(text, &Version::new(0, 2, 0), "2026-11-24").unwrap_or_default();
        assert_eq!(
            new,
            "# Changelog\n\n## [Unreleased]\n\n## [0.2.0] - 2026-11-24\n\n### Added\n- x\n\n## [0.1.0] - 2026-01-01\n- y\n"
        );
        assert_eq!(moved, 2);
    }

    #[test]
    fn rust_versions_with_two_parts_parse() {
        assert_eq!(
            parse_rust_version("1.88").ok(),
            Some(Version::new(1, 88, 0))
        );
        assert_eq!(
            parse_rust_version("1.85.1").ok(),
            Some(Version::new(1, 85, 1))
        );
        assert!(parse_rust_version("one").is_err());
    }

    fn meta(members: &[(&str, &str, Option<&str>)], deps: &[(&str, &str)]) -> serde_json::Value {
        let mut packages = Vec::new();
        for (name, rv, repo) in members {
            packages.push(serde_json::json!({
                "id": format!("path+file:///{name}"), "name": name, "version": "0.1.0",
                "description": "d", "license": "MIT", "readme": "README.md",
                "documentation": "https://docs.rs/x", "rust_version": rv,
                "repository": repo, "publish": null,
            }));
        }
        for (name, rv) in deps {
            packages.push(serde_json::json!({
                "id": format!("registry+{name}"), "name": name, "version": "1.0.0",
                "rust_version": rv,
            }));
        }
        let ids: Vec<String> = members
            .iter()
            .map(|(n, _, _)| format!("path+file:///{n}"))
            .collect();
        serde_json::json!({ "packages": packages, "workspace_members": ids })
    }

    #[test]
    fn a_dependency_newer_than_the_msrv_is_named() {
        let ok = meta(
            &[("a", "1.88", None)],
            &[("old", "1.70"), ("same", "1.88.0")],
        );
        assert_eq!(check_dependency_msrv(&ok), Ok(()));
        let bad = meta(&[("a", "1.88", None)], &[("new", "1.90"), ("old", "1.70")]);
        let err = check_dependency_msrv(&bad).unwrap_err();
        assert!(err.contains("new 1.0.0 needs Rust 1.90"), "{err}");
        assert!(!err.contains("old 1.0.0"), "{err}");
    }

    #[test]
    fn a_placeholder_repository_is_refused() {
        let m = meta(&[("a", "1.88", Some("https://example.invalid/x"))], &[]);
        let err = check_package_metadata(&m).unwrap_err();
        assert!(
            err.contains("a: `repository = \"https://example.invalid/x\"` is a placeholder"),
            "{err}"
        );
        assert_eq!(
            check_package_metadata(&meta(&[("a", "1.88", None)], &[])),
            Ok(())
        );
    }

    #[test]
    fn stray_and_missing_files_are_named() {
        let files: Vec<String> = ["Cargo.toml", "src/lib.rs", "tests/snapshots/a.snap.new"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        let p = file_problems("x", &files, Path::new("/nonexistent"));
        assert_eq!(
            p,
            [
                "x: README.md is not in the package",
                "x: LICENSE is not in the package",
                "x: stray file tests/snapshots/a.snap.new",
            ]
        );
    }
}
