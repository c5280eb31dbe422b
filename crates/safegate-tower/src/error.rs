//! The typed rejection ([`Overloaded`]) and build errors ([`BuildError`]).

use std::fmt;
use std::time::Duration;

use crate::reason::Reason;

/// The error an [`Admission`](crate::Admission) service returns for a request it did not
/// admit (boxed into the service's [`BoxError`](crate::BoxError); recover it with
/// `err.downcast_ref::<Overloaded>()`).
///
/// It maps to HTTP `503 Service Unavailable` with a `Retry-After` header
/// ([RFC 9110 §15.6.4 and §10.2.3](https://www.rfc-editor.org/rfc/rfc9110)):
/// [`Overloaded::STATUS`], [`Overloaded::retry_after_secs`], and with the `http` feature
/// [`Overloaded::to_response`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded {
    /// Why the request was rejected.
    pub reason: Reason,
    /// How long the client should wait before retrying: the time the layer expects its
    /// present backlog to take to clear at the measured completion rate, at least one
    /// decision period (longer after a backup activation).
    pub retry_after: Duration,
    /// The request's priority class (0 is the most important).
    pub class: u8,
}

impl Overloaded {
    /// The HTTP status an overloaded rejection maps to: `503 Service Unavailable`.
    pub const STATUS: u16 = 503;

    /// `Retry-After` in whole seconds (RFC 9110 `delay-seconds`): the hint rounded up, at
    /// least 1.
    pub fn retry_after_secs(&self) -> u64 {
        let s = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        s.max(1)
    }

    /// A `503` response with `Retry-After` and an `x-safegate-reject` header naming the
    /// reason; the body is `B::default()`.
    #[cfg(feature = "http")]
    pub fn to_response<B: Default>(&self) -> http::Response<B> {
        let mut res = http::Response::new(B::default());
        *res.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
        let h = res.headers_mut();
        h.insert(http::header::RETRY_AFTER, http::HeaderValue::from(self.retry_after_secs()));
        h.insert("x-safegate-reject", http::HeaderValue::from_static(self.reason.as_str()));
        res
    }
}

impl fmt::Display for Overloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "overloaded ({}), class {}: retry after {:.3} s",
            self.reason,
            self.class,
            self.retry_after.as_secs_f64()
        )
    }
}

impl std::error::Error for Overloaded {}

/// Why an [`AdmissionLayer`](crate::AdmissionLayer) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The boundary file could not be read.
    #[error("reading boundary {path}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The boundary file is not valid TOML for a boundary (unknown keys are errors).
    #[error("parsing boundary {origin}: {message}")]
    Parse {
        /// The file name or `"<text>"`.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// The boundary has a value out of range for this layer's capacity.
    #[error("boundary: {0}")]
    Boundary(#[from] safegate_core::RangeError),
    /// The controller name is not one of `safegate_core::controllers::NAMES`.
    #[error(transparent)]
    Controller(#[from] safegate_core::controllers::UnknownController),
    /// The filter rejected its configuration.
    #[error("filter: {0}")]
    Filter(String),
    /// A builder setting is out of range (the field is the builder method).
    #[error("{0}")]
    Setting(safegate_core::RangeError),
}

/// gRPC: a rejection as `UNAVAILABLE` (code 14) with the server's retry pushback.
///
/// Why `UNAVAILABLE` and not `RESOURCE_EXHAUSTED`: gRPC's status-code guide calls
/// `UNAVAILABLE` "most likely a transient condition, which can be corrected by retrying
/// with a backoff" — what a shed request is — while `RESOURCE_EXHAUSTED` is for an
/// exhausted quota or per-user resource, and clients' default retry policies do not retry
/// it. The message is the rejection's [`Display`](fmt::Display) (reason and class); the
/// metadata carries the hint twice:
///
/// - `grpc-retry-pushback-ms`: [`retry_after`](Overloaded::retry_after) in whole
///   milliseconds (rounded up, at least 1), the server pushback of gRPC's retry design
///   (A6), which a client with a retry policy waits before its next attempt;
/// - `retry-after`: [`retry_after_secs`](Overloaded::retry_after_secs), as on HTTP;
/// - `x-safegate-reject`: the [`Reason`], as on HTTP.
///
/// ```
/// use std::time::Duration;
/// use safegate_tower::{Overloaded, Reason};
///
/// let o = Overloaded { reason: Reason::Limit, retry_after: Duration::from_millis(1500), class: 0 };
/// let status = tonic::Status::from(o);
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// assert!(status.message().contains("limit") && status.message().contains("class 0"));
/// assert_eq!(status.metadata().get("grpc-retry-pushback-ms").unwrap(), "1500");
/// assert_eq!(status.metadata().get("retry-after").unwrap(), "2");
/// ```
#[cfg(feature = "tonic")]
impl From<Overloaded> for tonic::Status {
    fn from(o: Overloaded) -> Self {
        let mut status = tonic::Status::unavailable(o.to_string());
        let md = status.metadata_mut();
        md.insert("grpc-retry-pushback-ms", tonic::metadata::MetadataValue::from(o.retry_after_ms()));
        md.insert("retry-after", tonic::metadata::MetadataValue::from(o.retry_after_secs()));
        md.insert("x-safegate-reject", tonic::metadata::MetadataValue::from_static(o.reason.as_str()));
        status
    }
}

#[cfg(feature = "tonic")]
impl Overloaded {
    /// The hint in whole milliseconds, rounded up, at least 1 (`grpc-retry-pushback-ms`).
    fn retry_after_ms(&self) -> u64 {
        let ms = self.retry_after.as_nanos().div_ceil(1_000_000);
        u64::try_from(ms).unwrap_or(u64::MAX).max(1)
    }
}
