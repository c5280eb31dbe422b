//! [`AdmissionLayer`]: one shared admission state for every service it wraps.

use std::sync::Arc;

use tower_layer::Layer;

use super::{Admission, Snapshot};
use crate::classify::SingleClass;
use crate::outcome::ErrIsFailure;
use crate::shared::{Owner, Shared};

/// A tower [`Layer`] that puts every service it wraps under one shared admission
/// controller (one limit per layer: all services and clones made from it share it).
///
/// Build it with [`AdmissionLayer::builder`]. `C` gives a request's priority class
/// ([`Classify`](crate::Classify)), `K` judges its result
/// ([`ClassifyOutcome`](crate::ClassifyOutcome)).
///
/// ```
/// use safegate_tower::AdmissionLayer;
///
/// let layer = AdmissionLayer::builder().name("api").max_concurrency(64).build().unwrap();
/// assert_eq!(layer.snapshot().limit, 64);
/// assert_eq!(layer.name(), "api");
/// ```
#[derive(Debug, Clone)]
pub struct AdmissionLayer<C = SingleClass, K = ErrIsFailure> {
    pub(crate) shared: Arc<Owner<Shared>>,
    pub(crate) classify: C,
    pub(crate) outcome: K,
}

impl AdmissionLayer<SingleClass> {
    /// A builder with the defaults: `peak` under the default boundary, reject mode,
    /// at most 100 requests in service, one class.
    pub fn builder() -> crate::Builder<SingleClass> {
        crate::Builder::new()
    }
}

impl<C, K> AdmissionLayer<C, K> {
    /// What the layer has seen and decided so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.shared)
    }

    /// The layer's name ([`Builder::name`](crate::Builder::name)): the `layer` label of
    /// its metrics.
    pub fn name(&self) -> &str {
        &self.shared.settings.name
    }

    /// The same layer state with another priority classifier.
    pub fn with_classifier<C2>(self, classify: C2) -> AdmissionLayer<C2, K> {
        AdmissionLayer { shared: self.shared, classify, outcome: self.outcome }
    }

    /// The same layer state with another response classifier: which finished requests
    /// count as failures ([`ClassifyOutcome`](crate::ClassifyOutcome)).
    pub fn with_outcome<K2>(self, outcome: K2) -> AdmissionLayer<C, K2> {
        AdmissionLayer { shared: self.shared, classify: self.classify, outcome }
    }
}

impl<S, C: Clone, K: Clone> Layer<S> for AdmissionLayer<C, K> {
    type Service = Admission<S, C, K>;

    fn layer(&self, inner: S) -> Self::Service {
        Admission::new(inner, self.shared.clone(), self.classify.clone(), self.outcome.clone())
    }
}
