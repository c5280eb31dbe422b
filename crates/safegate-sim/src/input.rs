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
        return Err(std::io::Error::other(format!("more than {} (the most this input may hold)", mib(limit))));
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
}
