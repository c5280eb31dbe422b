//! The directory a command writes its files to (`--figures DIR`, `--out DIR`): created
//! before the work starts, so a bad path is an error at once rather than after a long run.

use std::path::Path;

use anyhow::{bail, Context as _, Result};

/// Creates `dir` and its parents, or says why not, naming `flag`.
pub(crate) fn create(flag: &str, dir: &Path) -> Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!("{flag} {}: a file is there, not a directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("{flag} {}: cannot create the directory", dir.display()))
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
