//! [`ResponseFuture`]: a rejection, a wait in the queue, or the inner future holding its
//! permit.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_service::Service;

use super::permit::{Outcome, Permit, WaitFuture};
use crate::error::Overloaded;
use crate::BoxError;

pin_project! {
    /// The response future of [`Admission`](crate::Admission): a rejection, a wait in the
    /// queue, or the inner future holding its permit.
    pub struct ResponseFuture<F, S, Req> {
        #[pin]
        state: State<F, S, Req>,
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

impl<F, S, Req> ResponseFuture<F, S, Req> {
    /// Rejected at once with `err`.
    pub(super) fn rejected(err: Overloaded) -> Self {
        ResponseFuture { state: State::Rejected { err: Some(err) } }
    }

    /// Waiting for a slot, then calling `svc` with `req`.
    pub(super) fn waiting(wait: WaitFuture, svc: S, req: Req) -> Self {
        ResponseFuture { state: State::Waiting { wait, svc: Some(svc), req: Some(req) } }
    }

    /// The inner future, under `permit`.
    #[inline]
    pub(super) fn running(fut: F, permit: Permit) -> Self {
        ResponseFuture { state: State::Running { fut, permit: Some(permit) } }
    }
}

impl<F, S, Req> std::fmt::Debug for ResponseFuture<F, S, Req> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseFuture")
    }
}

impl<F, E, T, S, Req> Future for ResponseFuture<F, S, Req>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    S: Service<Req, Future = F, Response = T, Error = E>,
{
    type Output = Result<T, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        loop {
            match state.as_mut().project() {
                StateProj::Rejected { err } => {
                    let e = err.take().expect("ResponseFuture polled after completion");
                    return Poll::Ready(Err(Box::new(e)));
                }
                StateProj::Waiting { wait, svc, req } => {
                    let permit = match wait.as_mut().poll(cx) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(Box::new(e))),
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
                        p.outcome = if out.is_ok() { Outcome::Ok } else { Outcome::Err };
                    }
                    return Poll::Ready(out.map_err(Into::into));
                }
            }
        }
    }
}
