//! Where a command writes its files (`--figures DIR`, `--out DIR`, `--svg FILE`): checked
//! (a directory created) before the work starts, so a bad path is an error at once rather
//! than after a long run.

use std::path::Path;

use anyhow::{bail, Context as _, Result};

/// Creates `dir` and its parents, or says why not, naming `flag`.
pub(crate) fn create(flag: &str, dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!("{flag} {}: a file is there, not a directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("{flag} {}: cannot create the directory", dir.display()))
}

/// Refuses `path` as a file to write after the work, naming `flag`: a directory, or a file in
/// a directory that does not exist.
pub(crate) fn check_file(flag: &str, path: &Path) -> Result<()> {
    if path.is_dir() {
        bail!("{flag} {}: is a directory; give a file path", path.display());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        if !parent.is_dir() {
            bail!("{flag} {}: the directory {} does not exist", path.display(), parent.display());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_in_the_way_is_named() {
        let file = std::env::temp_dir().join(format!("safegate-out-dir-{}", std::process::id()));
        std::fs::write(&file, "x").unwrap();
        let e = super::create("--figures", &file).unwrap_err().to_string();
        assert!(e.starts_with("--figures ") && e.contains("a file is there"), "{e}");
        let nested = std::env::temp_dir().join(format!("safegate-out-dir-{}-d/a/b", std::process::id()));
        super::create("--out", &nested).unwrap();
        assert!(nested.is_dir());
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_dir_all(nested.parent().unwrap().parent().unwrap());
    }
}
