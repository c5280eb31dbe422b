//! The draft boundary file: the options, the capacity, ρ and the envelope the data cover,
//! written as TOML with the checklist's findings as comments, and read back as
//! `safegate verify --boundary` reads it; and its writing, which never replaces a file it
//! did not draft ([`write_draft`]).

use std::path::Path;

use safegate_core::boundary::{Boundary, MagnitudeSection};

use super::envelope::Seen;
use super::{CheckOptions, Excursions, ExitCheck, Feasibility, Severity, Telemetry};

/// The first line of every draft starts with this: a file that does not is never
/// overwritten by [`write_draft`].
pub const DRAFT_MARK: &str = "# Drafted by `safegate boundary check`";

/// Why a draft was not written to its path.
#[derive(Debug, thiserror::Error)]
pub enum DraftWriteError {
    /// What is at the path could not be looked at.
    #[error("cannot check what is there ({0})")]
    Inspect(std::io::Error),
    /// The path is a directory.
    #[error("is a directory")]
    Directory,
    /// Something other than a regular file is there (a device, a FIFO, a symbolic link).
    #[error("exists and is not a regular file")]
    NotAFile,
    /// A file is there that no draft wrote (it does not start with [`DRAFT_MARK`], is not
    /// UTF-8, or is larger than any draft).
    #[error("exists and was not drafted by safegate")]
    NotADraft,
    /// The write itself failed.
    #[error("{0}")]
    Write(std::io::Error),
}

/// Write the draft `text` to `path` unless that would replace something this checklist did
/// not write: the path must not exist, or be a regular file whose text starts with
/// [`DRAFT_MARK`] (a binary file, a device or a FIFO is never touched).
pub fn write_draft(path: &Path, text: &str) -> Result<(), DraftWriteError> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(DraftWriteError::Inspect(e)),
        Ok(m) if m.is_dir() => return Err(DraftWriteError::Directory),
        Ok(m) if !m.file_type().is_file() => return Err(DraftWriteError::NotAFile),
        Ok(_) => {
            // A draft is far smaller than this; anything larger, or not UTF-8, is not one.
            let drafted = safegate_sim::input::read_text(path, safegate_sim::input::MAX_CONFIG_BYTES)
                .is_ok_and(|existing| existing.starts_with(DRAFT_MARK));
            if !drafted {
                return Err(DraftWriteError::NotADraft);
            }
        }
    }
    std::fs::write(path, text).map_err(DraftWriteError::Write)
}

/// The draft boundary: the options, the capacity, ρ, and the envelope the data cover.
pub(super) fn draft(tel: &Telemetry, opts: &CheckOptions, capacity: f64, sev: &Severity, seen: &Seen) -> Boundary {
    let mut b = Boundary {
        name: Some("draft".into()),
        description: Some("drafted by safegate boundary check; edit, then safegate verify --boundary".into()),
        ..Boundary::default()
    };
    b.barrier.threshold = opts.threshold;
    b.barrier.capacity = Some(capacity);
    b.probability.epsilon = opts.epsilon;
    b.probability.horizon = opts.horizon;
    b.magnitude = Some(MagnitudeSection {
        eta: opts.eta,
        rho: sev.rho.min(safegate_core::filter::constraint::MAX_RHO),
        ..Default::default()
    });
    let traffic = seen.traffic();
    b.envelope.traffic = [traffic[0].floor(), traffic[1].ceil().max(traffic[0].floor() + 1.0)];
    if let (true, Some(health)) = (tel.health.is_some(), seen.health) {
        b.envelope.health = [(health[0] * 100.0).floor() / 100.0, (health[1] * 100.0).ceil() / 100.0];
    }
    b
}

/// Read the draft back as `safegate verify --boundary` does: the TOML parse, then every
/// range check and the filter's construction.
pub(super) fn verify_draft(text: &str, capacity: f64) -> Result<(), String> {
    let b = Boundary::from_toml(text, &[]).map_err(|e| e.0)?;
    b.safety_config(capacity).map(|_| ()).map_err(|e| e.to_string())
}

pub(super) fn draft_text(b: &Boundary, ex: &Excursions, exits: &ExitCheck, feas: &Feasibility) -> String {
    let mut o = String::new();
    o.push_str(DRAFT_MARK);
    o.push_str(" from telemetry. Edit what a reviewer would\n");
    o.push_str("# sign (ε, ρ, the envelope), then check it against the model: `safegate verify --boundary FILE`.\n");
    o.push_str(&format!("# Exits: {}\n", exits.reason));
    o.push_str(&format!("# Excursion peaks: {} ({})\n", ex.tail.class.name(), ex.tail.reason));
    o.push_str(&format!("# Feasibility: {}\n", feas.reason));
    match toml::to_string(b) {
        Ok(t) => o.push_str(&t),
        Err(e) => o.push_str(&format!("# the draft could not be written: {e}\n")),
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_replaces_only_a_draft() {
        let dir = std::env::temp_dir().join(format!("safegate-draft-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("draft.toml");
        let draft = format!("{DRAFT_MARK} from telemetry.\nname = \"draft\"\n");
        write_draft(&path, &draft).unwrap();
        // Its own draft is replaced.
        write_draft(&path, &format!("{draft}# again\n")).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("# again\n"));
        // Anything else is not.
        let foreign = dir.join("mine.toml");
        std::fs::write(&foreign, "name = \"mine\"\n").unwrap();
        assert!(matches!(write_draft(&foreign, &draft), Err(DraftWriteError::NotADraft)));
        assert_eq!(std::fs::read_to_string(&foreign).unwrap(), "name = \"mine\"\n");
        std::fs::write(&foreign, [0xffu8, 0xfe, 0]).unwrap();
        assert!(matches!(write_draft(&foreign, &draft), Err(DraftWriteError::NotADraft)));
        assert!(matches!(write_draft(&dir, &draft), Err(DraftWriteError::Directory)));
        let e = write_draft(&dir.join("no-such-dir").join("d.toml"), &draft).unwrap_err();
        assert!(matches!(e, DraftWriteError::Write(_)), "{e}");
        #[cfg(unix)]
        {
            assert!(matches!(write_draft(Path::new("/dev/null"), &draft), Err(DraftWriteError::NotAFile)));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
