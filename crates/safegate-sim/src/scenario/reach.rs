//! Which keys of a scenario a run reads. Some keys are read only with others: the dip's
//! start only with `health.kind = "dip"`, the retry probability only with retries on, a
//! service law's parameter only with that law. A command-line override of a key nothing
//! reads would change nothing and be shown as a change; [`Scenario::unread`] says why a
//! key is not read, so the command can refuse it.

use super::schema::{HealthKind, LawKind, Mode, RetryKind};
use super::Scenario;

fn health_kind(k: HealthKind) -> &'static str {
    match k {
        HealthKind::Constant => "constant",
        HealthKind::Cycle => "cycle",
        HealthKind::Dip => "dip",
        HealthKind::Trace => "trace",
    }
}

fn law(k: LawKind) -> &'static str {
    match k {
        LawKind::Exponential => "exponential",
        LawKind::Pareto => "pareto",
        LawKind::Lognormal => "lognormal",
    }
}

/// An override's key that a run does not read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// The key, as the override names it (a value inside a table override: its full path).
    pub key: String,
    /// Why nothing reads it, naming the key that decides (`read only with health.kind =
    /// "dip"; this scenario's is "cycle"`).
    pub why: String,
}

impl Scenario {
    /// Why no run of this scenario reads `key` (a dotted path, as `--set` names it), or
    /// `None` when a run reads it. Only what the scenario's own kinds decide: the dip's
    /// `start` without a dip, the shape with a trace, `noise_period` without noise, the
    /// retry rule's values with retries off (or its rule with a retry probability of 0), a
    /// service law's parameter under another law.
    /// What a simulator does not read is [`Scenario::unread_in`]'s.
    ///
    /// ```
    /// use safegate_sim::Scenario;
    ///
    /// let s = Scenario::from_toml("", "t").unwrap();
    /// assert!(s.unread("health.start").unwrap().contains("health.kind = \"dip\""));
    /// assert_eq!(s.unread("health.low"), None);
    /// ```
    pub fn unread(&self, key: &str) -> Option<String> {
        let h = &self.health;
        let kind = health_kind(h.kind);
        let only = |key_needed: &str, value: &str, now: &str| {
            Some(format!("read only with {key_needed} = \"{value}\"; this scenario's is \"{now}\""))
        };
        match key {
            "health.start" if h.kind != HealthKind::Dip => only("health.kind", "dip", kind),
            "health.file" if h.kind != HealthKind::Trace => only("health.kind", "trace", kind),
            "health.high" if h.kind == HealthKind::Trace => {
                Some("not read with health.kind = \"trace\" (the trace file gives the health)".into())
            }
            "health.low" | "health.hold_high" | "health.ramp_down" | "health.hold_low" | "health.ramp_up"
                if matches!(h.kind, HealthKind::Constant | HealthKind::Trace) =>
            {
                Some(format!(
                    "the dip's shape, read only with health.kind = \"cycle\" or \"dip\"; this scenario's is \"{kind}\""
                ))
            }
            "health.noise_period" if h.noise == 0.0 => {
                Some("read only when health.noise is above 0; this scenario has no noise".into())
            }
            "retries.probability" | "retries.path" if self.retries.kind == RetryKind::Off => Some(
                "read only when retries.kind is \"constant\" or \"health\"; this scenario's retries are \"off\"".into(),
            ),
            "retries.kind" | "retries.path"
                if self.retries.kind != RetryKind::Off && self.retries.probability == 0.0 =>
            {
                Some("retries.probability is 0, so no request is retried (set it too)".into())
            }
            "service.shape" if self.service.distribution != LawKind::Pareto => {
                only("service.distribution", "pareto", law(self.service.distribution))
            }
            "service.sigma" if self.service.distribution != LawKind::Lognormal => {
                only("service.distribution", "lognormal", law(self.service.distribution))
            }
            _ => None,
        }
    }

    /// [`Scenario::unread`], and what a run in `mode` does not read: the fluid and stepped
    /// simulators draw no service times (`service.*`).
    pub fn unread_in(&self, key: &str, mode: Mode) -> Option<String> {
        if let Some(why) = self.unread(key) {
            return Some(why);
        }
        if key == "postgres" || key.starts_with("postgres.") {
            return Some("read only by `safegate live` (the simulator runs the [model] curve)".into());
        }
        if (key == "service" || key.starts_with("service.")) && mode != Mode::Stochastic {
            return Some(format!(
                "the {mode} simulator draws no service times (read only with run.mode = \"stochastic\")"
            ));
        }
        None
    }

    /// [`Scenario::unread`], and what the live system does not read: with a `[postgres]`
    /// downstream the database serves at its own rate, so the health and the service law
    /// (the emulator's) are not read.
    fn unread_live(&self, key: &str) -> Option<String> {
        let emulator_only = ["health", "service"].iter().any(|t| key == *t || key.starts_with(&format!("{t}.")));
        if emulator_only && self.postgres.is_some() {
            return Some(
                "the [postgres] downstream serves at the database's own rate (health and service \
                         are the emulator's)"
                    .into(),
            );
        }
        self.unread(key)
    }

