//! A layer whose rejections are already responses, for any protocol over `http`: the
//! machinery shared by [`http::HttpAdmissionLayer`](crate::http::HttpAdmissionLayer) (a
//! `503`) and, with the `tonic` feature, `grpc::GrpcAdmissionLayer` (a trailers-only
//! `UNAVAILABLE`). They differ only in their [`Answer`] and their default judge of
//! finished requests.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::Classify;
use crate::outcome::ClassifyOutcome;
use crate::service::{Admission, AdmissionLayer, ResponseFuture, Snapshot};
use crate::Overloaded;

/// How a protocol answers a rejected request: the response the layer sends in its place,
/// with a body of type `B`. [`Json503`](crate::http::Json503) for HTTP, `grpc::TrailersOnly`
/// for gRPC.
///
/// ```
/// use std::time::Duration;
/// use safegate_tower::http::{Answer, Json503};
/// use safegate_tower::{Overloaded, Reason};
///
/// let o = Overloaded { reason: Reason::Limit, retry_after: Duration::from_secs(1), class: 0 };
/// let res: http::Response<String> = Json503.answer(&o);
/// assert_eq!(res.status(), 503);
/// ```
pub trait Answer<B> {
    /// The response for the rejection `o`.
    fn answer(&self, o: &Overloaded) -> ::http::Response<B>;
}

/// An [`AdmissionLayer`] whose rejections are answered with `A`'s responses: the type
/// behind [`HttpAdmissionLayer`](crate::http::HttpAdmissionLayer) and
/// `grpc::GrpcAdmissionLayer`.
#[derive(Debug, Clone)]
pub struct AnsweringLayer<C, K, A> {
    inner: AdmissionLayer<C, K>,
    answer: A,
}

impl<C, K, A> AnsweringLayer<C, K, A> {
    /// `layer` (the same shared state), answering rejections with `answer` and judging
    /// finished requests with `outcome`.
    pub(crate) fn from_parts<K0>(layer: AdmissionLayer<C, K0>, outcome: K, answer: A) -> Self {
        AnsweringLayer { inner: layer.with_outcome(outcome), answer }
    }

    /// The same layer with another response classifier.
    ///
    /// ```
    /// use safegate_tower::{http, ErrIsFailure};
    ///
    /// // Count only the inner service's `Err` as a failure, not `5xx` answers.
    /// let layer = http::layer().unwrap().with_outcome(ErrIsFailure);
    /// # drop(layer);
    /// ```
    pub fn with_outcome<K2>(self, outcome: K2) -> AnsweringLayer<C, K2, A> {
        AnsweringLayer { inner: self.inner.with_outcome(outcome), answer: self.answer }
    }

    /// What the layer has seen and decided so far.
    ///
    /// ```
    /// let layer = safegate_tower::http::layer().unwrap();
    /// assert_eq!(layer.snapshot().in_flight, 0);
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// The layer's name: the `layer` label of its metrics.
    ///
    /// ```
    /// use safegate_tower::AdmissionLayer;
    ///
    /// let layer = AdmissionLayer::builder().name("api").build_http().unwrap();
    /// assert_eq!(layer.name(), "api");
    /// ```
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The admission layer underneath (its rejections are errors, not responses).
    ///
    /// ```
    /// let layer = safegate_tower::http::layer().unwrap().into_inner();
    /// assert_eq!(layer.snapshot().limit, 100);
    /// ```
    pub fn into_inner(self) -> AdmissionLayer<C, K> {
        self.inner
    }
}

impl<S, C: Clone, K: Clone, A: Clone> Layer<S> for AnsweringLayer<C, K, A> {
    type Service = Answering<S, C, K, A>;

    fn layer(&self, inner: S) -> Self::Service {
        Answering { inner: self.inner.layer(inner), answer: self.answer.clone() }
    }
}

/// [`Admission`] whose rejections are answered with `A`'s responses; its error is the inner
/// service's. The type behind [`HttpAdmission`](crate::http::HttpAdmission) and
/// `grpc::GrpcAdmission`.
#[derive(Debug, Clone)]
pub struct Answering<S, C, K, A> {
    inner: Admission<S, C, K>,
    answer: A,
}

impl<S, C, K, A> Answering<S, C, K, A> {
    /// What the layer has seen and decided so far (shared by all clones).
    ///
    /// ```
    /// use tower::{service_fn, Layer};
    ///
    /// let svc = safegate_tower::http::layer().unwrap().layer(service_fn(|_: http::Request<()>| async {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(String::new()))
    /// }));
    /// assert_eq!(svc.snapshot().completed, 0);
    /// ```
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// The wrapped service.
    ///
    /// ```
    /// use tower::Layer;
    ///
    /// let svc = safegate_tower::http::layer().unwrap().layer(7_u32);
    /// assert_eq!(*svc.get_ref(), 7);
    /// ```
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref()
    }

    /// The wrapped service, mutably.
    ///
    /// ```
    /// use tower::Layer;
    ///
    /// let mut svc = safegate_tower::http::layer().unwrap().layer(7_u32);
    /// *svc.get_mut() += 1;
    /// assert_eq!(*svc.get_ref(), 8);
    /// ```
    pub fn get_mut(&mut self) -> &mut S {
        self.inner.get_mut()
    }

    /// The wrapped service, taken out of the layer.
    ///
    /// ```
    /// use tower::Layer;
    ///
    /// let svc = safegate_tower::http::layer().unwrap().layer(7_u32);
    /// assert_eq!(svc.into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> S {
        self.inner.into_inner()
    }
}

impl<S, C, K, A, ReqB, ResB> Service<::http::Request<ReqB>> for Answering<S, C, K, A>
where
    S: Service<::http::Request<ReqB>, Response = ::http::Response<ResB>> + Clone,
    C: Classify<::http::Request<ReqB>>,
    K: ClassifyOutcome<::http::Response<ResB>, S::Error> + Clone,
    A: Answer<ResB> + Clone,
{
    type Response = ::http::Response<ResB>;
    type Error = S::Error;
    type Future = AnsweringFuture<S::Future, S, ::http::Request<ReqB>, K, A>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.get_mut().poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, req: ::http::Request<ReqB>) -> Self::Future {
        AnsweringFuture { inner: self.inner.call_typed(req), answer: self.answer.clone() }
    }
}

pin_project! {
    /// The response future of [`Answering`]: the inner service's result, or `A`'s answer
    /// to the rejection.
    pub struct AnsweringFuture<F, S, Req, K, A> {
        #[pin]
        inner: ResponseFuture<F, S, Req, K>,
        answer: A,
    }
}

impl<F, S, Req, K, A> std::fmt::Debug for AnsweringFuture<F, S, Req, K, A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AnsweringFuture")
    }
}

impl<F, E, ResB, S, Req, K, A> Future for AnsweringFuture<F, S, Req, K, A>
where
    F: Future<Output = Result<::http::Response<ResB>, E>>,
    S: Service<Req, Future = F, Response = ::http::Response<ResB>, Error = E>,
    K: ClassifyOutcome<::http::Response<ResB>, E>,
    A: Answer<ResB>,
{
    type Output = Result<::http::Response<ResB>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let answer = &*this.answer;
        this.inner.poll_typed(cx).map(|r| match r {
            Ok(out) => out,
            Err(o) => Ok(answer.answer(&o)),
        })
    }
}
