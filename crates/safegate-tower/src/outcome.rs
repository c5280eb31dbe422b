//! Response classification: which finished requests the controllers count as failures.
//!
//! Only the service knows that a `200` carried an error page or that a `503` came from the
//! database behind it; a limiter that counts every response as a success climbs into a
//! failing dependency. tower-acc's `Classifier` is the anchor: each finished request is
//! judged once, when its response future completes, and the judgement is what the
//! controllers see ([`safegate_core::Observation::failed`]): the windowed limiters (Vegas,
//! AIMD) read a failure in a window as a drop, `peak` climbs successes, not completions.
//!
//! | classifier | success | failure | ignored |
//! |---|---|---|---|
//! | [`ErrIsFailure`] (the default) | `Ok` | `Err` (the inner error, a downstream [`Overloaded`](crate::Overloaded), a timeout) | — |
//! | [`ServerErrorIsFailure`] (`http`, [`crate::http`]'s default) | `Ok`, status < 500 | `Err`, status ≥ 500 | — |
//! | a closure `Fn(&Result<T, E>) -> Verdict` | as it says | as it says | as it says |
//!
//! An ignored request counts like a cancelled one: it left, and tells nothing of the
//! service (a client's own `499`, say).

/// How a finished request counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The service did its work.
    Success,
    /// The service failed: the controllers see a failure (a drop).
    Failure,
    /// Neither: counted like a cancelled request.
    Ignore,
}

/// Judges a finished request by its result (the inner service's response or error).
///
/// Any `Fn(&Result<T, E>) -> Verdict` is a classifier:
///
/// ```
/// use safegate_tower::{AdmissionLayer, Verdict};
///
/// // A service whose responses say whether they worked.
/// let layer = AdmissionLayer::builder().build().unwrap().with_outcome(
///     |r: &Result<(u16, String), std::convert::Infallible>| match r {
///         Ok((code, _)) if *code >= 500 => Verdict::Failure,
///         Ok((499, _)) => Verdict::Ignore,
///         _ => Verdict::Success,
///     },
/// );
/// # drop(layer);
/// ```
pub trait ClassifyOutcome<T, E> {
    /// The verdict on one finished request.
    fn verdict(&self, result: &Result<T, E>) -> Verdict;
}

/// The default: an `Ok` is a success, an `Err` a failure (whatever the error: the inner
/// service's, an [`Overloaded`](crate::Overloaded) from a layer further down, a timeout).
#[derive(Debug, Clone, Copy, Default)]
pub struct ErrIsFailure;

impl<T, E> ClassifyOutcome<T, E> for ErrIsFailure {
    #[inline]
    fn verdict(&self, result: &Result<T, E>) -> Verdict {
        if result.is_ok() {
            Verdict::Success
        } else {
            Verdict::Failure
        }
    }
}

impl<T, E, F: Fn(&Result<T, E>) -> Verdict> ClassifyOutcome<T, E> for F {
    #[inline]
    fn verdict(&self, result: &Result<T, E>) -> Verdict {
        self(result)
    }
}

/// HTTP: a response with a `5xx` status, or an error, is a failure; any other response is
/// a success. The default of [`crate::http`]'s layer.
///
/// ```
/// use safegate_tower::{ClassifyOutcome, ServerErrorIsFailure, Verdict};
///
/// let res = http::Response::builder().status(500).body(()).unwrap();
/// let ok: Result<_, std::convert::Infallible> = Ok(res);
/// assert_eq!(ServerErrorIsFailure.verdict(&ok), Verdict::Failure);
/// ```
#[cfg(feature = "http")]
#[derive(Debug, Clone, Copy, Default)]
pub struct ServerErrorIsFailure;

#[cfg(feature = "http")]
impl<B, E> ClassifyOutcome<http::Response<B>, E> for ServerErrorIsFailure {
    #[inline]
    fn verdict(&self, result: &Result<http::Response<B>, E>) -> Verdict {
        match result {
            Ok(res) if !res.status().is_server_error() => Verdict::Success,
            _ => Verdict::Failure,
        }
    }
}
