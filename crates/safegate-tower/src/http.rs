//! HTTP services: a layer whose rejections are already responses.
//!
//! [`HttpAdmission`] is [`Admission`] for `http::Request → http::Response` services (axum,
//! hyper, tonic's transport): a rejected request is answered by the layer itself with
//! `503 Service Unavailable`, a `Retry-After` header (RFC 9110 §10.2.3), an
//! `x-safegate-reject` header naming the [`Reason`](crate::Reason) and a JSON body:
//!
//! ```text
//! {"error":"overloaded","reason":"limit","retry_after_secs":1,"class":0}
//! ```
//!
//! Its error type is the inner service's own (`Infallible` for an axum `Router`), so axum
//! takes it with no `HandleErrorLayer` and no mapper in user code. Finished requests are
//! judged by [`ServerErrorIsFailure`]: a `5xx` response is a failure to the controllers,
//! whatever the handler's `Result` said.
//!
//! # Example: axum
//!
//! ```no_run
//! use axum::{routing::get, Router};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let app = Router::new()
//!         .route("/", get(|| async { "hello" }))
//!         .layer(safegate_tower::http::layer()?);
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     axum::serve(listener, app).await?;
//!     Ok(())
//! }
//! ```
//!
//! A layer built with settings: [`Builder::build_http`](crate::Builder::build_http).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tower_layer::Layer;
use tower_service::Service;

use crate::classify::{Classify, SingleClass};
use crate::outcome::{ClassifyOutcome, ServerErrorIsFailure};
use crate::service::{Admission, AdmissionLayer, ResponseFuture, Snapshot};
use crate::{BuildError, Overloaded};

/// A layer with the defaults (`peak` under the default boundary, reject mode, at most 100
/// requests in service, one class), answering rejections with `503`.
///
/// ```
/// let layer = safegate_tower::http::layer().unwrap();
/// assert_eq!(layer.snapshot().limit, 100);
/// ```
pub fn layer() -> Result<HttpAdmissionLayer, BuildError> {
    crate::Builder::new().build_http()
}

/// An [`AdmissionLayer`] for HTTP services: see the [module docs](self).
///
/// ```
/// use safegate_tower::{http::HttpAdmissionLayer, AdmissionLayer};
///
/// let layer = AdmissionLayer::builder().name("api").max_concurrency(32).build().unwrap();
/// let http = HttpAdmissionLayer::new(layer);
/// assert_eq!((http.name(), http.snapshot().limit), ("api", 32));
/// ```
#[derive(Debug, Clone)]
pub struct HttpAdmissionLayer<C = SingleClass, K = ServerErrorIsFailure> {
    inner: AdmissionLayer<C, K>,
}

impl<C, K> HttpAdmissionLayer<C, K> {
    /// The HTTP form of `layer` (the same shared state), judging finished requests with
    /// [`ServerErrorIsFailure`]; keep another judge with [`with_outcome`](Self::with_outcome).
    pub fn new(layer: AdmissionLayer<C, K>) -> HttpAdmissionLayer<C, ServerErrorIsFailure> {
        HttpAdmissionLayer { inner: layer.with_outcome(ServerErrorIsFailure) }
    }

    /// The same layer with another response classifier.
    pub fn with_outcome<K2>(self, outcome: K2) -> HttpAdmissionLayer<C, K2> {
        HttpAdmissionLayer { inner: self.inner.with_outcome(outcome) }
    }

    /// What the layer has seen and decided so far.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// The layer's name: the `layer` label of its metrics.
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// The admission layer underneath (its rejections are errors, not responses).
    pub fn into_inner(self) -> AdmissionLayer<C, K> {
        self.inner
    }
}

impl<S, C: Clone, K: Clone> Layer<S> for HttpAdmissionLayer<C, K> {
    type Service = HttpAdmission<S, C, K>;

    fn layer(&self, inner: S) -> Self::Service {
        HttpAdmission { inner: self.inner.layer(inner) }
    }
}

