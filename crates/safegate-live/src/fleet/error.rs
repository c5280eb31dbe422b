//! Errors of a fleet run and of a gate process: each names the setting or the service it
//! is about.

use crate::LiveError;

/// What went wrong in a fleet run or a gate process.
#[derive(Debug, thiserror::Error)]
pub enum FleetError {
    /// A setting of the [`Plan`](super::Plan) out of range; the message starts with its
    /// name as the plan spells it (`lease_ms`, `outage`).
    #[error("{0}")]
    Plan(String),
    /// A value out of range (the gate's keeper).
    #[error(transparent)]
    Range(#[from] safegate_core::RangeError),
    /// Redis, the downstream or a listening socket.
    #[error(transparent)]
    Live(#[from] LiveError),
    /// A process could not be started or read, or a line could not be written.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
    /// Something a run needs is missing (a gate's output pipe).
    #[error("{0}")]
    Missing(&'static str),
}
