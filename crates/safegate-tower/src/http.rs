//! HTTP services: a layer whose rejections are already responses.
//!
//! [`HttpAdmission`] is [`Admission`](crate::Admission) for `http::Request → http::Response` services (axum,
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

pub use crate::answer::{Answer, Answering, AnsweringFuture, AnsweringLayer};
use crate::classify::SingleClass;
use crate::outcome::ServerErrorIsFailure;
use crate::service::AdmissionLayer;
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

/// The HTTP [`Answer`]: [`Overloaded::to_json_response`], a `503` with `Retry-After`,
/// `x-safegate-reject` and a JSON body.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json503;

impl<B: From<String>> Answer<B> for Json503 {
    #[inline]
    fn answer(&self, o: &Overloaded) -> ::http::Response<B> {
        o.to_json_response()
    }
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
pub type HttpAdmissionLayer<C = SingleClass, K = ServerErrorIsFailure> = AnsweringLayer<C, K, Json503>;

impl<C, K> AnsweringLayer<C, K, Json503> {
    /// The HTTP form of `layer` (the same shared state), judging finished requests with
    /// [`ServerErrorIsFailure`]; keep another judge with [`with_outcome`](Self::with_outcome).
    pub fn new(layer: AdmissionLayer<C, K>) -> HttpAdmissionLayer<C, ServerErrorIsFailure> {
        AnsweringLayer::from_parts(layer, ServerErrorIsFailure, Json503)
    }
}

/// [`Admission`](crate::Admission) for HTTP services: a rejection is a `503` response, the
/// error is the inner service's (see the [module docs](self)).
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
pub type HttpAdmission<S, C = SingleClass, K = ServerErrorIsFailure> = Answering<S, C, K, Json503>;

/// The response future of [`HttpAdmission`]: the inner service's result, or a `503`.
pub type HttpResponseFuture<F, S, Req, K = ServerErrorIsFailure> = AnsweringFuture<F, S, Req, K, Json503>;

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