/// [`Admission`] for HTTP services: a rejection is a `503` response, the error is the inner
/// service's (see the [module docs](self)).
///
/// ```
/// use std::convert::Infallible;
/// use safegate_tower::AdmissionLayer;
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let layer = AdmissionLayer::builder().controller("static").max_concurrency(1).build_http().unwrap();
/// let mut svc = layer.layer(service_fn(|_req: http::Request<String>| async {
///     tokio::time::sleep(std::time::Duration::from_millis(50)).await;
///     Ok::<_, Infallible>(http::Response::new(String::from("done")))
/// }));
/// let busy = svc.ready().await.unwrap().call(http::Request::new(String::new()));
/// let res = svc.ready().await.unwrap().call(http::Request::new(String::new())).await.unwrap();
/// assert_eq!(res.status(), 503);
/// assert!(res.headers().contains_key("retry-after"));
/// assert!(res.body().contains("\"reason\":\"limit\""));
/// assert_eq!(busy.await.unwrap().status(), 200);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct HttpAdmission<S, C = SingleClass, K = ServerErrorIsFailure> {
    inner: Admission<S, C, K>,
}

impl<S, C, K> HttpAdmission<S, C, K> {
    /// What the layer has seen and decided so far (shared by all clones).
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref()
    }

    /// The wrapped service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        self.inner.get_mut()
    }

    /// The wrapped service, taken out of the layer.
    pub fn into_inner(self) -> S {
        self.inner.into_inner()
    }
}

impl<S, C, K, ReqB, ResB> Service<::http::Request<ReqB>> for HttpAdmission<S, C, K>
where
    S: Service<::http::Request<ReqB>, Response = ::http::Response<ResB>> + Clone,
    C: Classify<::http::Request<ReqB>>,
    K: ClassifyOutcome<::http::Response<ResB>, S::Error> + Clone,
    ResB: From<String>,
{
    type Response = ::http::Response<ResB>;
    type Error = S::Error;
    type Future = HttpResponseFuture<S::Future, S, ::http::Request<ReqB>, K>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.get_mut().poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, req: ::http::Request<ReqB>) -> Self::Future {
        HttpResponseFuture { inner: self.inner.call_typed(req) }
    }
}

pin_project! {
    /// The response future of [`HttpAdmission`]: the inner service's result, or a `503`.
    pub struct HttpResponseFuture<F, S, Req, K = ServerErrorIsFailure> {
        #[pin]
        inner: ResponseFuture<F, S, Req, K>,
    }
}

impl<F, S, Req, K> std::fmt::Debug for HttpResponseFuture<F, S, Req, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("HttpResponseFuture")
    }
}

impl<F, E, ResB, S, Req, K> Future for HttpResponseFuture<F, S, Req, K>
where
    F: Future<Output = Result<::http::Response<ResB>, E>>,
    S: Service<Req, Future = F, Response = ::http::Response<ResB>, Error = E>,
    K: ClassifyOutcome<::http::Response<ResB>, E>,
    ResB: From<String>,
{
    type Output = Result<::http::Response<ResB>, E>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll_typed(cx).map(|r| match r {
            Ok(out) => out,
            Err(o) => Ok(o.to_json_response()),
        })
    }
}

impl Overloaded {
    /// The JSON body of a `503`: `{"error":"overloaded","reason":…,"retry_after_secs":…,"class":…}`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use safegate_tower::{Overloaded, Reason};
    ///
    /// let o = Overloaded { reason: Reason::Barrier, retry_after: Duration::from_millis(1500), class: 1 };
    /// assert_eq!(o.to_json(), r#"{"error":"overloaded","reason":"barrier","retry_after_secs":2,"class":1}"#);
    /// ```
    pub fn to_json(&self) -> String {
        format!(
            r#"{{"error":"overloaded","reason":"{}","retry_after_secs":{},"class":{}}}"#,
            self.reason.as_str(),
            self.retry_after_secs(),
            self.class
        )
    }

    /// A `503` response with `Retry-After`, `x-safegate-reject`, `content-type:
    /// application/json` and [`to_json`](Self::to_json) as its body: what
    /// [`HttpAdmission`] answers for a rejected request.
    pub fn to_json_response<B: From<String>>(&self) -> ::http::Response<B> {
        let mut res = self.to_response::<()>().map(|()| B::from(self.to_json()));
        res.headers_mut().insert(::http::header::CONTENT_TYPE, ::http::HeaderValue::from_static("application/json"));
        res
    }
}
