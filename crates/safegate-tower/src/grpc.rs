//! gRPC services: a layer whose rejections are already gRPC responses.
//!
//! [`GrpcAdmission`] is [`Admission`](crate::Admission) for the `http::Request → http::Response` services a
//! gRPC server is made of (tonic's `Routes`, a hand-written service, a hyper service
//! speaking gRPC): a rejected request is answered by the layer itself with a
//! *trailers-only* gRPC response — HTTP `200`, `content-type: application/grpc`,
//! `grpc-status: 14` (`UNAVAILABLE`), a `grpc-message` naming the
//! [`Reason`](crate::Reason) and the class, and the retry hint as metadata
//! (`grpc-retry-pushback-ms`, `retry-after`, `x-safegate-reject`), built from the
//! `tonic::Status` of [`From<Overloaded>`](crate::Overloaded#impl-From<Overloaded>-for-Status)
//! (which says why `UNAVAILABLE`). A tonic client sees `Err(status)` with
//! `status.code() == Code::Unavailable`; a client with a retry policy waits the pushback.
//!
//! Its error type is the inner service's own (`Infallible` for tonic's router), so it goes
//! straight into `tonic::transport::Server::builder().layer(…)`. Finished requests are
//! judged by [`GrpcErrorIsFailure`]: a response whose `grpc-status` header says
//! `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, `DEADLINE_EXCEEDED` or `INTERNAL` is a failure to
//! the controllers, whatever the handler's `Result` said.
//!
//! # Example: tonic
//!
//! ```no_run
//! # fn routes() -> tonic::service::Routes { tonic::service::Routes::default() }
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let addr = "127.0.0.1:50051".parse()?;
//!     tonic::transport::Server::builder()
//!         .layer(safegate_tower::grpc::layer()?)
//!         .add_routes(routes()) // or `.add_service(MyServer::new(…))`
//!         .serve(addr)
//!         .await?;
//!     Ok(())
//! }
//! ```
//!
//! `examples/tonic_server.rs` is a whole server, with a hand-written service.

use crate::answer::{Answer, Answering, AnsweringFuture, AnsweringLayer};
use crate::classify::SingleClass;
use crate::service::AdmissionLayer;
use crate::{BuildError, ClassifyOutcome, Overloaded, Verdict};

/// A layer with the defaults (`peak` under the default boundary, reject mode, at most 100
/// requests in service, one class), answering rejections with `UNAVAILABLE`.
///
/// ```
/// let layer = safegate_tower::grpc::layer().unwrap();
/// assert_eq!(layer.snapshot().limit, 100);
/// ```
pub fn layer() -> Result<GrpcAdmissionLayer, BuildError> {
    Ok(GrpcAdmissionLayer::new(crate::Builder::new().build()?))
}

/// The gRPC [`Answer`]: [`Overloaded::to_grpc_response`], a
/// trailers-only `UNAVAILABLE` with the retry pushback.
#[derive(Debug, Clone, Copy, Default)]
pub struct TrailersOnly;

impl<B: Default> Answer<B> for TrailersOnly {
    #[inline]
    fn answer(&self, o: &Overloaded) -> ::http::Response<B> {
        o.to_grpc_response()
    }
}

/// An [`AdmissionLayer`] for gRPC services: see the [module docs](self). Its methods are
/// [`AnsweringLayer`]'s.
///
/// ```
/// use safegate_tower::{grpc::GrpcAdmissionLayer, AdmissionLayer};
///
/// let layer = AdmissionLayer::builder().name("rpc").max_concurrency(32).build().unwrap();
/// let grpc = GrpcAdmissionLayer::new(layer);
/// assert_eq!((grpc.name(), grpc.snapshot().limit), ("rpc", 32));
/// ```
pub type GrpcAdmissionLayer<C = SingleClass, K = GrpcErrorIsFailure> = AnsweringLayer<C, K, TrailersOnly>;

impl<C, K> AnsweringLayer<C, K, TrailersOnly> {
    /// The gRPC form of `layer` (the same shared state), judging finished requests with
    /// [`GrpcErrorIsFailure`]; keep another judge with [`with_outcome`](Self::with_outcome).
    ///
    /// ```
    /// use safegate_tower::{grpc::GrpcAdmissionLayer, AdmissionLayer};
    ///
    /// let layer = AdmissionLayer::builder().controller("static").max_concurrency(2).build().unwrap();
    /// let grpc = GrpcAdmissionLayer::new(layer.clone());
    /// // One state: what one sees, the other sees.
    /// assert_eq!(grpc.snapshot(), layer.snapshot());
    /// ```
    pub fn new(layer: AdmissionLayer<C, K>) -> GrpcAdmissionLayer<C, GrpcErrorIsFailure> {
        AnsweringLayer::from_parts(layer, GrpcErrorIsFailure, TrailersOnly)
    }
}

