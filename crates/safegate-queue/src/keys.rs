//! A queue's keys: all under the hash tag `{NAME}`, so every function call touches one
//! Redis Cluster slot.

use crate::QueueError;

/// The consumer group every worker reads with.
pub(crate) const GROUP: &str = "workers";

/// The keys of the queue `name`.
#[derive(Debug, Clone)]
pub(crate) struct Keys {
    pub(crate) name: String,
    pub(crate) jobs: String,
    pub(crate) gate: String,
    pub(crate) config: String,
    pub(crate) count: String,
    pub(crate) delayed: String,
    pub(crate) dead: String,
    pub(crate) leader: String,
    pub(crate) hb_prefix: String,
    pub(crate) slot_prefix: String,
}

/// Whether `name` is a queue name: 1 to 64 of `A–Z a–z 0–9 _ . -` (no braces, which would
/// break the hash tag, and no glob characters).
pub fn check_name(name: &str) -> Result<(), QueueError> {
    let ok =
        !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(QueueError::Name { name: name.chars().take(80).collect() })
    }
}

impl Keys {
    pub(crate) fn new(name: &str) -> Result<Self, QueueError> {
        check_name(name)?;
        let k = |s: &str| format!("sg:{{{name}}}:{s}");
        Ok(Self {
            name: name.to_string(),
            jobs: k("jobs"),
            gate: k("gate"),
            config: k("config"),
            count: k("count"),
            delayed: k("delayed"),
            dead: k("dead"),
            leader: k("leader"),
            hb_prefix: k("hb:"),
            slot_prefix: k("slot:"),
        })
    }

    /// The keys `sg_enqueue` takes, in its order.
    pub(crate) fn enqueue(&self) -> [&str; 5] {
        [&self.jobs, &self.gate, &self.config, &self.count, &self.delayed]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_one_hash_tag() {
        let k = Keys::new("emails").unwrap();
        assert_eq!(k.jobs, "sg:{emails}:jobs");
        assert_eq!(k.hb_prefix, "sg:{emails}:hb:");
        for bad in ["", "a{b}", "a b", "x*", &"n".repeat(65)] {
            assert!(matches!(Keys::new(bad), Err(QueueError::Name { .. })), "{bad:?}");
        }
    }
}
