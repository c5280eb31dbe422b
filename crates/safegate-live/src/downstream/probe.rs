//! Checking that a downstream given by URL accepts connections.

use std::time::Duration;

use crate::LiveError;

/// Check that a downstream at `url` (`http://HOST:PORT…`) accepts connections, within 2 s.
pub async fn probe(url: &str) -> Result<(), LiveError> {
    let err = |message: String| LiveError::Downstream { url: url.to_string(), message };
    let rest =
        url.strip_prefix("http://").ok_or_else(|| err("expected http://HOST:PORT (https is not supported)".into()))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(err("no host in the URL".into()));
    }
    let target = if authority.contains(':') { authority.to_string() } else { format!("{authority}:80") };
    match tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(&target)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(err(format!("cannot connect: {e}"))),
        Err(_) => Err(err("no answer to a connection within 2 s".into())),
    }
}