/// [`Admission`](crate::Admission) for gRPC services: a rejection is a trailers-only `UNAVAILABLE` response,
/// the error is the inner service's (see the [module docs](self)).
///
/// ```
/// use std::convert::Infallible;
/// use safegate_tower::{grpc::GrpcAdmissionLayer, AdmissionLayer};
/// use tower::{service_fn, Layer, Service, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let layer = AdmissionLayer::builder().controller("static").max_concurrency(1).build().unwrap();
/// let mut svc = GrpcAdmissionLayer::new(layer).layer(service_fn(|_req: http::Request<()>| async {
///     tokio::time::sleep(std::time::Duration::from_millis(50)).await;
///     Ok::<_, Infallible>(http::Response::new(tonic::body::Body::empty()))
/// }));
/// let busy = svc.ready().await.unwrap().call(http::Request::new(()));
/// let res = svc.ready().await.unwrap().call(http::Request::new(())).await.unwrap();
/// assert_eq!(res.status(), 200);
/// assert_eq!(res.headers()["content-type"], "application/grpc");
/// assert_eq!(res.headers()["grpc-status"], "14");
/// assert!(res.headers().contains_key("grpc-retry-pushback-ms"));
/// let status = tonic::Status::from_header_map(res.headers()).unwrap();
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// assert!(status.message().contains("limit"));
/// assert!(busy.await.unwrap().headers().get("grpc-status").is_none());
/// # }
/// ```
pub type GrpcAdmission<S, C = SingleClass, K = GrpcErrorIsFailure> = Answering<S, C, K, TrailersOnly>;

/// The response future of [`GrpcAdmission`]: the inner service's result, or a
/// trailers-only `UNAVAILABLE`.
pub type GrpcResponseFuture<F, S, Req, K = GrpcErrorIsFailure> = AnsweringFuture<F, S, Req, K, TrailersOnly>;

impl Overloaded {
    /// A trailers-only gRPC response: HTTP `200`, `content-type: application/grpc`,
    /// `grpc-status: 14` (`UNAVAILABLE`), `grpc-message` and the metadata of the
    /// `tonic::Status` this rejection converts to; the body is `B::default()` (empty).
    /// What [`GrpcAdmission`] answers for a rejected request.
    ///
    /// ```
    /// use std::time::Duration;
    /// use safegate_tower::{Overloaded, Reason};
    ///
    /// let o = Overloaded { reason: Reason::Barrier, retry_after: Duration::from_millis(250), class: 1 };
    /// let res: http::Response<()> = o.to_grpc_response();
    /// assert_eq!(res.status(), 200);
    /// assert_eq!(res.headers()["grpc-status"], "14");
    /// assert_eq!(res.headers()["grpc-retry-pushback-ms"], "250");
    /// assert_eq!(res.headers()["retry-after"], "1");
    /// assert_eq!(res.headers()["x-safegate-reject"], "barrier");
    /// ```
    pub fn to_grpc_response<B: Default>(&self) -> ::http::Response<B> {
        tonic::Status::from(*self).into_http()
    }
}

/// gRPC: a response whose `grpc-status` header is `UNAVAILABLE` (14),
/// `RESOURCE_EXHAUSTED` (8), `DEADLINE_EXCEEDED` (4) or `INTERNAL` (13), or an error, is a
/// failure; any other response is a success. The default of [`GrpcAdmissionLayer`].
///
/// Those are the codes of a server that could not do the work (overloaded, out of
/// resources, too slow, broken); the others (`NOT_FOUND`, `INVALID_ARGUMENT`, …) are the
/// caller's, and say nothing of the service's health.
///
/// It reads the response's *headers*, where a unary error travels (tonic answers a
/// handler's `Err(status)` trailers-only, the status in the headers). A status sent in
/// the trailers of a body — a streaming response, or a unary one that failed after its
/// headers — comes after the response future has finished, and is not seen: such a
/// response counts as a success.
///
/// ```
/// use safegate_tower::{grpc::GrpcErrorIsFailure, ClassifyOutcome, Verdict};
///
/// let answer = |code: &str| -> Result<http::Response<()>, std::convert::Infallible> {
///     Ok(http::Response::builder().header("grpc-status", code).body(()).unwrap())
/// };
/// assert_eq!(GrpcErrorIsFailure.verdict(&answer("14")), Verdict::Failure);
/// assert_eq!(GrpcErrorIsFailure.verdict(&answer("5")), Verdict::Success); // NOT_FOUND
/// let ok: Result<_, std::convert::Infallible> = Ok(http::Response::new(()));
/// assert_eq!(GrpcErrorIsFailure.verdict(&ok), Verdict::Success);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct GrpcErrorIsFailure;

impl<B, E> ClassifyOutcome<::http::Response<B>, E> for GrpcErrorIsFailure {
    #[inline]
    fn verdict(&self, result: &Result<::http::Response<B>, E>) -> Verdict {
        let Ok(res) = result else { return Verdict::Failure };
        match res.headers().get("grpc-status").map(::http::HeaderValue::as_bytes) {
            // UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, INTERNAL.
            Some(b"14" | b"8" | b"4" | b"13") => Verdict::Failure,
            _ => Verdict::Success,
        }
    }
}