    /// The keys of `overrides` (`key = value`, as [`Scenario::from_toml_with`] takes them)
    /// that no run of this scenario reads, each with why: [`Scenario::unread_in`] `mode`
    /// (a simulation in `run.mode`, as `safegate run` plays it), or [`Scenario::unread`]
    /// with no mode (`safegate live`, whose downstream serves by the service law whatever
    /// the mode). A table's override is each value inside it.
    ///
    /// ```
    /// use safegate_sim::Scenario;
    ///
    /// let over = [("health.start".to_string(), "30".to_string())];
    /// let s = Scenario::from_toml_with("", "t", &over).unwrap();
    /// let unread = s.unread_overrides(&over, Some(s.run.mode));
    /// assert_eq!(unread[0].key, "health.start");
    /// ```
    pub fn unread_overrides(&self, overrides: &[(String, String)], mode: Option<Mode>) -> Vec<Unread> {
        let mut out: Vec<Unread> = Vec::new();
        for (key, raw) in overrides {
            for leaf in safegate_core::config_file::override_leaves(key, raw) {
                let why = match mode {
                    Some(m) => self.unread_in(&leaf, m),
                    None => self.unread_live(&leaf),
                };
                if let Some(why) = why {
                    if !out.iter().any(|u| u.key == leaf) {
                        out.push(Unread { key: leaf, why });
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml(text, "t").unwrap()
    }

    #[test]
    fn keys_read_only_with_another_are_named_with_it() {
        let cycle = scenario("");
        for key in ["health.start", "health.file", "health.noise_period", "retries.probability", "retries.path"] {
            assert!(cycle.unread(key).is_some(), "{key}");
        }
        for key in ["health.low", "health.high", "health.kind", "model.rate", "traffic.rate", "gate.threshold"] {
            assert_eq!(cycle.unread(key), None, "{key}");
        }
        assert!(cycle.unread("health.start").unwrap().contains("this scenario's is \"cycle\""));
        let dip = scenario("[health]\nkind = \"dip\"\nnoise = 0.1\n[retries]\nkind = \"constant\"\nprobability = 0.1");
        for key in ["health.start", "health.noise_period", "retries.probability", "retries.path", "health.low"] {
            assert_eq!(dip.unread(key), None, "{key}");
        }
        // Retries on with probability 0 retry nothing.
        let zero = scenario("[retries]\nkind = \"health\"");
        assert!(zero.unread("retries.kind").unwrap().contains("retries.probability is 0"));
        let constant = scenario("[health]\nkind = \"constant\"");
        assert_eq!(constant.unread("health.high"), None);
        assert!(constant.unread("health.low").unwrap().contains("\"cycle\" or \"dip\""));
        let pareto = scenario("[service]\ndistribution = \"pareto\"");
        assert_eq!(pareto.unread("service.shape"), None);
        assert!(pareto.unread("service.sigma").unwrap().contains("lognormal"));
        // The fluid and stepped simulators draw no service times.
        assert!(pareto.unread_in("service.shape", Mode::Fluid).unwrap().contains("fluid simulator"));
        assert_eq!(pareto.unread_in("service.shape", Mode::Stochastic), None);
    }

    #[test]
    fn a_postgres_table_is_the_live_systems_alone() {
        let pg = scenario("[postgres]\nrows = 16\nisolation = \"read-committed\"");
        let section = pg.postgres.clone().expect("the table");
        assert_eq!((section.rows, section.pool, section.isolation.name()), (16, 64, "read-committed"));
        let ov = |k: &str| vec![(k.to_string(), "1".to_string())];
        // The simulator does not read it.
        assert!(pg.unread_overrides(&ov("postgres.rows"), Some(Mode::Stochastic))[0].why.contains("safegate live"));
        // The live system reads it, and not the emulator's health or service law.
        assert!(pg.unread_overrides(&ov("postgres.rows"), None).is_empty());
        assert!(pg.unread_overrides(&ov("health.low"), None)[0].why.contains("[postgres]"));
        assert!(scenario("").unread_overrides(&ov("health.low"), None).is_empty());
        // Its ranges are checked with the scenario's, named by their path.
        let e = scenario("[postgres]\nretries = 101").config("t").unwrap_err().to_string();
        assert!(e.contains("postgres.retries"), "{e}");
        assert!(Scenario::from_toml("[postgres]\nisolation = \"snapshot\"", "t").is_err());
        assert!(Scenario::from_toml("[postgres]\nhost = \"x\"", "t").is_err());
    }

    #[test]
    fn overrides_are_judged_on_the_scenario_they_make() {
        let ov = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let o = ov(&[("health.start", "30")]);
        let s = Scenario::from_toml_with("", "t", &o).unwrap();
        let unread = s.unread_overrides(&o, Some(Mode::Fluid));
        assert_eq!(unread.len(), 1);
        assert_eq!(unread[0].key, "health.start");
        // With the kind that reads it, in the same overrides: read.
        let o = ov(&[("health.start", "30"), ("health.kind", "dip")]);
        assert!(Scenario::from_toml_with("", "t", &o).unwrap().unread_overrides(&o, Some(Mode::Fluid)).is_empty());
        // A table's values each.
        let o = ov(&[("retries", "{ probability = 0.1, path = \"gate\" }")]);
        let keys: Vec<String> = Scenario::from_toml_with("", "t", &o)
            .unwrap()
            .unread_overrides(&o, None)
            .into_iter()
            .map(|u| u.key)
            .collect();
        assert_eq!(keys, ["retries.path", "retries.probability"]);
        // The service law: unread by a fluid run, read by a stochastic one (and by live).
        let o = ov(&[("service.distribution", "pareto")]);
        let s = Scenario::from_toml_with("", "t", &o).unwrap();
        assert_eq!(s.unread_overrides(&o, Some(Mode::Fluid)).len(), 1);
        assert!(s.unread_overrides(&o, Some(Mode::Stochastic)).is_empty());
        assert!(s.unread_overrides(&o, None).is_empty());
    }
}
