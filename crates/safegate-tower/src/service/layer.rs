//! [`AdmissionLayer`]: one shared admission state for every service it wraps.

use std::sync::Arc;

use tower_layer::Layer;

use super::{Admission, Snapshot};
use crate::classify::SingleClass;
use crate::shared::{Owner, Shared};

/// A tower [`Layer`] that puts every service it wraps under one shared admission
/// controller (one limit per layer: all services and clones made from it share it).
///
/// Build it with [`AdmissionLayer::builder`].
#[derive(Debug, Clone)]
pub struct AdmissionLayer<C = SingleClass> {
    pub(crate) shared: Arc<Owner<Shared>>,
    pub(crate) classify: C,
}

impl AdmissionLayer<SingleClass> {
    /// A builder with the defaults: `peak` under the default boundary, reject mode,
    /// at most 100 requests in service, one class.
    pub fn builder() -> crate::Builder<SingleClass> {
        crate::Builder::new()
    }
}

impl<C> AdmissionLayer<C> {
    /// What the layer has seen and decided so far.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot::of(&self.shared)
    }

    /// The same layer state with another priority classifier.
    pub fn with_classifier<C2>(self, classify: C2) -> AdmissionLayer<C2> {
        AdmissionLayer { shared: self.shared, classify }
    }
}

impl<S, C: Clone> Layer<S> for AdmissionLayer<C> {
    type Service = Admission<S, C>;

    fn layer(&self, inner: S) -> Self::Service {
        Admission::new(inner, self.shared.clone(), self.classify.clone())
    }
}
