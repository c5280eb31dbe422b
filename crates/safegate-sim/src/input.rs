//! Reading input files with a size bound: every file safegate reads (scenarios, boundaries,
//! fleet files, health traces, telemetry, series) goes through [`read_text`], which reads at
//! most `limit + 1` bytes whatever the file claims to be. A device such as `/dev/zero` or a
//! FIFO reports no size, so a check of the metadata alone would read it until memory ran out.

use std::io::Read;
use std::path::Path;

/// Most bytes of a scenario, boundary or fleet file (TOML a person writes).
pub const MAX_CONFIG_BYTES: u64 = 16 << 20;
/// Most bytes of a health trace (`t,health` rows: about 5 M of them).
pub const MAX_TRACE_BYTES: u64 = 128 << 20;

/// Why a file could not be read: an [`std::io::Error`] whose message says what was wrong
/// (missing, a directory, over `limit`, not UTF-8).
pub type ReadError = std::io::Error;

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

/// The cause of a [`ReadError`] when the input holds more than its limit ([`too_large`]
/// finds it): the one cause a reader's advice on size ("split it") answers.
#[derive(Debug)]
struct TooLarge {
    limit: u64,
}

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "more than {} (the most this input may hold)", mib(self.limit))
    }
}

impl std::error::Error for TooLarge {}

/// The limit `e` says the input exceeded, when that is why it could not be read (and not a
/// directory, a missing file, text that is not UTF-8 or any other cause).
pub fn too_large(e: &ReadError) -> Option<u64> {
    e.get_ref().and_then(|inner| inner.downcast_ref::<TooLarge>()).map(|t| t.limit)
}

/// The text of `path`, at most `limit` bytes of UTF-8.
pub fn read_text(path: &Path, limit: u64) -> Result<String, ReadError> {
    if std::fs::metadata(path)?.is_dir() {
        return Err(std::io::Error::other("is a directory, not a file"));
    }
    read_bounded(std::fs::File::open(path)?, limit)
}

/// At most `limit` bytes of UTF-8 from `r` (standard input, say).
pub fn read_bounded(r: impl Read, limit: u64) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    r.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(std::io::Error::other(TooLarge { limit }));
    }
    String::from_utf8(bytes).map_err(|e| {
        std::io::Error::other(format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_directories_and_large_inputs_are_bounded() {
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("more than 1 MiB"), "{e}");
        let e = read_text(Path::new("/"), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("directory"), "{e}");
        let e = read_bounded(&b"ok\xff"[..], 10).unwrap_err().to_string();
        assert!(e.contains("not UTF-8") && e.contains("offset 2"), "{e}");
        assert_eq!(read_bounded(&b"exactly"[..], 7).unwrap(), "exactly");
        assert!(read_bounded(&b"exactly8"[..], 7).is_err());
    }

    /// Only an input over its limit is said to be too large: a reader's advice on size
    /// ("split it") is for that cause alone.
    #[test]
    fn too_large_is_told_from_every_other_cause() {
        let big = read_bounded(&[b'x'; 3 << 20][..], 1 << 20).unwrap_err();
        assert_eq!(too_large(&big), Some(1 << 20));
        assert!(big.to_string().contains("more than 1 MiB"), "{big}");
        assert_eq!(too_large(&read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err()), Some(1 << 20));
        for other in [
            read_text(Path::new("/"), 1 << 20).unwrap_err(),
            read_text(Path::new("/no/such/file"), 1 << 20).unwrap_err(),
            read_bounded(&b"ok\xff"[..], 10).unwrap_err(),
        ] {
            assert_eq!(too_large(&other), None, "{other}");
        }
    }
}
