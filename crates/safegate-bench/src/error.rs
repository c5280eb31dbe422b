//! The harnesses' one error type: an input out of range or unknown (named by its field in
//! the harness's input struct, which a CLI may rename to its flag), or a run that failed.

use std::error::Error as StdError;

use safegate_core::RangeError;

/// What a harness refuses or fails on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input out of its range; its `field` is the input's field name (`secs`, `jobs`).
    #[error(transparent)]
    Range(#[from] RangeError),
    /// An input naming something unknown or not built in (`field: message`).
    #[error("{field}: {message}")]
    Input {
        /// The input's field name.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A run that failed: what was being done, and why.
    #[error("{context}")]
    Failed {
        /// What was being done.
        context: String,
        /// Why it failed.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// A run that failed, in words.
    #[error("{0}")]
    Message(String),
}

impl From<safegate_live::LiveError> for Error {
    /// A live-system failure (PostgreSQL, Redis) in words: its text names the service.
    fn from(e: safegate_live::LiveError) -> Self {
        Error::Message(e.to_string())
    }
}

impl Error {
    /// `Failed` with `context` over `source`.
    pub(crate) fn failed(context: impl Into<String>, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Error::Failed { context: context.into(), source: source.into() }
    }

    /// `Input` naming `field`.
    pub(crate) fn input(field: &str, message: impl Into<String>) -> Self {
        Error::Input { field: field.into(), message: message.into() }
    }

    /// The input field the error names, if it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Range(e) => Some(&e.field),
            Error::Input { field, .. } => Some(field),
            Error::Failed { .. } | Error::Message(_) => None,
        }
    }

    /// The same error with the field it names renamed by `rename` (a CLI's `secs` →
    /// `--secs`).
    pub fn rename_field(self, rename: impl Fn(&str) -> String) -> Self {
        match self {
            Error::Range(mut e) => {
                e.field = rename(&e.field);
                Error::Range(e)
            }
            Error::Input { field, message } => Error::Input { field: rename(&field), message },
            other => other,
        }
    }
}

/// What a harness returns.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `e` and its sources, joined by `: ` (as a CLI shows an error's chain).
pub(crate) fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
