//! One connection type over a single Redis and a Redis Cluster.

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection to one server (reconnecting, or a lane's own) or to a cluster (routing
/// each call by its keys' slot, following redirections).
#[derive(Clone)]
pub(crate) enum Con {
    /// The shared, reconnecting connection to one server.
    Single(ConnectionManager),
    /// A lane's own connection to one server (its blocking reads stall nothing else).
    Own(MultiplexedConnection),
    /// A connection to a cluster (a lane gets its own).
    Cluster(ClusterConnection),
}

impl ConnectionLike for Con {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Con::Single(c) => c.req_packed_command(cmd),
            Con::Own(c) => c.req_packed_command(cmd),
            Con::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Con::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Con::Own(c) => c.req_packed_commands(pipeline, offset, count),
            Con::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Con::Single(c) => c.get_db(),
            Con::Own(c) => c.get_db(),
            Con::Cluster(c) => c.get_db(),
        }
    }
}
