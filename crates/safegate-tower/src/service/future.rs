//! [`ResponseFuture`]: a rejection, a wait in the queue, or the inner future holding its
//! permit.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_service::Service;

use super::permit::{Outcome, Permit, WaitFuture};
use crate::error::Overloaded;
use crate::outcome::{ClassifyOutcome, ErrIsFailure, Verdict};
use crate::BoxError;

pin_project! {
    /// The response future of [`Admission`](crate::Admission): a rejection, a wait in the
    /// queue, or the inner future holding its permit. `K` judges the finished request
    /// ([`ClassifyOutcome`]).
    pub struct ResponseFuture<F, S, Req, K = ErrIsFailure> {
        #[pin]
        state: State<F, S, Req>,
        outcome: K,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, S, Req> {
        Rejected { err: Option<Overloaded> },
        Waiting { wait: WaitFuture, svc: Option<S>, req: Option<Req> },
        Running { #[pin] fut: F, permit: Option<Permit> },
    }
}

impl<F, S, Req, K> ResponseFuture<F, S, Req, K> {
    /// Rejected at once with `err`.
    pub(super) fn rejected(err: Overloaded, outcome: K) -> Self {
        ResponseFuture { state: State::Rejected { err: Some(err) }, outcome }
    }

    /// Waiting for a slot, then calling `svc` with `req`.
    pub(super) fn waiting(wait: WaitFuture, svc: S, req: Req, outcome: K) -> Self {
        ResponseFuture { state: State::Waiting { wait, svc: Some(svc), req: Some(req) }, outcome }
    }

    /// The inner future, under `permit`.
    #[inline]
    pub(super) fn running(fut: F, permit: Permit, outcome: K) -> Self {
        ResponseFuture { state: State::Running { fut, permit: Some(permit) }, outcome }
    }
}

impl<F, S, Req, K> std::fmt::Debug for ResponseFuture<F, S, Req, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}

impl<F, E, T, S, Req, K> ResponseFuture<F, S, Req, K>
where
    F: Future<Output = Result<T, E>>,
    S: Service<Req, Future = F, Response = T, Error = E>,
    K: ClassifyOutcome<T, E>,
{
    /// The result with its types kept: `Err(Overloaded)` for a rejection (at once or at
    /// the queue's deadline), `Ok` with the inner service's own result otherwise. The
    /// `Future` impl boxes it; the [`http`](crate::http) and `grpc` services turn the
    /// rejection into a response.
    pub(crate) fn poll_typed(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<Result<T, E>, Overloaded>> {
        let this = self.project();
        let mut state = this.state;
        let judge: &K = this.outcome;
        loop {
            match state.as_mut().project() {
                StateProj::Rejected { err } => {
                    let e = err.take().expect("ResponseFuture polled after completion");
                    return Poll::Ready(Err(e));
                }
                StateProj::Waiting { wait, svc, req } => {
                    let permit = match wait.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(p)) => p,
                    };
                    let (mut svc, req) = match (svc.take(), req.take()) {
                        (Some(s), Some(r)) => (s, r),
                        _ => unreachable!("waiting state holds its service and request"),
                    };
                    let fut = svc.call(req);
                    state.set(State::Running { fut, permit: Some(permit) });
                }
                StateProj::Running { fut, permit } => {
                    let out = match fut.poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(out) => out,
                    };
                    if let Some(mut p) = permit.take() {
                        p.outcome = match judge.verdict(&out) {
                            Verdict::Success => Outcome::Ok,
                            Verdict::Failure => Outcome::Err,
                            Verdict::Ignore => Outcome::Pending,
                        };
                    }
                    return Poll::Ready(Ok(out));
                }
            }
        }
    }
}

impl<F, E, T, S, Req, K> Future for ResponseFuture<F, S, Req, K>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    S: Service<Req, Future = F, Response = T, Error = E>,
    K: ClassifyOutcome<T, E>,
{
    type Output = Result<T, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_typed(cx).map(|r| match r {
            Ok(out) => out.map_err(Into::into),
            Err(o) => Err(Box::new(o) as BoxError),
        })
    }
}
